# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Properties over random clusters: an accepted plan never binds a port twice on a host.

Ports are recounted here from the rank data, one integer at a time, independently of the
planner's own interval sweep.
"""

from __future__ import annotations

import collections

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster

PORTS = st.integers(min_value=1024, max_value=64000)


@st.composite
def clusters(draw):
    hardware = draw(st.sampled_from(["a2", "a3"]))
    devices = 8 if hardware == "a2" else 16
    tp_choices = [t for t in (1, 2, 4, 8, 16) if t <= devices]
    groups, nodes = {}, []
    pool = draw(st.booleans())
    hosts = ["h%d" % i for i in range(draw(st.integers(min_value=2, max_value=6)))]
    for role in ("prefill", "decode"):
        tp = draw(st.sampled_from(tp_choices))
        per_node = devices // tp
        role_hosts = draw(st.lists(st.sampled_from(hosts), min_size=1, max_size=3, unique=True))
        rank = 0
        for host in role_hosts:
            local = draw(st.integers(min_value=1, max_value=per_node))
            nodes.append({"host": "%s_%s" % (host, role), "address": "192.0.2.%d" % (hosts.index(host) + 1),
                          "role": role, "local_ranks": local, "rank_start": rank, "pythonhashseed": "0",
                          "tenant_id": "default", "headless": draw(st.booleans()) and rank > 0})
            rank += local
        group = {"dp_size": rank, "tp_size": tp, "api_port": draw(PORTS), "dp_rpc_port": draw(PORTS), "kv_port": draw(PORTS)}
        if draw(st.booleans()):
            group["hccl_port_range"] = {"base": draw(PORTS), "stride": draw(st.sampled_from([50, 100, 200])), "size": 100}
        if pool:
            group["lookup_rpc_port_base"] = draw(PORTS)
            group["engine_id_template"] = role + "-dp{dp_rank}"
        groups[role] = group
    cluster = {"name": "prop", "hardware": hardware, "connector": "mooncake", "groups": groups, "nodes": nodes,
               "services": [{"name": "pd_proxy", "host": nodes[0]["host"], "ports": [draw(PORTS)]}]}
    if pool:
        cluster["pool"] = {"backend": draw(st.sampled_from(["mooncake", "memcache"])), "world_size": 1024}
    return cluster


def _recount(cluster, plan):
    """host -> Counter of every port bound, from the rank data; NPU socket ranges counted apart."""
    used = collections.defaultdict(collections.Counter)
    for process in plan["processes"]:
        if process["api"]:
            used[process["host"]][process["port"]] += 1
    for rank in plan["ranks"]:
        host = rank["host"]
        if rank["dp_master"]:
            used[host][rank["dp_rpc_port"]] += 1
        if rank["hccl_host_socket_port_range"]:
            low, high = map(int, rank["hccl_host_socket_port_range"].split("-"))
            for port in range(low, high + 1):
                used[host][port] += 1
                used[host + "/npu"][port] += 1
        low, high = rank["mooncake_ports"]["side_channel"]
        for port in range(low, high + 1):
            used[host][port] += 1
        used[host][rank["mooncake_ports"]["control"]] += 1
        if rank["lookup_rpc_port"] is not None:
            used[host][rank["lookup_rpc_port"]] += 1
    for service in cluster["services"]:
        for port in service["ports"]:
            used[service["host"]][port] += 1
    return used


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_accepted_plans_never_bind_a_port_twice(cluster):
    try:
        plan = plan_cluster(cluster)
    except PlanError as err:
        assert err.problems  # a rejection always says why
        return
    for host, counter in _recount(cluster, plan).items():
        twice = [port for port, count in counter.items() if count > 1]
        assert not twice, (host, twice)
    assert len({r["engine_id"] for r in plan["ranks"]}) in (1, len(plan["ranks"]))


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_rejections_name_the_cluster_and_a_fix(cluster):
    try:
        plan_cluster(cluster)
    except PlanError as err:
        for problem in err.problems:
            assert str(problem).startswith("cluster prop") and ". Fix: " in str(problem)
