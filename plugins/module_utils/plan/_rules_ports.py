# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Port and id rules over the computed plan: every bound port of every host once, engine ids and lookup ports
unique."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster, Group, Service
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import BoundPort, PortEntry, Process, Rank
from ansible_collections.llmops.inference.plugins.module_utils.services import _metrics_relay as metrics_relay

# Who a port is for (the host firewall's sources, the plan's "reach" of each port):
#   clients     the front door (the PD proxy): the client networks
#   api         an engine's API (also its /metrics): the front door's hosts and the hosts verify runs from
#   group       a DP group's own traffic (DP RPC, HCCL host sockets): the hosts of that group ("group" names it)
#   engines     the KV transfer between engines (Mooncake and NIXL side channels, lookup RPC): every engine's host
#   pool        a KV pool service (the Mooncake master's RPC, etcd's client port, Memcache): the cluster's nodes
#   etcd_peers  etcd's peer port: its members
#   metrics     a service's metrics port: the cluster's hosts (the metrics relay among them)
#   monitoring  the metrics relay (GET /metrics only): the monitoring networks
#   None        a port no host firewall sees (the NPUs' own sockets)
FRONT_DOOR_SERVICE = "pd_proxy"


def bound(host: str, space: str, low: int, high: int, owner: str, variable: str, reach: str | None, group: str | None) -> BoundPort:
    return BoundPort(host, PortEntry(space=space, low=low, high=high, owner=owner, variable=variable, reach=reach, group=group))


def bound_ports(cluster: Cluster, ranks: list[Rank], processes: list[Process]) -> list[BoundPort]:
    """Every port a process will bind; NPU ports are their own space; reach as above."""
    entries: list[BoundPort] = []
    for process in processes:
        group = cluster.groups[process["instance"]]
        label = "%s %s" % (group.name, "rank %d" % process["dp_ranks"][0] if process["launch"] == "per_rank" else "engine")
        if process["api"]:
            var = "vllm_engine_api_port / %s" % group.variable("api_port")
            entries.append(bound(process["host"], "host", process["port"], process["port"], label + " API", var, "api", None))
    for rank in ranks:
        entries += _rank_ports(cluster.groups[rank["instance"]], rank)
    for service in cluster.services:
        for index, port in enumerate(service.ports):
            variable = service.variables[index] if service.variables else "%s port" % service.name
            entries.append(bound(service.host, "host", port, port, service.name, variable, _service_reach(service, variable), None))
    return entries


def _rank_ports(group: Group, rank: Rank) -> list[BoundPort]:
    host, label = rank["host"], "%s rank %d" % (group.name, rank["dp_rank"])
    entries: list[BoundPort] = []
    if rank["dp_master"] and (rank["launch"] == "per_rank" or group.dp_size > 1):
        port = rank["dp_rpc_port"]
        entries.append(bound(host, "host", port, port, label + " DP RPC", group.variable("dp_rpc_port"), "group", group.name))
    if group.hccl_port_range is not None:
        low, high = group.hccl_port_range.ports(rank["dp_rank"])
        var = group.variable("hccl_port_range")
        entries.append(bound(host, "host", low, high, label + " HCCL host sockets", var, "group", group.name))
        entries.append(bound(host, "npu", low, high, label + " HCCL NPU sockets", var, None, None))
    if rank["mooncake_ports"]:
        low, high = rank["mooncake_ports"]["side_channel"]
        var = group.variable("kv_port")
        entries.append(bound(host, "host", low, high, label + " Mooncake side channel", var, "engines", None))
        control = rank["mooncake_ports"]["control"]
        entries.append(bound(host, "host", control, control, label + " Mooncake control", var, "engines", None))
    if rank["nixl_side_channel_port"] is not None:
        port = rank["nixl_side_channel_port"]
        entries.append(bound(host, "host", port, port, label + " NIXL side channel", group.variable("kv_port"), "engines", None))
    if rank["lookup_rpc_port"] is not None:
        port = rank["lookup_rpc_port"]
        entries.append(bound(host, "host", port, port, label + " lookup RPC", group.variable("lookup_rpc_port_base"), "engines", None))
    return entries


def _service_reach(service: Service, variable: str) -> str:
    if service.name == FRONT_DOOR_SERVICE:
        return "clients"
    if service.name == metrics_relay.SERVICE:
        return "monitoring"
    if variable.endswith("metrics_port"):
        return "metrics"
    return "etcd_peers" if variable.endswith("etcd_peer_port") else "pool"


def span(entry: Mapping[str, t.Any]) -> str:
    """A port entry's interval as the messages write it: 8001, or 30000-30099."""
    return str(entry["low"]) if entry["low"] == entry["high"] else "%d-%d" % (entry["low"], entry["high"])


def port_collisions(cluster: Cluster, entries: list[BoundPort]) -> list[Problem]:
    """Overlapping intervals on one machine and space, found by a sweep (fast for thousands of ranks).
    Hosts with the same address are one machine: their ports are checked together."""
    problems = []
    address = {node.host: node.address for node in cluster.nodes}
    by_space: dict[tuple[str, str], list[BoundPort]] = {}
    for bound_port in entries:
        by_space.setdefault((address.get(bound_port.host, bound_port.host), bound_port.entry["space"]), []).append(bound_port)
    for (_machine, _space), items in sorted(by_space.items()):
        items.sort(key=lambda b: (b.entry["low"], b.entry["high"]))
        widest: BoundPort | None = None
        for item in items:
            this = item.entry
            if widest is not None and this["low"] <= widest.entry["high"]:
                other = widest.entry
                owner = other["owner"] if widest.host == item.host else "%s of host %s" % (other["owner"], widest.host)
                problems.append(Problem(
                    cluster.name, this["variable"], "%s (%s) overlaps %s (%s)" % (this["owner"], span(this), owner, span(other)),
                    "move one of them; also check %s" % other["variable"], host=item.host))
            if widest is None or this["high"] > widest.entry["high"]:
                widest = item
    return problems


def unique(cluster: Cluster, owners: Sequence[tuple[str | int | None, str, int, str]], field: str, group_field: str) -> list[Problem]:
    """Problems for each value that two owners share; an owner is (value, instance, DP rank, host): an engine id of
    a process, a lookup port of a rank."""
    problems = []
    between = " and between instances" if len(cluster.groups) > len(cluster.roles) else ""
    first: dict[str | int, tuple[str, int, str]] = {}
    for value, instance, rank, host in owners:
        if value is None:
            continue
        if value in first:
            other = first[value]
            problems.append(Problem(
                cluster.name, cluster.groups[instance].variable(group_field),
                "%s %s is also used by %s rank %s on %s" % (field, value, other[0], other[1], other[2]),
                "make %s unique per engine (include {dp_rank}, differ between prefill and decode%s)" % (field, between)
                if field == "engine_id" else "give prefill and decode%s lookup bases that do not overlap" % between,
                host=host, rank=rank))
        else:
            first[value] = (instance, rank, host)
    return problems
