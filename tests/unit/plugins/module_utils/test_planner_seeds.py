# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every per-rank value the seeds compute by hand, reproduced number for number.

Expected values are copied from the seed text (section named on each test); the JSON
strings are pasted with the seed's own spacing and compared after re-encoding, so key
order counts too.
"""

from __future__ import annotations

import itertools
import json
import os
import sys

import pytest
import seed_clusters as seeds

from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import engine_waves, wave_numbers
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import seed_text as seed  # noqa: E402  pylint: disable=wrong-import-position  # the seeds' lines, verbatim


def _compact(seed_json):
    return json.dumps(json.loads(seed_json), separators=(",", ":"))


def _by_key(plan):
    return {(p["host"], p["key"]): p for p in plan["processes"]}


def _flag(args, name):
    return args[args.index(name) + 1]


def _seed_kv(text, **values):
    """The --kv-transfer-config of a seed line (tests/seed_text.py), expanded like bash, compact."""
    return json.dumps(seed.flags(seed.expand(text, **values))[1]["--kv-transfer-config"], separators=(",", ":"))


LAUNCHER = {str(n): "x" for n in range(1, 8)}  # $1..$7: the kv config does not use them
SEED_UCM_KV = _seed_kv(seed.UCM_A2, MODEL_PATH="m")


def test_000_both_routes_wire_ucm_alike():
    assert _seed_kv(seed.UCM_H100, MODEL_PATH="m") == SEED_UCM_KV


@pytest.mark.parametrize("name,visible_env", [("ucm_a2", {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}), ("ucm_h100", {})])
def test_000_ucm_single_process(name, visible_env):
    plan = plan_cluster(seeds.ALL[name]())
    (process,) = plan["processes"]
    assert process["args"] == ["--host", "0.0.0.0", "--port", "7800", "--data-parallel-size", "1", "--tensor-parallel-size", "8"]
    assert process["devices"] == [0, 1, 2, 3, 4, 5, 6, 7]
    assert process["env"] == visible_env  # H100 gets its GPUs from --gpus, not an env var (000 3.1)
    assert process["kv_transfer_config"] == SEED_UCM_KV
    assert plan["proxy"] == {"prefill": [], "decode": []}


@pytest.mark.parametrize("name,tp", [("single_a5", 8), ("single_a3", 16)])
def test_004_5_1_single_node(name, tp):
    (process,) = plan_cluster(seeds.ALL[name]())["processes"]
    assert process["args"] == ["--host", "0.0.0.0", "--port", "8000", "--data-parallel-size", "1", "--tensor-parallel-size", str(tp)]
    assert process["devices"] == list(range(tp))
    assert process["env"] == {}  # 5.1 sets no ASCEND_RT_VISIBLE_DEVICES: the process sees every device
    assert process["kv_transfer_config"] is None


def test_004_5_2_dp2_over_two_a2_nodes():
    plan = plan_cluster(seeds.dp_a2())
    node0, node1 = plan["processes"]
    assert node0["args"] == [
        "--host", "0.0.0.0", "--port", "8000", "--data-parallel-size", "2", "--data-parallel-size-local", "1",
        "--data-parallel-start-rank", "0", "--data-parallel-address", "192.0.2.21", "--data-parallel-rpc-port", "12321",
        "--tensor-parallel-size", "8"]
    assert node1["args"] == [
        "--host", "0.0.0.0", "--port", "8000", "--headless", "--data-parallel-size", "2", "--data-parallel-size-local", "1",
        "--data-parallel-start-rank", "1", "--data-parallel-address", "192.0.2.21", "--data-parallel-rpc-port", "12321",
        "--tensor-parallel-size", "8"]
    assert node0["api"] and not node1["api"]
    assert node0["api_server_count"] == 1 and node1["api_server_count"] is None
    for process, ip in ((node0, "192.0.2.21"), (node1, "192.0.2.22")):
        assert process["env"] == {"HCCL_IF_IP": ip, "GLOO_SOCKET_IFNAME": "eth0", "TP_SOCKET_IFNAME": "eth0",
                                  "HCCL_SOCKET_IFNAME": "eth0", "ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}
    # Only the DP master binds the RPC port; the headless node binds no API port.
    assert {(p["low"], p["owner"]) for p in plan["ports"]["dp_a2_node0"]} == {(8000, "colocated engine API"), (12321, "colocated rank 0 DP RPC")}
    assert "dp_a2_node1" not in plan["ports"]


SEED_A3_P_KV = _seed_kv(seed.PD_A3_P, MODEL_PATH="m", **LAUNCHER)
SEED_A3_D_KV = _seed_kv(seed.PD_A3_D, MODEL_PATH="m", **LAUNCHER)


def test_004_5_3_a3_prefill_dp2_tp8_and_decode_dp8_tp2():
    plan = plan_cluster(seeds.pd_a3())
    prefill = [p for p in plan["processes"] if p["role"] == "prefill"]
    decode = [p for p in plan["processes"] if p["role"] == "decode"]
    # launcher: devices i*tp..(i+1)*tp-1, port start+i, rank start+i, dp address = own node, rpc 12325
    assert [(p["port"], p["env"]["ASCEND_RT_VISIBLE_DEVICES"], p["dp_ranks"]) for p in prefill] == [
        (9081, "0,1,2,3,4,5,6,7", [0]), (9082, "8,9,10,11,12,13,14,15", [1])]
    assert [(p["port"], p["env"]["ASCEND_RT_VISIBLE_DEVICES"]) for p in decode] == [
        (9900 + i, "%d,%d" % (2 * i, 2 * i + 1)) for i in range(8)]
    for p in prefill:
        assert p["args"][p["args"].index("--data-parallel-size"):] == [
            "--data-parallel-size", "2", "--data-parallel-rank", str(p["dp_ranks"][0]), "--data-parallel-address", "192.0.2.31",
            "--data-parallel-rpc-port", "12325", "--tensor-parallel-size", "8"]
        assert p["kv_transfer_config"] == SEED_A3_P_KV
    for p in decode:
        assert _flag(p["args"], "--data-parallel-address") == "192.0.2.32"
        assert _flag(p["args"], "--data-parallel-rpc-port") == "12325"
        assert p["kv_transfer_config"] == SEED_A3_D_KV
    assert plan["proxy"]["prefill"] == [{"host": "pd_a3_prefill", "address": "192.0.2.31", "port": port} for port in (9081, 9082)]
    assert [e["port"] for e in plan["proxy"]["decode"]] == list(range(9900, 9908))
    # 004 5.3: prefill and decode start together and initialise in parallel.
    assert plan["start_waves"] == [["decode", "prefill"]]


SEED_A2_P_KV = _seed_kv(seed.PD_A2_P, MODEL_PATH="m", **LAUNCHER)
SEED_A2_D_KV = _seed_kv(seed.PD_A2_D, MODEL_PATH="m", **LAUNCHER)


def test_004_5_3_a2_four_nodes():
    plan = plan_cluster(seeds.pd_a2())
    procs = _by_key(plan)
    p0, p1 = procs[("pd_a2_p0", "prefill-dp0")], procs[("pd_a2_p1", "prefill-dp1")]
    assert (p0["port"], p0["api"], p0["api_server_count"]) == (9081, True, 1)
    assert (p1["port"], p1["api"], "--headless" in p1["args"]) == (9082, False, True)
    for p in (p0, p1):
        assert _flag(p["args"], "--data-parallel-address") == "192.0.2.41"
        assert _flag(p["args"], "--data-parallel-rpc-port") == "12321"
        assert p["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
        assert p["kv_transfer_config"] == SEED_A2_P_KV
    assert p1["env"]["VLLM_HOST_IP"] == p1["env"]["HCCL_IF_IP"] == "192.0.2.42"
    for host, first in (("pd_a2_d0", 0), ("pd_a2_d1", 4)):
        for i in range(4):
            rank = first + i
            d = procs[(host, "decode-dp%d" % rank)]
            assert d["port"] == 9900 + i
            assert d["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "%d,%d" % (2 * i, 2 * i + 1)
            assert _flag(d["args"], "--data-parallel-rank") == str(rank)
            assert _flag(d["args"], "--data-parallel-address") == "192.0.2.43"
            assert _flag(d["args"], "--data-parallel-rpc-port") == "12325"
            expected_range = "%d-%d" % (60000 + rank * 100, 60099 + rank * 100)
            assert d["env"]["HCCL_HOST_SOCKET_PORT_RANGE"] == d["env"]["HCCL_NPU_SOCKET_PORT_RANGE"] == expected_range
            assert d["kv_transfer_config"] == SEED_A2_D_KV
    assert "HCCL_HOST_SOCKET_PORT_RANGE" not in p0["env"]
    # The proxy line of 004 5.3 A2: one prefiller, eight decoders.
    assert [(e["address"], e["port"]) for e in plan["proxy"]["prefill"]] == [("192.0.2.41", 9081)]
    assert [(e["address"], e["port"]) for e in plan["proxy"]["decode"]] == (
        [("192.0.2.43", p) for p in range(9900, 9904)] + [("192.0.2.44", p) for p in range(9900, 9904)])


def test_mooncake_side_channel_ports_follow_kv_port_rank_and_tp():
    plan = plan_cluster(seeds.pd_a2())
    ranks = {(r["role"], r["dp_rank"]): r for r in plan["ranks"]}
    assert ranks[("prefill", 1)]["mooncake_ports"] == {"side_channel": [30008, 30015], "control": 30017}
    assert ranks[("decode", 5)]["mooncake_ports"] == {"side_channel": [30110, 30111], "control": 30121}


def _shell_expand(seed_template, rank):
    """What bash makes of the seed's '"$4"' and '"$((37000 + $4))"' splices for DP rank ``rank``."""
    (config,) = seed.expand(seed_template, **{"4": str(rank)})
    return _compact(config)


