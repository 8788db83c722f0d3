# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One test per validation rule: break a seed cluster one way, read the message."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils._plan_model import InputError
from ansible_collections.llmops.inference.plugins.module_utils._planner import plan_cluster

import seed_clusters as seeds


def _node(cluster, host):
    return next(n for n in cluster["nodes"] if n["host"] == host)


def _problems(cluster):
    with pytest.raises(PlanError) as err:
        plan_cluster(cluster)
    return [str(p) for p in err.value.problems]


def _single_problem(cluster):
    problems = _problems(cluster)
    assert len(problems) == 1, problems
    return problems[0]


def test_ranks_times_tp_must_fit_the_node():
    cluster = seeds.pd_a2()
    _node(cluster, "pd_a2_d1")["local_ranks"] = 5
    cluster["groups"]["decode"]["dp_size"] = 9
    problem = _problems(cluster)[0]
    assert problem.startswith("cluster pd_a2, host pd_a2_d1: vllm_engine_local_ranks: 5 local ranks x tp_size 2 from device 0 need 10 devices, the node has 8")
    assert "Fix: lower vllm_engine_local_ranks" in problem


def test_a_rank_run_twice_names_both_hosts():
    cluster = seeds.pd_a2()
    _node(cluster, "pd_a2_d1")["rank_start"] = 3
    problems = _problems(cluster)
    assert "cluster pd_a2, host pd_a2_d1, rank 3: vllm_engine_rank_start: rank 3 is already run by host pd_a2_d0" in problems[0]
    assert any("DP ranks [7] are run by no host" in p for p in problems)


def test_missing_ranks():
    cluster = seeds.pd_a2()
    cluster["nodes"] = [n for n in cluster["nodes"] if n["host"] != "pd_a2_d1"]
    assert _single_problem(cluster) == (
        "cluster pd_a2: vllm_engine_groups.decode.dp_size: DP ranks [4, 5, 6, 7] are run by no host. "
        "Fix: add nodes or vllm_engine_local_ranks so that ranks 0..7 are each run once.")


def test_dp_address_must_be_the_master():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["dp_address"] = "192.0.2.44"
    assert _single_problem(cluster) == (
        "cluster pd_a2, rank 0: vllm_engine_groups.decode.dp_address: 192.0.2.44 is not the address 192.0.2.43 of the DP master "
        "pd_a2_d0. Fix: remove dp_address (it defaults to the rank-0 node) or set it to 192.0.2.43.")


def test_master_cannot_be_headless():
    cluster = seeds.dp_a2()
    _node(cluster, "dp_a2_node0").update(headless=True, api_server_count=None)
    assert "host dp_a2_node0, rank 0: vllm_engine_headless: the DP master (rank 0) of role colocated must serve the API" in _single_problem(cluster)


def test_headless_ranks_have_no_api():
    cluster = seeds.dp_a2()
    _node(cluster, "dp_a2_node1")["api_server_count"] = 1
    problem = _single_problem(cluster)
    assert "host dp_a2_node1: vllm_engine_api_server_count: a headless node serves no API" in problem
    plan = plan_cluster(seeds.pd_a2())
    assert all(e["host"] != "pd_a2_p1" for e in plan["proxy"]["prefill"])


def test_colliding_api_ports_on_one_host():
    cluster = seeds.pd_a3()
    cluster["groups"]["decode"]["api_port"] = 9081
    plan_cluster(cluster)  # decode on another machine: no collision
    cluster = seeds.pd_a3()
    cluster["services"][0]["ports"] = [9082]
    assert _single_problem(cluster) == (
        "cluster pd_a3, host pd_a3_prefill: pd_proxy port: pd_proxy (9082) overlaps prefill rank 1 API (9082). "
        "Fix: move one of them; also check vllm_engine_api_port / vllm_engine_groups.prefill.api_port.")


def test_hccl_ranges_collide_with_kv_ports():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["hccl_port_range"]["base"] = 30050
    problem = _problems(cluster)[0]
    assert "host pd_a2_d0" in problem and "HCCL host sockets" in problem and "Mooncake" in problem


def test_hccl_ranges_overlapping_between_ranks():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["hccl_port_range"]["stride"] = 50
    problems = _problems(cluster)
    assert any("decode rank 1 HCCL host sockets (60050-60149) overlaps decode rank 0 HCCL host sockets (60000-60099)" in p for p in problems)
    assert any("HCCL NPU sockets" in p for p in problems)


def test_lookup_ports_collide_with_dp_rpc():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["prefill"]["lookup_rpc_port_base"] = 12321
    problem = _single_problem(cluster)
    assert "host pd_a2_p0" in problem and "prefill rank 0 DP RPC (12321)" in problem and "lookup RPC" in problem


