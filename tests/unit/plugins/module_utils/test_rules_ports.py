# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Port and id rules, one test per rule: break a seed cluster one way, read the message."""

from __future__ import annotations

import seed_clusters as seeds
from rule_cases import problems_of, single_problem

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def test_colliding_api_ports_on_one_host():
    cluster = seeds.pd_a3()
    cluster["groups"]["decode"]["api_port"] = 9081
    plan_cluster(cluster)  # decode on another machine: no collision
    cluster = seeds.pd_a3()
    cluster["services"][0]["ports"] = [9082]
    assert single_problem(cluster) == (
        "cluster pd_a3, host pd_a3_prefill: pd_proxy port: pd_proxy (9082) overlaps prefill rank 1 API (9082). "
        "Fix: move one of them; also check vllm_engine_api_port / vllm_engine_groups.prefill.api_port.")


def test_hccl_ranges_overlapping_between_ranks():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["hccl_port_range"]["stride"] = 50
    problems = problems_of(cluster)
    assert any("decode rank 1 HCCL host sockets (60050-60149) overlaps decode rank 0 HCCL host sockets (60000-60099)" in p for p in problems)
    assert any("HCCL NPU sockets" in p for p in problems)


def test_lookup_ports_collide_with_dp_rpc():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["prefill"]["lookup_rpc_port_base"] = 12321
    problem = single_problem(cluster)
    assert "host pd_a2_p0" in problem and "prefill rank 0 DP RPC (12321)" in problem and "lookup RPC" in problem


def test_engine_id_must_be_unique():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["decode"]["engine_id_template"] = "glm53-flash-prefill-dp{dp_rank}"
    problems = problems_of(cluster)
    assert problems[0] == (
        "cluster pd_pool_a2, host pd_a2_p0, rank 0: vllm_engine_groups.prefill.engine_id_template: engine_id glm53-flash-prefill-dp0 "
        "is also used by decode rank 0 on pd_a2_d0. Fix: make engine_id unique per engine (include {dp_rank}, differ between "
        "prefill and decode).")


def test_engine_id_template_fields():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["decode"]["engine_id_template"] = "decode-{rank}"
    assert "vllm_engine_groups.decode.engine_id_template: only {dp_rank} and {instance} may be substituted" in problems_of(cluster)[0]


def test_hccl_ranges_need_per_rank_processes():
    cluster = seeds.dp_a2()
    cluster["groups"]["colocated"]["hccl_port_range"] = {"base": 60000}
    assert "per-rank HCCL port ranges need one process per rank" in single_problem(cluster)


def test_hccl_ranges_collide_with_kv_ports():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["hccl_port_range"]["base"] = 30050
    problem = problems_of(cluster)[0]
    assert "host pd_a2_d0" in problem and "HCCL host sockets" in problem and "Mooncake" in problem


def test_pool_service_port_collides():
    cluster = seeds.pd_pool_a3()
    cluster["services"][1]["ports"] = [5000, 6000, 9081]
    assert "memcache_meta (9081) overlaps prefill rank 0 API (9081)" in single_problem(cluster)


def test_lookup_ports_must_be_unique():
    cluster = seeds.pd_pool_a3()
    cluster["groups"]["decode"]["lookup_rpc_port_base"] = 37001
    problems = problems_of(cluster)
    assert any("lookup_rpc_port 37001 is also used by" in p for p in problems)
