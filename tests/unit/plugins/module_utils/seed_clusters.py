# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planner inputs transcribed from the seeds' launcher arguments and node scripts.

Only what the operator types goes here (sizes, base ports, rank starts); what the seeds
compute from it (per-rank ports, devices, ranges, ids) is asserted in the tests.
"""

from __future__ import annotations

import copy
import pathlib

import yaml

# What the vllm_engine role hands engine_specs for a headless rank's readiness: its default, read from its one home.
HEADLESS_READY_LOG = yaml.safe_load((pathlib.Path(__file__).resolve().parents[4] / "roles" / "vllm_engine" / "defaults" / "main.yml")
                                    .read_text())["vllm_engine_headless_ready_log"]
NIC_AND_IP_ENV = ["HCCL_IF_IP", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME"]
PD_TOPOLOGY = {"prefill": {"dp_size": 2, "tp_size": 8}, "decode": {"dp_size": 8, "tp_size": 2}}

UCM_CONFIG = {
    "ucm_connectors": [{
        "ucm_connector_name": "UcmPipelineStore",
        "ucm_connector_config": {
            "store_pipeline": "Cache|Posix", "storage_backends": "/data/ucm/cache", "io_direct": False,
            "cache_buffer_capacity_gb": 64, "posix_capacity_gb": 0, "use_gdr": False,
        },
    }],
    "enable_event_sync": True, "use_layerwise": True, "enable_record_traces": False, "use_lite": False,
    "persist_token_threshold": 0,
}


def _single(name, hardware, tp, port, connector="none"):
    cluster = {
        "name": name, "hardware": hardware, "connector": connector,
        "groups": {"colocated": {"dp_size": 1, "tp_size": tp, "launch": "per_node", "api_port": port}},
        "nodes": [{"host": name + "_node", "address": "192.0.2.10", "role": "colocated", "local_ranks": 1}],
    }
    if connector == "ucm":
        cluster["ucm"] = {"config_file": "/workspace/ucm_config_example.yaml", "config": copy.deepcopy(UCM_CONFIG)}
    return cluster


def ucm_a2():
    """000 route 1: GLM-4.7 on Atlas 800 A2, TP8, port 7800."""
    return _single("ucm_a2", "a2", 8, 7800, "ucm")


def ucm_h100():
    """000 route 2: GLM-4.7-FP8 on H100, TP8, port 7800."""
    return _single("ucm_h100", "h100", 8, 7800, "ucm")


def single_a5():
    """004 5.1: 950DT, TP8, port 8000; the script sets no ASCEND_RT_VISIBLE_DEVICES."""
    cluster = _single("single_a5", "a5", 8, 8000)
    cluster["groups"]["colocated"]["set_visible_devices"] = False
    return cluster


def single_a3():
    """004 5.1: Atlas 800I A3, TP16, port 8000; the script sets no ASCEND_RT_VISIBLE_DEVICES."""
    cluster = _single("single_a3", "a3", 16, 8000)
    cluster["groups"]["colocated"]["set_visible_devices"] = False
    return cluster


def dp_a2():
    """004 5.2: DP2 over two A2 nodes, one local rank each, node 1 headless."""
    return {
        "name": "dp_a2", "hardware": "a2", "connector": "none", "network_env": NIC_AND_IP_ENV,
        "groups": {"colocated": {"dp_size": 2, "tp_size": 8, "launch": "per_node", "dp_rpc_port": 12321, "api_port": 8000}},
        "nodes": [
            {"host": "dp_a2_node0", "address": "192.0.2.21", "nic": "eth0", "role": "colocated", "local_ranks": 1,
             "rank_start": 0, "api_server_count": 1},
            {"host": "dp_a2_node1", "address": "192.0.2.22", "nic": "eth0", "role": "colocated", "local_ranks": 1,
             "rank_start": 1, "headless": True},
        ],
    }


def pd_a3():
    """004 5.3 A3: P DP2/TP8 and D DP8/TP2, one 16-device node each, launcher defaults."""
    return {
        "name": "pd_a3", "hardware": "a3", "connector": "mooncake", "network_env": NIC_AND_IP_ENV,
        "groups": {
            "prefill": {"dp_size": 2, "tp_size": 8, "kv_port": 36680, "api_port": 9081},
            "decode": {"dp_size": 8, "tp_size": 2, "kv_port": 36580, "api_port": 9900},
        },
        "nodes": [
            {"host": "pd_a3_prefill", "address": "192.0.2.31", "nic": "eth0", "role": "prefill", "local_ranks": 2},
            {"host": "pd_a3_decode", "address": "192.0.2.32", "nic": "eth0", "role": "decode", "local_ranks": 8},
        ],
        "services": [{"name": "pd_proxy", "host": "pd_a3_prefill", "ports": [8081]}],
    }


def pd_a2():
    """004 5.3 A2: P0/P1 one rank each (P1 headless), D0/D1 four ranks each, HCCL ranges on decode."""
    return {
        "name": "pd_a2", "hardware": "a2", "connector": "mooncake", "network_env": NIC_AND_IP_ENV + ["VLLM_HOST_IP"],
        "mooncake_extra_config": {"use_ascend_direct": True, **copy.deepcopy(PD_TOPOLOGY)},
        "groups": {
            "prefill": {"dp_size": 2, "tp_size": 8, "dp_rpc_port": 12321, "kv_port": 30000, "api_port": 9081},
            "decode": {"dp_size": 8, "tp_size": 2, "kv_port": 30100, "api_port": 9900,
                       "hccl_port_range": {"base": 60000, "stride": 100, "size": 100}},
        },
        "nodes": [
            {"host": "pd_a2_p0", "address": "192.0.2.41", "nic": "eth0", "role": "prefill", "local_ranks": 1,
             "rank_start": 0, "api_server_count": 1},
            {"host": "pd_a2_p1", "address": "192.0.2.42", "nic": "eth0", "role": "prefill", "local_ranks": 1,
             "rank_start": 1, "api_port": 9082, "headless": True},
            {"host": "pd_a2_d0", "address": "192.0.2.43", "nic": "eth0", "role": "decode", "local_ranks": 4, "rank_start": 0},
            {"host": "pd_a2_d1", "address": "192.0.2.44", "nic": "eth0", "role": "decode", "local_ranks": 4, "rank_start": 4},
        ],
        "services": [{"name": "pd_proxy", "host": "pd_a2_p0", "ports": [8081]}],
    }


def pd_pool_a3():
    """004 5.4 A3: pd_a3 plus MultiConnector with AscendStoreConnector on Memcache."""
    cluster = pd_a3()
    cluster["name"] = "pd_pool_a3"
    for node in cluster["nodes"]:
        node["pythonhashseed"] = "0"
    cluster["pool"] = {"backend": "memcache", "use_layerwise": False, "hybrid_model": True, "world_size": 256,
                       "sizes": {"memcache_pool_dram_size": "20GB", "memcache_pool_max_dram_size": "1024GB"}}
    groups = cluster["groups"]
    groups["prefill"].update(engine_id_template="glm53-flash-prefill-dp{dp_rank}", lookup_rpc_port_base=37000)
    groups["decode"].update(engine_id_template="glm53-flash-decode-dp{dp_rank}", lookup_rpc_port_base=37100)
    cluster["services"].append({"name": "memcache_meta", "host": "pd_a3_prefill", "ports": [5000, 6000, 8000]})
    return cluster


def pd_pool_a2():
    """004 5.4 A2: pd_a2 plus MultiConnector with AscendStoreConnector on a Mooncake master."""
    cluster = pd_a2()
    cluster["name"] = "pd_pool_a2"
    for node in cluster["nodes"]:
        node.update(pythonhashseed="0", tenant_id="default")
    cluster["pool"] = {"backend": "mooncake", "use_layerwise": False, "hybrid_model": True,
                       "segment_sizes": {"prefill": "8GB", "decode": "0"}}
    groups = cluster["groups"]
    groups["prefill"].update(engine_id_template="glm53-flash-prefill-dp{dp_rank}", lookup_rpc_port_base=37000)
    groups["decode"].update(engine_id_template="glm53-flash-decode-dp{dp_rank}", lookup_rpc_port_base=37100)
    cluster["services"].append({"name": "mooncake_master", "host": "pd_a2_p0", "ports": [50088, 9003]})
    return cluster


ALL = {f.__name__: f for f in (ucm_a2, ucm_h100, single_a5, single_a3, dp_a2, pd_a3, pd_a2, pd_pool_a3, pd_pool_a2)}