def test_pool_service_port_collides():
    cluster = seeds.pd_pool_a3()
    cluster["services"][1]["ports"] = [5000, 6000, 9081]
    assert "memcache_meta (9081) overlaps prefill rank 0 API (9081)" in _single_problem(cluster)


def test_engine_id_must_be_unique():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["decode"]["engine_id_template"] = "glm53-flash-prefill-dp{dp_rank}"
    problems = _problems(cluster)
    assert problems[0] == (
        "cluster pd_pool_a2, host pd_a2_p0, rank 0: vllm_engine_groups.prefill.engine_id_template: engine_id glm53-flash-prefill-dp0 "
        "is also used by decode rank 0 on pd_a2_d0. Fix: make engine_id unique per engine (include {dp_rank}, differ between "
        "prefill and decode).")


def test_engine_id_template_fields():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["decode"]["engine_id_template"] = "decode-{rank}"
    assert "vllm_engine_groups.decode.engine_id_template: only {dp_rank} may be substituted" in _problems(cluster)[0]


def test_lookup_ports_must_be_unique():
    cluster = seeds.pd_pool_a3()
    cluster["groups"]["decode"]["lookup_rpc_port_base"] = 37001
    problems = _problems(cluster)
    assert any("lookup_rpc_port 37001 is also used by" in p for p in problems)


def test_kv_role_must_match_the_group():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["kv_role"] = "kv_producer"
    assert _single_problem(cluster) == (
        "cluster pd_a2: vllm_engine_groups.decode.kv_role: decode ranks must be kv_consumer, got kv_producer. "
        "Fix: set kv_role to kv_consumer or remove it.")


def test_declared_topology_must_be_real():
    cluster = seeds.pd_a2()
    cluster["mooncake_extra_config"]["decode"] = {"dp_size": 4, "tp_size": 2}
    assert ("vllm_engine_mooncake_extra_config.decode: declares {'dp_size': 4, 'tp_size': 2} "
            "but the decode group is {'dp_size': 8, 'tp_size': 2}") in _single_problem(cluster)


@pytest.mark.parametrize("name,kv_port,limit", [("pd_a2", 27990, 28000), ("pd_a3", 35000, 36000)])
def test_kv_port_outside_ascend_direct_range(name, kv_port, limit):
    cluster = seeds.ALL[name]()
    cluster["groups"]["prefill"]["kv_port"] = kv_port
    problem = _single_problem(cluster)
    assert "vllm_engine_groups.prefill.kv_port" in problem
    assert "overlap AscendDirectTransport's random range [20000, %d)" % limit in problem
    assert "Fix: set kv_port to %d or more" % limit in problem


def test_mooncake_needs_a_kv_port():
    cluster = seeds.pd_a3()
    del cluster["groups"]["decode"]["kv_port"]
    assert "vllm_engine_groups.decode.kv_port: MooncakeConnectorV2 needs a KV base port" in _single_problem(cluster)


def test_pool_pythonhashseed_everywhere():
    cluster = seeds.pd_pool_a2()
    _node(cluster, "pd_a2_d1")["pythonhashseed"] = "1"
    assert _single_problem(cluster) == (
        "cluster pd_pool_a2, host pd_a2_d1: vllm_engine_pythonhashseed: PYTHONHASHSEED is '1' here but '0' on pd_a2_p0, pd_a2_p1, "
        "pd_a2_d0. Fix: use the same vllm_engine_pythonhashseed on every node of the pool.")
    del _node(cluster, "pd_a2_d1")["pythonhashseed"]
    assert "vllm_engine_pythonhashseed: PYTHONHASHSEED is not set" in _single_problem(cluster)


def test_pool_tenant_everywhere():
    cluster = seeds.pd_pool_a2()
    _node(cluster, "pd_a2_p1")["tenant_id"] = "team-b"
    assert "host pd_a2_p1: mooncake_master_tenant_id: Mooncake tenant_id is 'team-b' here but 'default'" in _single_problem(cluster)


@pytest.mark.parametrize("size", ["1.5GB", "512MB"])
def test_pool_sizes_are_gb_aligned(size):
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = size
    assert "memcache_pool_dram_size: %r is not a whole multiple of 1 GB (protocol None)" % size in _single_problem(cluster)


@pytest.mark.parametrize("size", ["eight", "8G", "8gib"])
def test_a_pool_size_its_config_cannot_read_is_refused_as_such(size):
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = size
    assert "memcache_pool_dram_size: %r is not a size the pool's config reads" % size in _single_problem(cluster)


