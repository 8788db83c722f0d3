# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology rules, one test per rule: break a seed cluster one way, read the message."""

from __future__ import annotations

import seed_clusters as seeds
from rule_cases import node, problems_of, single_problem

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def test_ranks_times_tp_must_fit_the_node():
    cluster = seeds.pd_a2()
    node(cluster, "pd_a2_d1")["local_ranks"] = 5
    cluster["groups"]["decode"]["dp_size"] = 9
    problem = problems_of(cluster)[0]
    assert problem.startswith("cluster pd_a2, host pd_a2_d1: vllm_engine_local_ranks: 5 local ranks x tp_size 2 from device 0 need 10 devices, the node has 8")
    assert "Fix: lower vllm_engine_local_ranks" in problem


def test_a_rank_run_twice_names_both_hosts():
    cluster = seeds.pd_a2()
    node(cluster, "pd_a2_d1")["rank_start"] = 3
    problems = problems_of(cluster)
    assert "cluster pd_a2, host pd_a2_d1, rank 3: vllm_engine_rank_start: rank 3 is already run by host pd_a2_d0" in problems[0]
    assert any("DP ranks [7] are run by no host" in p for p in problems)


def test_missing_ranks():
    cluster = seeds.pd_a2()
    cluster["nodes"] = [n for n in cluster["nodes"] if n["host"] != "pd_a2_d1"]
    assert single_problem(cluster) == (
        "cluster pd_a2: vllm_engine_groups.decode.dp_size: DP ranks [4, 5, 6, 7] are run by no host. "
        "Fix: add nodes or vllm_engine_local_ranks so that ranks 0..7 are each run once.")


def test_dp_address_must_be_the_master():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["dp_address"] = "192.0.2.44"
    assert single_problem(cluster) == (
        "cluster pd_a2, rank 0: vllm_engine_groups.decode.dp_address: 192.0.2.44 is not the address 192.0.2.43 of the DP master "
        "pd_a2_d0. Fix: remove dp_address (it defaults to the rank-0 node) or set it to 192.0.2.43.")


def test_master_cannot_be_headless():
    cluster = seeds.dp_a2()
    node(cluster, "dp_a2_node0").update(headless=True, api_server_count=None)
    assert "host dp_a2_node0, rank 0: vllm_engine_headless: the DP master (rank 0) of role colocated must serve the API" in single_problem(cluster)


def test_headless_ranks_have_no_api():
    cluster = seeds.dp_a2()
    node(cluster, "dp_a2_node1")["api_server_count"] = 1
    problem = single_problem(cluster)
    assert "host dp_a2_node1: vllm_engine_api_server_count: a headless node serves no API" in problem
    plan = plan_cluster(seeds.pd_a2())
    assert all(e["host"] != "pd_a2_p1" for e in plan["proxy"]["prefill"])


def test_node_role_without_group():
    cluster = seeds.pd_a3()
    cluster["nodes"][1]["role"] = "colocated"
    problems = problems_of(cluster)
    assert "host pd_a3_decode: vllm_engine_role: role colocated has no entry in vllm_engine_groups" in problems[0]
    assert any("vllm_engine_groups.decode: no host has vllm_engine_role decode" in p for p in problems)


def test_hosts_with_one_address_are_one_machine():
    """P and D on one A3: allowed, with their devices and ports checked together."""
    cluster = seeds.pd_a3()
    cluster["nodes"][1]["address"] = cluster["nodes"][0]["address"]  # decode on the prefill's machine
    problems = problems_of(cluster)
    assert ("cluster pd_a3, host pd_a3_decode: vllm_engine_device_offset: devices 0-15 overlap devices 0-15 of host "
            "pd_a3_prefill, which has the same address 192.0.2.31 (one machine). Fix: give each host its own ansible_host, "
            "or, if they are one machine, set vllm_engine_device_offset so their devices do not overlap.") in problems
    # made to fit: 1P1D on one 16-NPU machine, prefill DP1/TP8 on NPUs 0-7, decode DP4/TP2 on 8-15, other ports
    cluster = seeds.pd_a3()
    cluster["groups"]["prefill"]["dp_size"] = 1
    cluster["groups"]["decode"].update(dp_size=4, api_port=9950, kv_port=40100, dp_rpc_port=12400)
    cluster["nodes"][0]["local_ranks"] = 1
    cluster["nodes"][1].update(address=cluster["nodes"][0]["address"], local_ranks=4, device_offset=8)
    plan = plan_cluster(cluster)
    assert [p["devices"] for p in plan["processes"] if p["role"] == "decode"] == [[8, 9], [10, 11], [12, 13], [14, 15]]
    # ... where a port both use is one collision, named with the other host
    cluster["groups"]["decode"]["api_port"] = 9081
    assert any("API (9081) overlaps decode rank 0 API of host pd_a3_decode (9081)" in p
               or "API (9081) overlaps prefill rank 0 API of host pd_a3_prefill (9081)" in p for p in problems_of(cluster))


def test_a_host_needs_an_ip_address_and_its_nic():
    cluster = seeds.pd_a2()
    cluster["nodes"][0]["address"] = "pd_a2_p0"  # no ansible_host: the inventory name
    cluster["nodes"][2]["nic"] = None
    problems = problems_of(cluster)
    assert ("cluster pd_a2, host pd_a2_p0: ansible_host: address 'pd_a2_p0' is not an IP address; it becomes HCCL_IF_IP, "
            "VLLM_HOST_IP and the DP address (a host without ansible_host gets its inventory name). Fix: set ansible_host "
            "(or vllm_engine_node_ip) to the address the other nodes reach this host on.") in problems
    assert any(p.startswith("cluster pd_a2, host pd_a2_d0: vllm_engine_nic: GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME, "
                            "HCCL_SOCKET_IFNAME need the name of the NIC that carries 192.0.2.43, and none is set") for p in problems)


def test_visible_devices_set_by_hand_must_be_the_planned_ones():
    cluster = seeds.pd_a2()
    cluster["env"] = {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}  # right for prefill, wrong for decode ranks
    cluster["role_env"] = {"decode": {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}}
    problems = problems_of(cluster)
    assert problems == [
        "cluster pd_a2, host pd_a2_d0: vllm_engine_role_env.decode.ASCEND_RT_VISIBLE_DEVICES: ASCEND_RT_VISIBLE_DEVICES=0,1, "
        "but the plan gives decode rank 1 devices 2,3 (and 5 more processes differ). Fix: remove it: the plan sets it per "
        "rank from tp_size, vllm_engine_local_ranks and vllm_engine_device_offset."]
    cluster = seeds.single_a3()
    cluster["env"] = {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"}
    plan_cluster(cluster)  # what the plan gives: fine
    cluster["env"] = {"ASCEND_RT_VISIBLE_DEVICES": "8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23"}
    assert "but the plan gives colocated rank 0 devices 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15" in single_problem(cluster)


def test_cuda_visible_devices_contradicts_the_gpu_request():
    cluster = seeds.ucm_h100()
    cluster["env"] = {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    assert single_problem(cluster) == (
        "cluster ucm_h100: vllm_engine_env.CUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES=4,5,6,7, but the GPUs come from the "
        "container's device request and are numbered from 0 inside it. Fix: remove it: the plan requests each process's GPUs.")
