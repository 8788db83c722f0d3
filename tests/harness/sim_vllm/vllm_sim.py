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
- VLLM_SIM_START_DELAY (seconds) delays start-up, to measure start order and time to serve.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import os
import pathlib
import re
import socket
import socketserver
import sys
import threading
import time
import uuid

import yaml

KNOWN_CONNECTORS = {"UCMConnector", "MooncakeConnectorV2", "MooncakeConnector", "MultiConnector", "AscendStoreConnector"}
KV_ROLES = {"kv_producer", "kv_consumer", "kv_both"}
UCM_PIPELINES = {"Cache|Posix", "Cache|Compress|Posix", "Cache|Empty", "Cache|Fake", "Empty", "Fake", "Mooncake",
                 "Mooncake|Posix", "Dram"}
# What vLLM 0.32 logs (seen with the harness's real engine): the engine core is ready, then the API server.
READY_LINE = "init engine (profile, create kv cache, warmup model) took %.2f s"
SERVING_LINE = "Starting vLLM server on http://%s:%d"


def log(message):
    print("(SimEngine pid=%d) %s" % (os.getpid(), message), flush=True)


def die(message):
    print("ERROR: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def json_arg(text):
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError("not valid JSON: %s" % err)
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def parser():
    p = argparse.ArgumentParser(prog="vllm", allow_abbrev=False)
    p.add_argument("model")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--headless", action="store_true")
    p.add_argument("--api-key", nargs="+", default=None)
    p.add_argument("--api-server-count", type=int, default=1)
    p.add_argument("--data-parallel-size", type=int, default=1)
    p.add_argument("--data-parallel-size-local", type=int, default=None)
    p.add_argument("--data-parallel-start-rank", type=int, default=None)
    p.add_argument("--data-parallel-rank", type=int, default=None)
    p.add_argument("--data-parallel-address", default=None)
    p.add_argument("--data-parallel-rpc-port", type=int, default=None)
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    for flag in ("--enable-expert-parallel", "--async-scheduling", "--trust-remote-code", "--enable-prefix-caching",
                 "--enable-auto-tool-choice", "--enforce-eager", "--enable-chunked-prefill", "--skip-mm-profiling"):
        p.add_argument(flag, action="store_true")
    p.add_argument("--seed", type=int)
    p.add_argument("--served-model-name")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--block-size", type=int, default=128)
    p.add_argument("--dtype", choices=["auto", "half", "float16", "bfloat16", "float", "float32"], default="auto")
    p.add_argument("--quantization", choices=["ascend", "fp8", "awq", "gptq"])
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--kv-cache-dtype", choices=["auto", "int8", "fp8", "bfloat16"])
    p.add_argument("--safetensors-load-strategy", choices=["lazy", "eager", "prefetch"])
    p.add_argument("--tool-call-parser")
    p.add_argument("--reasoning-parser")
    p.add_argument("--prefix-cache-retention-interval")
    for flag in ("--speculative-config", "--compilation-config", "--additional-config", "--kv-transfer-config",
                 "--limit-mm-per-prompt"):
        p.add_argument(flag, type=json_arg)
    return p


def visible_devices(tp, local_ranks):
    """The accelerators this engine may use: NPUs (/dev/davinciN, narrowed by ASCEND_RT_VISIBLE_DEVICES),
    or on a GPU host the GPUs Docker's nvidia driver granted (NVIDIA_VISIBLE_DEVICES, from --gpus)."""
    need = tp * local_ranks
    granted = os.environ.get("NVIDIA_VISIBLE_DEVICES")
    if granted is not None:
        gpus = [] if granted in ("", "void", "none") else granted.split(",")
        if "all" in gpus or len(gpus) != need:
            die("tensor-parallel-size %d x %d local DP ranks needs %d GPUs, the container was granted %r"
                % (tp, local_ranks, need, granted))
        return gpus
    dev = pathlib.Path(os.environ.get("VLLM_SIM_DEV_DIR", "/dev"))  # tests of the simulator itself point it elsewhere
    present = sorted(int(m.group(1)) for m in (re.fullmatch(r"davinci(\d+)", p.name) for p in dev.iterdir()) if m)
    if not present:
        die("No accelerator: no /dev/davinci* and no GPU granted (RuntimeError: No CUDA GPUs are available)")
    wanted = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    devices = [int(d) for d in wanted.split(",")] if wanted else present
    missing = [d for d in devices if d not in present]
    if missing:
        die("ASCEND_RT_VISIBLE_DEVICES names devices %s that do not exist (have /dev/davinci%s)" % (missing, present))
    if len(devices) < need or (wanted and len(devices) != need):
        die("tensor-parallel-size %d x %d local DP ranks needs %d visible devices, got %s" % (tp, local_ranks, need, devices))
    return devices


def check_reachable(address, what):
    host, port = address.rsplit(":", 1)
    for _attempt in range(30):
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            return
        except OSError:
            time.sleep(1)
    die("%s %s is not reachable" % (what, address))


def check_kv_config(config, dp_rank, tp):
    """Validate the connector tree; return (role, engine_id, mooncake kv_port, ucm config, pool backend)."""
    info = {"role": None, "engine_id": config.get("engine_id"), "kv_port": None, "ucm": None, "pool": None}

    def visit(node, where):
        name = node.get("kv_connector")
        if name not in KNOWN_CONNECTORS:
            die("%s: unknown kv_connector %r" % (where, name))
        role = node.get("kv_role")
        if role not in KV_ROLES:
            die("%s: kv_role must be one of %s, got %r" % (where, sorted(KV_ROLES), role))
        info["role"] = info["role"] or role
        if role != info["role"]:
            die("%s: kv_role %s differs from the parent's %s" % (where, role, info["role"]))
        extra = node.get("kv_connector_extra_config") or {}
        if name == "MultiConnector":
            children = extra.get("connectors")
            if not isinstance(children, list) or not children:
                die("%s: MultiConnector needs kv_connector_extra_config.connectors" % where)
            for i, child in enumerate(children):
                visit(child, "%s.connectors[%d]" % (where, i))
        elif name.startswith("MooncakeConnector"):
            if not str(node.get("kv_port", "")).isdigit():
                die("%s: kv_port must be a port number, got %r" % (where, node.get("kv_port")))
            info["kv_port"] = int(node["kv_port"])
            path = os.environ.get("MOONCAKE_CONFIG_PATH")
            if path:
                mooncake = json.loads(pathlib.Path(path).read_text())
                check_reachable(mooncake["master_server_address"], "Mooncake master")
        elif name == "AscendStoreConnector":
            if not isinstance(extra.get("lookup_rpc_port"), int):
                die("%s: AscendStoreConnector needs an integer lookup_rpc_port" % where)
            backend = extra.get("backend")
            info["pool"] = {"backend": backend, "lookup_rpc_port": extra["lookup_rpc_port"],
                            "consumer_is_to_load": bool(extra.get("consumer_is_to_load")),
                            "consumer_is_to_put": bool(extra.get("consumer_is_to_put"))}
            if backend == "mooncake" and not os.environ.get("MOONCAKE_CONFIG_PATH"):
                die("%s: backend mooncake needs MOONCAKE_CONFIG_PATH" % where)
            if backend == "memcache":
                info["mmc"] = check_memcache()
        elif name == "UCMConnector":
            if node.get("kv_connector_module_path") != "ucm.integration.vllm.ucm_connector":
                die("%s: UCMConnector needs kv_connector_module_path ucm.integration.vllm.ucm_connector" % where)
            info["ucm"] = check_ucm(extra.get("UCM_CONFIG_FILE"))

    visit(config, "--kv-transfer-config")
    return info


def check_memcache():
    path = os.environ.get("MMC_LOCAL_CONFIG_PATH")
    if not path or not pathlib.Path(path).is_file():
        die("backend memcache needs MMC_LOCAL_CONFIG_PATH naming mmc-local.conf, got %r" % path)
    conf = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            conf[key.strip()] = value.strip()
    url = conf.get("ock.mmc.meta_service_url", "")
    if not url.startswith("tcp://"):
        die("mmc-local.conf: ock.mmc.meta_service_url must be tcp://HOST:PORT, got %r" % url)
    check_reachable(url[len("tcp://"):], "Memcache MetaService")
    return conf


def check_ucm(path):
    if not path or not pathlib.Path(path).is_file():
        die("UCM_CONFIG_FILE %r does not exist" % path)
    config = yaml.safe_load(pathlib.Path(path).read_text())
    store = config["ucm_connectors"][0]
    store_config = store["ucm_connector_config"]
    if store["ucm_connector_name"] == "UcmPipelineStore" and store_config.get("store_pipeline") not in UCM_PIPELINES:
        die("UCM: unknown store_pipeline %r" % store_config.get("store_pipeline"))
    backends = [pathlib.Path(p) for p in str(store_config.get("storage_backends", "")).split(":") if p]
    if not backends or not all(p.is_dir() for p in backends):
        die("UCM: storage_backends %r must be existing directories" % store_config.get("storage_backends"))
    log("create UcmPipelineStore with config: %s" % json.dumps(store_config))
    return {"backends": backends}


class DataParallelGroup:
    """Rank 0 gathers every rank over TCP; the group is ready when ranks 0..dp_size-1 all joined."""

    def __init__(self, size, ranks, address, port):
        self.size, self.ranks, self.address, self.port = size, ranks, address, port

    def join(self):
        if self.size == 1:
            return
        if 0 in self.ranks:
            self._lead()
        else:
            self._follow()

    def _lead(self):
        server = socket.create_server((self.address, self.port), reuse_port=False)
        log("DP coordinator listening on %s:%d for %d ranks" % (self.address, self.port, self.size))
        joined, peers = set(self.ranks), []
        while len(joined) < self.size:
            conn, peer = server.accept()
            ranks = json.loads(conn.makefile().readline())["ranks"]
            clash = joined.intersection(ranks)
            if clash:
                conn.sendall(b'{"error": "ranks %s joined twice"}\n' % str(sorted(clash)).encode())
                die("DP ranks %s joined twice (from %s)" % (sorted(clash), peer[0]))
            joined.update(ranks)
            peers.append(conn)
            log("DP ranks %s joined from %s (%d/%d)" % (ranks, peer[0], len(joined), self.size))
        for conn in peers:
            conn.sendall(b'{"ready": true}\n')
        self._keep(server, peers)

    def _follow(self):
        # Like vLLM's ZMQ sockets, a follower reconnects until the coordinator answers: a connection
        # reset while the coordinator starts (or restarts) is not an answer.
        while True:
            try:
                conn = socket.create_connection((self.address, self.port), timeout=5)
                conn.settimeout(None)
                conn.sendall((json.dumps({"ranks": self.ranks}) + "\n").encode())
                line = conn.makefile().readline()
            except OSError:
                log("waiting for the DP coordinator at %s:%d" % (self.address, self.port))
                time.sleep(2)
                continue
            if line:
                break
            log("the DP coordinator at %s:%d closed the connection; joining again" % (self.address, self.port))
            conn.close()
            time.sleep(1)
        answer = json.loads(line)
        if not answer.get("ready"):
            die("DP coordinator refused ranks %s: %s" % (self.ranks, answer))
        self._keep(None, [conn])

    @staticmethod
    def _keep(server, conns):
        DataParallelGroup.held = (server, conns)  # keep sockets open for the life of the process


SIZE_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}
SIM_SEGMENT_CAP = 64 << 20  # the simulated engine's blocks are a few bytes: it mounts at most this much of its segment