def test_memcache_host_protocols_align_to_2_mb_and_sizes_stay_in_bounds():
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["protocol"] = "host_tcp"
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = "512MB"  # fine with a host protocol
    plan_cluster(cluster)
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = "3MB"
    assert "memcache_pool_dram_size: '3MB' is not a whole multiple of 2 MB (protocol host_tcp)" in _single_problem(cluster)
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["sizes"].update(memcache_pool_dram_size="64GB", memcache_pool_max_dram_size="32GB")
    assert _single_problem(cluster) == ("cluster pd_pool_a3: memcache_pool_dram_size: 64GB is above memcache_pool_max_dram_size "
                                        "32GB. Fix: lower it, or raise memcache_pool_max_dram_size.")
    cluster["pool"]["sizes"].update(memcache_pool_max_dram_size="2TB")
    assert "memcache_pool_max_dram_size: 2TB is above Memcache's maximum of 1TB" in _single_problem(cluster)
    cluster = seeds.pd_pool_a3()
    cluster["groups"]["decode"]["dp_size"] = 600  # 16 + 1200 workers
    assert "the pool has 1216 workers (dp x tp of every group), more than Memcache's maximum of 1024" in " ".join(_problems(cluster))
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["world_size"] = 2048
    assert "memcache_pool_world_size: world_size 2048 is above Memcache's maximum 1024. Fix: set it between 32 and 1024" in (
        _single_problem(cluster))


def test_mooncake_segment_sizes_are_given_per_role():
    cluster = seeds.pd_pool_a2()
    cluster["pool"]["sizes"] = {"mooncake_master_segment_size.prefil": "8GB", "mooncake_master_segment_size.decode": "0"}
    problems = _problems(cluster)
    assert ("cluster pd_pool_a2: mooncake_master_segment_size.prefil: unknown key (known: decode, prefill). "
            "Fix: rename it to prefill.") in problems
    assert ("cluster pd_pool_a2: mooncake_master_segment_size.prefill: missing: every prefill worker's mooncake.json needs "
            "its size. Fix: set it (0 on nodes that contribute nothing).") in problems


def test_memcache_world_size_covers_every_worker():
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["world_size"] = 31
    assert "memcache_pool_world_size: world_size 31 does not cover the 32 workers" in _single_problem(cluster)
    cluster["pool"]["world_size"] = 32
    plan_cluster(cluster)


def test_hybrid_model_needs_whole_segment_pool_transfers():
    cluster = seeds.pd_pool_a2()
    cluster["pool"]["use_layerwise"] = True
    assert "vllm_engine_kv_pool_use_layerwise: a hybrid model has groups that cannot be prefix-cached" in _single_problem(cluster)


def test_memcache_barrier_on_every_group():
    cluster = seeds.pd_pool_a3()
    cluster["groups"]["decode"]["memcache_dp_init_barrier"] = False
    assert "vllm_engine_groups.decode.memcache_dp_init_barrier: Memcache needs the barrier on every rank" in _single_problem(cluster)


def test_pool_needs_lookup_ports_and_per_rank_launch():
    cluster = seeds.pd_pool_a2()
    del cluster["groups"]["prefill"]["lookup_rpc_port_base"]
    cluster["groups"]["decode"]["launch"] = "per_node"
    del cluster["groups"]["decode"]["hccl_port_range"]
    problems = _problems(cluster)
    assert any("vllm_engine_groups.prefill.lookup_rpc_port_base: AscendStoreConnector needs a lookup port" in p for p in problems)
    assert any("vllm_engine_groups.decode.launch: each pool engine needs its own lookup port" in p for p in problems)


def test_ucm_unknown_pipeline():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["store_pipeline"] = "Cache|Tape"
    assert "ucm_cache_config.ucm_connectors[0].ucm_connector_config.store_pipeline: unknown pipeline 'Cache|Tape'" in _single_problem(cluster)


def test_ucm_storage_backends_set():
    cluster = seeds.ucm_h100()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["storage_backends"] = ""
    assert "storage_backends: no storage backend is set" in _single_problem(cluster)


def test_ucm_aio_needs_io_direct():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["posix_io_engine"] = "aio"
    assert "posix_io_engine: aio needs io_direct: true. Fix: set io_direct: true or use psync." in _single_problem(cluster)
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["io_direct"] = True
    plan_cluster(cluster)


def test_ucm_nfs_store_needs_event_sync_off():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_name"] = "UcmNfsStore"
    assert "ucm_cache_config.enable_event_sync: UcmNfsStore needs enable_event_sync: false" in _single_problem(cluster)


