# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long the planner takes for a large cluster: prints measured figures, asserts nothing.

Default: 128 Atlas 800I A3 nodes x 16 devices, half prefill (DP128/TP8), half decode
(DP512/TP2) with per-rank HCCL ranges and a Mooncake KV pool (2048 workers: more than one Memcache
pool may hold): 640 ranks, 640 processes.
Run after `. scripts/env.sh`.
"""

import argparse
import statistics
import time

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def big_cluster(nodes, devices):
    half = nodes // 2
    cluster = {
        "name": "bench", "hardware": "a3", "devices_per_node": devices, "connector": "mooncake",
        "network_env": ["HCCL_IF_IP", "GLOO_SOCKET_IFNAME", "VLLM_HOST_IP"],
        "pool": {"backend": "mooncake",
                 "segment_sizes": {"prefill": "8GB", "decode": "0"}},
        "groups": {}, "nodes": [],
    }
    roles = (("prefill", half, 8, 40000, 9000, 37000), ("decode", nodes - half, 2, 42000, 9900, 38000))
    for role, count, tp, kv_port, api, lookup in roles:
        local = devices // tp
        cluster["groups"][role] = {
            "dp_size": count * local, "tp_size": tp, "kv_port": kv_port, "api_port": api,
            "lookup_rpc_port_base": lookup, "engine_id_template": role + "-dp{dp_rank}",
            "hccl_port_range": {"base": 50000, "stride": 10, "size": 10} if role == "decode" else None,
        }
        for i in range(count):
            cluster["nodes"].append({
                "host": "%s%03d" % (role, i), "address": "198.18.%d.%d" % (i // 250 + (0 if role == "prefill" else 100), i % 250 + 1),
                "nic": "eth0", "role": role, "local_ranks": local, "rank_start": i * local, "pythonhashseed": "0",
                "tenant_id": "default",
            })
    return cluster


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=128)
    parser.add_argument("--devices", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    cluster = big_cluster(args.nodes, args.devices)
    times = []
    for _run in range(args.repeat):
        start = time.perf_counter()
        plan = plan_cluster(cluster)
        times.append(time.perf_counter() - start)
    print("planner: %d nodes x %d devices -> %d ranks, %d processes, %d port ranges"
          % (args.nodes, args.devices, len(plan["ranks"]), len(plan["processes"]),
             sum(len(p) for p in plan["ports"].values())))
    print("seconds per plan over %d runs: median %.3f, min %.3f, max %.3f"
          % (args.repeat, statistics.median(times), min(times), max(times)))


if __name__ == "__main__":
    main()
