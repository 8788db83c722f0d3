# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KV connector and pool rules, one test per rule: break a seed cluster one way, read the message."""

from __future__ import annotations

import pytest
import seed_clusters as seeds
from rule_cases import cpu_pd, node, problems_of, single_problem

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def test_kv_role_must_match_the_group():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["kv_role"] = "kv_producer"
    assert single_problem(cluster) == (
        "cluster pd_a2: vllm_engine_groups.decode.kv_role: decode ranks must be kv_consumer, got kv_producer. "
        "Fix: set kv_role to kv_consumer or remove it.")


def test_declared_topology_must_be_real():
    cluster = seeds.pd_a2()
    cluster["mooncake_extra_config"]["decode"] = {"dp_size": 4, "tp_size": 2}
    assert ("vllm_engine_mooncake_extra_config.decode: declares {'dp_size': 4, 'tp_size': 2} "
            "but the decode group is {'dp_size': 8, 'tp_size': 2}") in single_problem(cluster)


@pytest.mark.parametrize("name,kv_port,limit", [("pd_a2", 27990, 28000), ("pd_a3", 35000, 36000)])
def test_kv_port_outside_ascend_direct_range(name, kv_port, limit):
    cluster = seeds.ALL[name]()
    cluster["groups"]["prefill"]["kv_port"] = kv_port
    problem = single_problem(cluster)
    assert "vllm_engine_groups.prefill.kv_port" in problem
    assert "overlap AscendDirectTransport's random range [20000, %d)" % limit in problem
    assert "Fix: set kv_port to %d or more" % limit in problem


def test_mooncake_needs_a_kv_port():
    cluster = seeds.pd_a3()
    del cluster["groups"]["decode"]["kv_port"]
    assert "vllm_engine_groups.decode.kv_port: MooncakeConnectorV2 needs a KV base port" in single_problem(cluster)


def test_pool_pythonhashseed_everywhere():
    cluster = seeds.pd_pool_a2()
    node(cluster, "pd_a2_d1")["pythonhashseed"] = "1"
    assert single_problem(cluster) == (
        "cluster pd_pool_a2, host pd_a2_d1: vllm_engine_pythonhashseed: PYTHONHASHSEED is '1' here but '0' on pd_a2_p0, pd_a2_p1, "
        "pd_a2_d0. Fix: use the same vllm_engine_pythonhashseed on every node of the pool.")
    del node(cluster, "pd_a2_d1")["pythonhashseed"]
    assert "vllm_engine_pythonhashseed: PYTHONHASHSEED is not set" in single_problem(cluster)


def test_pool_tenant_everywhere():
    cluster = seeds.pd_pool_a2()
    node(cluster, "pd_a2_p1")["tenant_id"] = "team-b"
    assert "host pd_a2_p1: mooncake_master_tenant_id: Mooncake tenant_id is 'team-b' here but 'default'" in single_problem(cluster)


@pytest.mark.parametrize("size", ["1.5GB", "512MB"])
def test_pool_sizes_are_gb_aligned(size):
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = size
    assert "memcache_pool_dram_size: %r is not a whole multiple of 1 GB (protocol None)" % size in single_problem(cluster)


@pytest.mark.parametrize("size", ["eight", "8G", "8gib"])
def test_a_pool_size_its_config_cannot_read_is_refused_as_such(size):
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = size
    assert "memcache_pool_dram_size: %r is not a size the pool's config reads" % size in single_problem(cluster)


def test_memcache_host_protocols_align_to_2_mb_and_sizes_stay_in_bounds():
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["protocol"] = "host_tcp"
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = "512MB"  # fine with a host protocol
    plan_cluster(cluster)
    cluster["pool"]["sizes"]["memcache_pool_dram_size"] = "3MB"
    assert "memcache_pool_dram_size: '3MB' is not a whole multiple of 2 MB (protocol host_tcp)" in single_problem(cluster)
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["sizes"].update(memcache_pool_dram_size="64GB", memcache_pool_max_dram_size="32GB")
    assert single_problem(cluster) == ("cluster pd_pool_a3: memcache_pool_dram_size: 64GB is above memcache_pool_max_dram_size "
                                       "32GB. Fix: lower it, or raise memcache_pool_max_dram_size.")
    cluster["pool"]["sizes"].update(memcache_pool_max_dram_size="2TB")
    assert "memcache_pool_max_dram_size: 2TB is above Memcache's maximum of 1TB" in single_problem(cluster)
    cluster = seeds.pd_pool_a3()
    cluster["groups"]["decode"]["dp_size"] = 600  # 16 + 1200 workers
    assert "the pool has 1216 workers (dp x tp of every group), more than Memcache's maximum of 1024" in " ".join(problems_of(cluster))
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["world_size"] = 2048
    assert "memcache_pool_world_size: world_size 2048 is above Memcache's maximum 1024. Fix: set it between 32 and 1024" in (
        single_problem(cluster))