def test_hccl_ranges_need_per_rank_processes():
    cluster = seeds.dp_a2()
    cluster["groups"]["colocated"]["hccl_port_range"] = {"base": 60000}
    assert "per-rank HCCL port ranges need one process per rank" in _single_problem(cluster)


def test_node_role_without_group():
    cluster = seeds.pd_a3()
    cluster["nodes"][1]["role"] = "colocated"
    problems = _problems(cluster)
    assert "host pd_a3_decode: vllm_engine_role: role colocated has no entry in vllm_engine_groups" in problems[0]
    assert any("vllm_engine_groups.decode: no host has vllm_engine_role decode" in p for p in problems)


def test_every_problem_is_reported_at_once():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["decode"]["kv_role"] = "kv_both"
    _node(cluster, "pd_a2_p1")["pythonhashseed"] = "7"
    cluster["pool"]["sizes"]["mooncake_master_segment_size.prefill"] = "8.5GB"
    assert len(_problems(cluster)) == 3


@pytest.mark.parametrize("mutate,text", [
    (lambda c: c["groups"]["decode"].update(dp_size="8"), "vllm_engine_groups.decode: dp_size must be int"),
    (lambda c: c["groups"]["decode"].update(launch="per_pod"), "launch must be one of per_rank, per_node"),
    (lambda c: c.update(hardware="a1"), "vllm_engine_hardware must be one of a2, a3, a5, h100"),
    (lambda c: c["nodes"][0].update(headless="no"), "host pd_a2_p0: headless must be bool"),
    (lambda c: c["groups"]["prefill"].update(api_port=True), "api_port must be int, got True"),
])
def test_malformed_input(mutate, text):
    cluster = seeds.pd_a2()
    mutate(cluster)
    with pytest.raises(InputError, match=None) as err:
        plan_cluster(cluster)
    assert text in str(err.value)


def test_unknown_keys_are_named_with_the_closest_known_one_all_at_once():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["tp_szie"] = 2
    cluster["groups"]["decode"]["hccl_port_range"]["strid"] = 10
    cluster["groups"]["decoder"] = {"dp_size": 1, "tp_size": 1}
    cluster["mooncake_extra_config"]["use_ascend_drect"] = True
    cluster["mooncake_extra_config"]["a_newer_connector_option"] = 1  # open schema: not a misspelling, kept
    with pytest.raises(PlanError) as err:
        plan_cluster(cluster)
    lines = str(err.value).splitlines()
    assert any(line.startswith("cluster pd_a2: vllm_engine_groups.decode.tp_szie: unknown key (known: dp_size, tp_size,")
               and line.endswith("Fix: rename it to tp_size.") for line in lines)
    assert any(line.startswith("cluster pd_a2: vllm_engine_groups.decode.hccl_port_range.strid: unknown key (known: base, "
                               "stride, size). Fix: rename it to stride.") for line in lines)
    assert any(line.startswith("cluster pd_a2: vllm_engine_groups.decoder: unknown key (known: prefill, decode, colocated). "
                               "Fix: rename it to decode.") for line in lines)
    assert any("vllm_engine_mooncake_extra_config.use_ascend_drect" in line and line.endswith("rename it to use_ascend_direct.")
               for line in lines)
    assert not any("a_newer_connector_option" in line for line in lines)


def test_misspelt_ucm_keys_are_refused():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["storage_backend"] = "/data/ucm/cache"
    with pytest.raises(PlanError, match=r"ucm_cache_config.ucm_connectors\[0\].ucm_connector_config.storage_backend: unknown key "
                                        r".*Fix: rename it to storage_backends"):
        plan_cluster(cluster)


def test_hosts_with_one_address_are_one_machine():
    """P and D on one A3: allowed, with their devices and ports checked together."""
    cluster = seeds.pd_a3()
    cluster["nodes"][1]["address"] = cluster["nodes"][0]["address"]  # decode on the prefill's machine
    problems = _problems(cluster)
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
               or "API (9081) overlaps prefill rank 0 API of host pd_a3_prefill (9081)" in p for p in _problems(cluster))


def test_a_host_needs_an_ip_address_and_its_nic():
    cluster = seeds.pd_a2()
    cluster["nodes"][0]["address"] = "pd_a2_p0"  # no ansible_host: the inventory name
    cluster["nodes"][2]["nic"] = None
    problems = _problems(cluster)
    assert ("cluster pd_a2, host pd_a2_p0: ansible_host: address 'pd_a2_p0' is not an IP address; it becomes HCCL_IF_IP, "
            "VLLM_HOST_IP and the DP address (a host without ansible_host gets its inventory name). Fix: set ansible_host "
            "(or vllm_engine_node_ip) to the address the other nodes reach this host on.") in problems
    assert any(p.startswith("cluster pd_a2, host pd_a2_d0: vllm_engine_nic: GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME, "
                            "HCCL_SOCKET_IFNAME need the name of the NIC that carries 192.0.2.43, and none is set") for p in problems)