def size_bytes(text):
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?B?)\s*", str(text).upper())
    if not match:
        die("mooncake.json: global_segment_size %r is not a size" % text)
    unit = match.group(2)
    return int(match.group(1)) * SIZE_UNITS[unit if unit in ("", "B") or unit.endswith("B") else unit + "B"]


class MooncakePool:
    """The KV pool through the real Mooncake store (the client of the mooncake wheel): a block one engine
    puts is found by every other engine that asks the same master. The store runs over TCP here: the
    seeds' protocol (ascend) needs NPUs; the master, its allocation and lookups are the real ones."""

    def __init__(self, config_path, host_ip, rpc_port, model):
        from mooncake.store import MooncakeDistributedStore  # pylint: disable=import-outside-toplevel
        config = json.loads(pathlib.Path(config_path).read_text())
        segment = min(size_bytes(config.get("global_segment_size", 0)), SIM_SEGMENT_CAP)
        self.store, self.prefix = MooncakeDistributedStore(), hashlib.sha256(model.encode()).hexdigest()[:12]
        # rpc_port: the engine's planned lookup_rpc_port, unique per engine, so engines sharing a host never clash
        code = self.store.setup("%s:%d" % (host_ip, rpc_port), config["metadata_server"], segment, 16 << 20, "tcp", "",
                                config["master_server_address"])
        if code != 0:
            die("Mooncake store: setup against master %s failed (%d)" % (config["master_server_address"], code))
        log("Mooncake store client of master %s (segment %d bytes, protocol tcp for %s)"
            % (config["master_server_address"], segment, config.get("protocol")))

    def has(self, key):
        found = self.store.is_exist(self.prefix + key)
        if found < 0:
            log("Mooncake store: is_exist %s failed (%d)" % (key[:12], found))
        return found == 1

    def put(self, key):
        code = self.store.put(self.prefix + key, key.encode())
        if code != 0:  # -706 (already there: another engine put it) is fine; say the rest
            log("Mooncake store: put %s answered %d" % (key[:12], code))


