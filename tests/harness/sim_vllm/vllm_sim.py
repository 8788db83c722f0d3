# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A SIMULATED vLLM engine for the test harness. Not part of the product, never shipped.

Installed as `vllm` in the test engine image, it stands in for vLLM / vLLM-Ascend where no NPU or
GPU exists, and is as strict as the real one where we can know it:

- `vllm serve MODEL ...` accepts the flags the seeds use (and the vLLM ones around them); an
  unknown flag or malformed JSON value exits with code 2, like vLLM's argument parser.
- It checks --kv-transfer-config (connector names, roles, ports), that the visible devices exist
  and number tp x local ranks, that UCM_CONFIG_FILE / MOONCAKE_CONFIG_PATH / MMC_LOCAL_CONFIG_PATH
  exist and parse, and that the pool service they name answers.
- Data parallel for real: the process holding DP rank 0 listens on --data-parallel-address:
  --data-parallel-rpc-port, the others connect; nobody serves until all ranks joined.
- OpenAI API on API ranks (/health, /v1/models, /v1/completions, /v1/chat/completions, /metrics);
  the PD handoff the proxy drives (prefill answers do_remote_decode with kv_transfer_params naming
  its engine id, VLLM_HOST_IP and Mooncake port; decode refuses requests without them and connects
  to that host:port before answering).
- Prefix reuse with vLLM's metric names: repeated 128-token blocks are vllm:prefix_cache_hits;
  with a KV connector, blocks beyond them found in its store (the UCM storage directory, kept
  across restarts; the KV pool, through the real Mooncake store) and the KV a decode takes from its prefill are
  vllm:external_prefix_cache_hits (and ucm: counters with UCM).
- VLLM_SIM_START_DELAY (seconds) is the engine's start time, counted from its process's start (its own imports
  included, as a real engine's are), to measure start order and time to serve: on a busy harness, twelve simulated
  ranks importing at once would otherwise add their imports (up to 0.7 s) to every start time.
"""

from __future__ import annotations

import os
import pathlib
import socketserver
import sys
import time

from sim_checks import check_kv_config, visible_devices
from sim_cli import READY_LINE, SERVING_LINE, die, log, parser
from sim_dp import DataParallelGroup
from sim_engine import Engine
from sim_http import http_handler, side_channel


def process_age():
    """Seconds since this process started (/proc/self/stat's start time against /proc/uptime)."""
    with open("/proc/self/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    with open("/proc/uptime", encoding="ascii") as uptime:
        since_boot = float(uptime.read().split()[0])
    return max(0.0, since_boot - int(fields[19]) / os.sysconf("SC_CLK_TCK"))


def serve(argv):
    args = parser().parse_args(argv)
    start = time.monotonic() - process_age()
    delay = float(os.environ.get("VLLM_SIM_START_DELAY", "0"))
    model = pathlib.Path(args.model)
    if args.model.startswith("/") and not (model / "config.json").is_file():
        die("model path %s has no config.json" % args.model)
    dp = args.data_parallel_size
    if args.data_parallel_rank is not None:
        ranks = [args.data_parallel_rank]
        if args.data_parallel_size_local is not None or args.data_parallel_start_rank is not None:
            die("--data-parallel-rank excludes --data-parallel-size-local / --data-parallel-start-rank")
    else:
        local = args.data_parallel_size_local if args.data_parallel_size_local is not None else dp
        first = args.data_parallel_start_rank or 0
        ranks = list(range(first, first + local))
    if any(r >= dp or r < 0 for r in ranks):
        die("DP ranks %s are outside 0..%d" % (ranks, dp - 1))
    if args.headless and 0 in ranks and args.data_parallel_rank is None:
        die("--headless cannot run DP rank 0: it holds the API server")
    if dp > 1 and (not args.data_parallel_address or not args.data_parallel_rpc_port):
        die("--data-parallel-size %d needs --data-parallel-address and --data-parallel-rpc-port" % dp)
    devices = visible_devices(args.tensor_parallel_size, len(ranks))
    # Hold the devices open as the real engine does, so the node's (simulated) npu-smi sees who uses them.
    held = [open(pathlib.Path(os.environ.get("VLLM_SIM_DEV_DIR", "/dev")) / ("davinci%d" % d), "rb")  # noqa: SIM115
            for d in devices if isinstance(d, int)]
    kv = check_kv_config(args.kv_transfer_config, ranks[0], args.tensor_parallel_size) if args.kv_transfer_config else None
    log("vllm serve %s: DP ranks %s of %d, TP %d, devices %s, kv %s" % (args.model, ranks, dp, args.tensor_parallel_size,
                                                                        devices, args.kv_transfer_config))
    if delay:
        time.sleep(max(0.0, delay - (time.monotonic() - start)))
    engine = Engine(args, kv, devices)
    engine.held = held
    if engine.side_channel and kv["role"] == "kv_producer":
        side_channel(engine.side_channel)
    DataParallelGroup(dp, ranks, args.data_parallel_address, args.data_parallel_rpc_port).join()
    log(READY_LINE % (time.monotonic() - start))
    if args.headless:
        while True:
            time.sleep(3600)
    server = socketserver.ThreadingTCPServer((args.host or "0.0.0.0", args.port), http_handler(engine), bind_and_activate=False)
    server.allow_reuse_address = True
    server.daemon_threads = True
    server.server_bind()
    server.server_activate()
    log(SERVING_LINE % (args.host or "0.0.0.0", args.port))
    server.serve_forever()


def main():
    if len(sys.argv) < 2 or sys.argv[1] != "serve":
        print("usage: vllm serve MODEL [options]  (simulated engine for tests)", file=sys.stderr)
        sys.exit(2)
    serve(sys.argv[2:])


if __name__ == "__main__":
    main()