def test_visible_devices_set_by_hand_must_be_the_planned_ones():
    cluster = seeds.pd_a2()
    cluster["env"] = {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7"}  # right for prefill, wrong for decode ranks
    cluster["role_env"] = {"decode": {"ASCEND_RT_VISIBLE_DEVICES": "0,1"}}
    problems = _problems(cluster)
    assert problems == [
        "cluster pd_a2, host pd_a2_d0: vllm_engine_role_env.decode.ASCEND_RT_VISIBLE_DEVICES: ASCEND_RT_VISIBLE_DEVICES=0,1, "
        "but the plan gives decode rank 1 devices 2,3 (and 5 more processes differ). Fix: remove it: the plan sets it per "
        "rank from tp_size, vllm_engine_local_ranks and vllm_engine_device_offset."]
    cluster = seeds.single_a3()
    cluster["env"] = {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15"}
    plan_cluster(cluster)  # what the plan gives: fine
    cluster["env"] = {"ASCEND_RT_VISIBLE_DEVICES": "8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23"}
    assert "but the plan gives colocated rank 0 devices 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15" in _single_problem(cluster)


def test_cuda_visible_devices_contradicts_the_gpu_request():
    cluster = seeds.ucm_h100()
    cluster["env"] = {"CUDA_VISIBLE_DEVICES": "4,5,6,7"}
    assert _single_problem(cluster) == (
        "cluster ucm_h100: vllm_engine_env.CUDA_VISIBLE_DEVICES: CUDA_VISIBLE_DEVICES=4,5,6,7, but the GPUs come from the "
        "container's device request and are numbered from 0 inside it. Fix: remove it: the plan requests each process's GPUs.")


def _cpu_pd(**groups):
    """A CPU 1P1D over NixlConnector on one machine: prefill DP2 per rank, decode DP1."""
    cluster = {
        "name": "cpu_pd", "hardware": "cpu", "connector": "nixl", "network_env": ["VLLM_HOST_IP"],
        "groups": {"prefill": {"dp_size": 2, "tp_size": 1, "kv_port": 5600, "api_port": 8100},
                   "decode": {"dp_size": 1, "tp_size": 1, "launch": "per_node", "kv_port": 5700, "api_port": 8200}},
        "nodes": [{"host": "box", "address": "192.0.2.90", "role": "prefill", "local_ranks": 2},
                  {"host": "box2", "address": "192.0.2.91", "role": "decode", "local_ranks": 1}],
    }
    for role, values in groups.items():
        cluster["groups"][role].update(values)
    return cluster


def test_cpu_ranks_get_no_devices_and_nixl_a_side_channel_each():
    plan = plan_cluster(_cpu_pd(prefill={"tp_size": 4}))  # no device count limits a CPU node
    prefill = [p for p in plan["processes"] if p["role"] == "prefill"]
    assert [p["devices"] for p in plan["processes"]] == [[], [], []]
    assert [p["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] for p in prefill] == ["5600", "5600"]  # vLLM adds the DP rank
    assert [r["nixl_side_channel_port"] for r in plan["ranks"] if r["role"] == "prefill"] == [5600, 5601]
    assert all("ASCEND_RT_VISIBLE_DEVICES" not in p["env"] and "CUDA_VISIBLE_DEVICES" not in p["env"] for p in plan["processes"])
    assert '"kv_buffer_device":"cpu"' in prefill[0]["kv_transfer_config"]


def test_nixl_side_channels_collide_with_another_port_of_the_host():
    cluster = _cpu_pd()
    cluster["nodes"][1]["address"] = "192.0.2.90"  # decode on the prefill's machine: one machine, two hosts
    cluster["groups"]["decode"]["kv_port"] = 5601
    assert _single_problem(cluster) == (
        "cluster cpu_pd, host box: vllm_engine_groups.prefill.kv_port: prefill rank 1 NIXL side channel (5601) overlaps "
        "decode rank 0 NIXL side channel of host box2 (5601). Fix: move one of them; also check vllm_engine_groups.decode.kv_port.")


def test_nixl_needs_a_side_channel_port_and_both_groups():
    cluster = _cpu_pd()
    del cluster["groups"]["decode"]["kv_port"]
    assert "vllm_engine_groups.decode.kv_port: NixlConnector needs a side-channel base port" in _single_problem(cluster)