def test_mooncake_segment_sizes_are_given_per_role():
    cluster = seeds.pd_pool_a2()
    cluster["pool"]["segment_sizes"] = {"prefil": "8GB", "decode": "0"}
    problems = problems_of(cluster)
    assert ("cluster pd_pool_a2: mooncake_master_segment_size.prefil: unknown key (known: decode, prefill). "
            "Fix: rename it to prefill.") in problems
    assert ("cluster pd_pool_a2: mooncake_master_segment_size.prefill: missing: every prefill worker's mooncake.json needs "
            "its size. Fix: set it (0 on nodes that contribute nothing).") in problems


def test_memcache_world_size_covers_every_worker():
    cluster = seeds.pd_pool_a3()
    cluster["pool"]["world_size"] = 31
    assert "memcache_pool_world_size: world_size 31 does not cover the 32 workers" in single_problem(cluster)
    cluster["pool"]["world_size"] = 32
    plan_cluster(cluster)


def test_hybrid_model_needs_whole_segment_pool_transfers():
    cluster = seeds.pd_pool_a2()
    cluster["pool"]["use_layerwise"] = True
    assert "vllm_engine_kv_pool_use_layerwise: a hybrid model has groups that cannot be prefix-cached" in single_problem(cluster)


def test_memcache_barrier_on_every_group():
    cluster = seeds.pd_pool_a3()
    cluster["groups"]["decode"]["memcache_dp_init_barrier"] = False
    assert "vllm_engine_groups.decode.memcache_dp_init_barrier: Memcache needs the barrier on every rank" in single_problem(cluster)


def test_pool_needs_lookup_ports_and_per_rank_launch():
    cluster = seeds.pd_pool_a2()
    del cluster["groups"]["prefill"]["lookup_rpc_port_base"]
    cluster["groups"]["decode"]["launch"] = "per_node"
    del cluster["groups"]["decode"]["hccl_port_range"]
    problems = problems_of(cluster)
    assert any("vllm_engine_groups.prefill.lookup_rpc_port_base: AscendStoreConnector needs a lookup port" in p for p in problems)
    assert any("vllm_engine_groups.decode.launch: each pool engine needs its own lookup port" in p for p in problems)


def test_cpu_ranks_get_no_devices_and_nixl_a_side_channel_each():
    plan = plan_cluster(cpu_pd(prefill={"tp_size": 4}))  # no device count limits a CPU node
    prefill = [p for p in plan["processes"] if p["role"] == "prefill"]
    assert [p["devices"] for p in plan["processes"]] == [[], [], []]
    assert [p["env"]["VLLM_NIXL_SIDE_CHANNEL_PORT"] for p in prefill] == ["5600", "5600"]  # vLLM adds the DP rank
    assert [r["nixl_side_channel_port"] for r in plan["ranks"] if r["role"] == "prefill"] == [5600, 5601]
    assert all("ASCEND_RT_VISIBLE_DEVICES" not in p["env"] and "CUDA_VISIBLE_DEVICES" not in p["env"] for p in plan["processes"])
    assert '"kv_buffer_device":"cpu"' in prefill[0]["kv_transfer_config"]


def test_nixl_side_channels_collide_with_another_port_of_the_host():
    cluster = cpu_pd()
    cluster["nodes"][1]["address"] = "192.0.2.90"  # decode on the prefill's machine: one machine, two hosts
    cluster["groups"]["decode"]["kv_port"] = 5601
    assert single_problem(cluster) == (
        "cluster cpu_pd, host box: vllm_engine_groups.prefill.kv_port: prefill rank 1 NIXL side channel (5601) overlaps "
        "decode rank 0 NIXL side channel of host box2 (5601). Fix: move one of them; also check vllm_engine_groups.decode.kv_port.")


def test_nixl_needs_a_side_channel_port_and_both_groups():
    cluster = cpu_pd()
    del cluster["groups"]["decode"]["kv_port"]
    assert "vllm_engine_groups.decode.kv_port: NixlConnector needs a side-channel base port" in single_problem(cluster)


def test_nixl_extra_config_reaches_every_engines_kv_transfer_config_and_a_misspelt_key_is_refused():
    cluster = cpu_pd()
    cluster["nixl_extra_config"] = {"kv_lease_duration": 300}
    plan = plan_cluster(cluster)
    assert all('"kv_connector_extra_config":{"kv_lease_duration":300}' in p["kv_transfer_config"] for p in plan["processes"])
    cluster["nixl_extra_config"] = {"kv_lease_durations": 300, "a_newer_nixl_option": 1}  # open schema: the latter kept
    problems = problems_of(cluster)
    assert any("vllm_engine_nixl_extra_config.kv_lease_durations: unknown key" in p and p.endswith("rename it to kv_lease_duration.")
               for p in problems)
    assert not any("a_newer_nixl_option" in p for p in problems)