class EnginePool:
    """A pool this simulator cannot reach (Memcache's client needs the Ascend driver, even over host_tcp):
    blocks are kept for this engine alone, so no hit on another engine is ever claimed."""

    def __init__(self, backend):
        self.keys = set()
        log("KV pool %s: its client needs an NPU; blocks are kept per engine (not shared)" % backend)

    def has(self, key):
        return key in self.keys

    def put(self, key):
        self.keys.add(key)


class Blocks:
    """Prefix blocks: the engine's own prefix cache (memory), then, like vLLM's scheduler, the KV
    connector's store for the blocks beyond the local hits: the UCM storage directory (shared by the
    engines of a host, kept across restarts), or the KV pool (MooncakePool / EnginePool)."""

    def __init__(self, block_size, directory=None, pool=None):
        self.block_size, self.directory, self.seen = block_size, directory, set()
        self.pool = pool
        self.lock = threading.Lock()

    def _external(self, key):
        return (self.directory / key).exists() if self.directory else self.pool.has(key)

    def lookup_and_store(self, prompt):
        """(prompt tokens, local hit tokens, tokens asked of the connector, connector hit tokens)."""
        tokens = prompt.split()
        digest, keys = hashlib.sha256(), []
        for index in range(len(tokens) // self.block_size):
            digest.update(" ".join(tokens[index * self.block_size:(index + 1) * self.block_size]).encode())
            keys.append(digest.hexdigest())
        external = self.directory is not None or self.pool is not None
        with self.lock:
            local = next((i for i, key in enumerate(keys) if key not in self.seen), len(keys))
            remote = 0
            if external:
                remote = next((i for i, key in enumerate(keys[local:]) if not self._external(key)), len(keys) - local)
            for key in keys:
                self.seen.add(key)
                if self.directory:
                    (self.directory / key).touch()
                elif self.pool is not None:
                    self.pool.put(key)
        asked = len(tokens) - local * self.block_size if external else 0
        return len(tokens), local * self.block_size, asked, remote * self.block_size


def kv_pool(kv, host_ip, model):
    """The pool a producer (or a consumer told to load or put) uses; None without one."""
    pool = (kv or {}).get("pool")
    if not pool or not (kv["role"] != "kv_consumer" or pool["consumer_is_to_load"] or pool["consumer_is_to_put"]):
        return None
    if pool["backend"] == "mooncake":
        return MooncakePool(os.environ["MOONCAKE_CONFIG_PATH"], host_ip, pool["lookup_rpc_port"], model)
    return EnginePool(pool["backend"])


class Engine:
    def __init__(self, args, kv, devices):
        self.args, self.kv = args, kv
        self.name = args.served_model_name or args.model
        self.role = kv["role"] if kv else None
        self.dp_rank = args.data_parallel_rank if args.data_parallel_rank is not None else (args.data_parallel_start_rank or 0)
        self.engine_id = (kv or {}).get("engine_id") or str(uuid.uuid4())
        self.host_ip = os.environ.get("VLLM_HOST_IP") or os.environ.get("HCCL_IF_IP") or "127.0.0.1"
        self.side_channel = kv["kv_port"] + self.dp_rank * args.tensor_parallel_size if kv and kv["kv_port"] else None
        ucm = (kv or {}).get("ucm")
        self.blocks = Blocks(args.block_size, ucm["backends"][0] if ucm else None, pool=kv_pool(kv, self.host_ip, self.name))
        self.counters = {"query": 0, "hit": 0, "external_query": 0, "external_hit": 0, "remote_prefill": 0, "requests": 0}
        self.lock = threading.Lock()
        self.devices = devices
        self.running = 0  # requests being answered: vllm:num_requests_running
        # seconds per output token (VLLM_SIM_TOKEN_SECONDS): a long request stays in flight, as a real one does
        self.token_seconds = float(os.environ.get("VLLM_SIM_TOKEN_SECONDS", "0"))

    def metrics(self):
        """vLLM's names and labels (engine: the DP rank; model_name): requests in flight, KV cache usage, the
        prefix cache, the KV connector's share (external), prompt tokens by source, finished requests."""
        labels = 'engine="%d",model_name="%s"' % (self.dp_rank, self.name)
        counters = self.counters
        local = counters["query"] - counters["hit"] - counters["external_hit"]
        # The share of the KV cache in use: the simulator holds no KV blocks of its own, so it reports its share
        # of --max-num-seqs (vLLM's default 256) taken by requests being answered; 0 when idle, as vLLM does.
        kv_usage = min(1.0, self.running / float(self.args.max_num_seqs or 256))
        lines = ["vllm:num_requests_running{%s} %d" % (labels, self.running),
                 "vllm:num_requests_waiting{%s} 0" % labels,
                 "vllm:kv_cache_usage_perc{%s} %s" % (labels, kv_usage),
                 "vllm:prefix_cache_queries_total{%s} %d" % (labels, counters["query"]),
                 "vllm:prefix_cache_hits_total{%s} %d" % (labels, counters["hit"]),
                 "vllm:external_prefix_cache_queries_total{%s} %d" % (labels, counters["external_query"]),
                 "vllm:external_prefix_cache_hits_total{%s} %d" % (labels, counters["external_hit"]),
                 'vllm:prompt_tokens_by_source_total{%s,source="local_compute"} %d' % (labels, max(local, 0)),
                 'vllm:prompt_tokens_by_source_total{%s,source="local_cache_hit"} %d' % (labels, counters["hit"]),
                 'vllm:prompt_tokens_by_source_total{%s,source="external_kv_transfer"} %d' % (labels, counters["external_hit"]),
                 'vllm:request_success_total{%s,finished_reason="length"} %d' % (labels, counters["requests"]),
                 "sim:remote_prefill_requests_total{%s} %d" % (labels, counters["remote_prefill"])]
        if self.kv and self.kv.get("ucm"):
            lines += ["ucm:total_prefix_query_tokens_total{%s} %d" % (labels, counters["external_query"]),
                      "ucm:ucm_hit_tokens_total{%s} %d" % (labels, counters["external_hit"])]
        return "\n".join(lines) + "\n"

    def complete(self, body, chat):
        with self.lock:
            self.running += 1
        try:
            return self._complete(body, chat)
        finally:
            with self.lock:
                self.running -= 1

    def _complete(self, body, chat):
        if body.get("model") not in (self.name, None):
            return 404, {"error": {"message": "The model `%s` does not exist." % body.get("model"), "code": 404}}
        prompt = body["messages"][-1]["content"] if chat else body.get("prompt", "")
        params = body.get("kv_transfer_params") or {}
        fingerprint = "sim-vllm:%s:%s" % (self.role or "single", self.engine_id)
        answer_params = None
        if self.role == "kv_consumer":
            if not params.get("remote_host") or not params.get("remote_port"):
                return 400, {"error": {"message": "decode instance got no kv_transfer_params from a prefill", "code": 400}}
            try:
                socket.create_connection((params["remote_host"], int(params["remote_port"])), timeout=5).close()
            except OSError as err:
                return 500, {"error": {"message": "cannot reach prefill KV at %s:%s: %s"
                                       % (params["remote_host"], params["remote_port"], err), "code": 500}}
            with self.lock:
                self.counters["remote_prefill"] += 1
                # the prompt's KV came from the prefill: the connector's tokens, as vLLM counts them
                self.counters["query"] += len(prompt.split())
                self.counters["external_query"] += len(prompt.split())
                self.counters["external_hit"] += len(prompt.split())
            fingerprint += ":from:%s@%s:%s" % (params.get("remote_engine_id"), params["remote_host"], params["remote_port"])
        else:
            tokens, hits, asked, remote = self.blocks.lookup_and_store(prompt)
            with self.lock:
                self.counters["query"] += tokens
                self.counters["hit"] += hits
                self.counters["external_query"] += asked
                self.counters["external_hit"] += remote
            if hits or remote:
                log("prefix cache hit: %d of %d tokens, %d more from the KV connector" % (hits, tokens, remote))
        if self.role == "kv_producer" and params.get("do_remote_decode"):
            answer_params = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": self.engine_id,
                             "remote_block_ids": list(range(max(1, len(prompt.split()) // self.args.block_size))),
                             "remote_host": self.host_ip, "remote_port": self.side_channel}
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        time.sleep(max_tokens * self.token_seconds)
        text = " ".join("tok%d" % i for i in range(max_tokens))
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": max_tokens,
                 "total_tokens": len(prompt.split()) + max_tokens}
        choice = {"index": 0, "logprobs": None, "finish_reason": "length", "stop_reason": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        answer = {"id": "cmpl-" + uuid.uuid4().hex, "object": "chat.completion" if chat else "text_completion",
                  "created": int(time.time()), "model": self.name, "choices": [choice], "usage": usage,
                  "system_fingerprint": fingerprint, "kv_transfer_params": answer_params}
        with self.lock:
            self.counters["requests"] += 1
        return 200, answer


# vLLM 0.32's AuthenticationMiddleware: these paths need "Authorization: Bearer <one of the keys>"
# (--api-key, else VLLM_API_KEY); /health and /metrics stay open.
GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")


def api_tokens(args):
    return [key for key in (args.api_key or [os.environ.get("VLLM_API_KEY")]) if key]


def http_handler(engine):
    tokens = api_tokens(engine.args)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _refused(self):
            """Answer 401 as vLLM does when a guarded path comes without one of the keys."""
            if not tokens or not self.path.startswith(GUARDED_PREFIX):
                return False
            scheme, token = (self.headers.get("Authorization") or "").partition(" ")[::2]
            if scheme.lower() == "bearer" and token in tokens:
                return False
            self._send(401, {"error": "Unauthorized"})
            return True

        def log_message(self, fmt, *args):
            log("%s %s" % (self.address_string(), fmt % args))

        def _send(self, code, body, content_type="application/json"):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self._refused():
                return
            if self.path == "/health":
                self._send(200, "")
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": engine.name, "object": "model", "owned_by": "vllm", "root": engine.args.model,
                                                            "max_model_len": engine.args.max_model_len}]})
            elif self.path == "/metrics":
                self._send(200, engine.metrics(), "text/plain; version=0.0.4")
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "body is not JSON", "code": 400}})
                return
            if self._refused():
                return
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self._send(404, {"detail": "Not Found"})
                return
            code, answer = engine.complete(body, chat=self.path.endswith("chat/completions"))
            if code == 200 and body.get("stream"):
                chunk = dict(answer)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\ndata: [DONE]\n\n")
                self.close_connection = True
                return
            self._send(code, answer)

    return Handler


def side_channel(port):
    """The Mooncake side channel a decode connects to; accepts and closes connections."""
    server = socket.create_server(("0.0.0.0", port))
    log("Mooncake side channel listening on %d" % port)

    def serve():
        while True:
            conn, _peer = server.accept()
            conn.close()

    threading.Thread(target=serve, daemon=True).start()


def serve(argv):
    args = parser().parse_args(argv)
    start = time.monotonic()
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
        time.sleep(delay)
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