@pytest.mark.parametrize("name,seed_p,seed_d", [("pd_pool_a3", seed.POOL_A3_P, seed.POOL_A3_D), ("pd_pool_a2", seed.POOL_A2_P, seed.POOL_A2_D)])
def test_004_5_4_kv_pool_connectors(name, seed_p, seed_d):
    plan = plan_cluster(seeds.ALL[name]())
    seen = {"prefill": [], "decode": []}
    for p in plan["processes"]:
        rank = p["dp_ranks"][0]
        expected = _shell_expand(seed_p if p["role"] == "prefill" else seed_d, rank)
        assert p["kv_transfer_config"] == expected
        store = json.loads(expected)["kv_connector_extra_config"]["connectors"][1]
        seen[p["role"]].append((p["engine_id"], store["kv_connector_extra_config"]["lookup_rpc_port"]))
    # 004 5.4: prefill lookup ports 37000-37001, decode 37100-37107, engine ids by DP rank.
    assert seen["prefill"] == [("glm53-flash-prefill-dp%d" % r, 37000 + r) for r in range(2)]
    assert seen["decode"] == [("glm53-flash-decode-dp%d" % r, 37100 + r) for r in range(8)]
    assert [r["lookup_rpc_port"] for r in plan["ranks"] if r["role"] == "decode"] == list(range(37100, 37108))
    # 004 5.4: "pool service, decode, prefill, proxy": decode is ready before prefill starts.
    assert plan["start_waves"] == [["decode"], ["prefill"]]


def test_every_seed_cluster_plans_with_unique_ports_per_host():
    for name, make in seeds.ALL.items():
        plan = plan_cluster(make())
        for host, ports in plan["ports"].items():
            for space in ("host", "npu"):
                spans = sorted((p["low"], p["high"]) for p in ports if p["space"] == space)
                for before, after in itertools.pairwise(spans):
                    assert before[1] < after[0], (name, host, spans)


@pytest.mark.parametrize("name,waves", [
    ("pd_a2", [0, 1]), ("pd_a3", [0, 1]), ("pd_pool_a2", [0, 1, 2, 3]), ("pd_pool_a3", [0, 1, 2, 3]),
    ("ucm_a2", [0]), ("dp_a2", [0]), ("single_a3", [0]),
])
def test_every_wave_of_a_deployment_has_containers(name, waves):
    """Waves are numbered densely (an empty wave costs a start and a wait round on every host)."""
    plan = plan_cluster(seeds.ALL[name]())
    assert wave_numbers(plan) == waves
    numbers = engine_waves(plan)
    if plan["kv_pool"]:
        assert (numbers["pool"], numbers["decode"], numbers["prefill"], numbers["proxy"]) == (0, 1, 2, 3)
