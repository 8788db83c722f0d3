# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Port and id rules over the computed plan: every bound port of every host once, engine ids and lookup ports
unique."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils import _metrics_relay as metrics_relay
from ansible_collections.llmops.inference.plugins.module_utils._plan_errors import Problem


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


def bound_ports(cluster, ranks, processes):
    """Every (host, space, low, high, owner, variable, reach, group) a process will bind; NPU ports are their own
    space; reach as above, group the DP group of a "group" port (else None)."""
    entries = []
    for process in processes:
        group = cluster.groups[process["instance"]]
        label = "%s %s" % (group.name, "rank %d" % process["dp_ranks"][0] if process["launch"] == "per_rank" else "engine")
        if process["api"]:
            var = "vllm_engine_api_port / %s" % group.variable("api_port")
            entries.append((process["host"], "host", process["port"], process["port"], label + " API", var, "api", None))
    for rank in ranks:
        entries += _rank_ports(cluster.groups[rank["instance"]], rank)
    for service in cluster.services:
        for index, port in enumerate(service.ports):
            variable = service.variables[index] if service.variables else "%s port" % service.name
            entries.append((service.host, "host", port, port, service.name, variable, _service_reach(service, variable), None))
    return entries


def _rank_ports(group, rank):
    host, label = rank["host"], "%s rank %d" % (group.name, rank["dp_rank"])
    entries = []
    if rank["dp_master"] and (rank["launch"] == "per_rank" or group.dp_size > 1):
        port = rank["dp_rpc_port"]
        entries.append((host, "host", port, port, label + " DP RPC", group.variable("dp_rpc_port"), "group", group.name))
    if rank["hccl_host_socket_port_range"]:
        low, high = (int(p) for p in rank["hccl_host_socket_port_range"].split("-"))
        var = group.variable("hccl_port_range")
        entries.append((host, "host", low, high, label + " HCCL host sockets", var, "group", group.name))
        entries.append((host, "npu", low, high, label + " HCCL NPU sockets", var, None, None))
    if rank["mooncake_ports"]:
        low, high = rank["mooncake_ports"]["side_channel"]
        var = group.variable("kv_port")
        entries.append((host, "host", low, high, label + " Mooncake side channel", var, "engines", None))
        control = rank["mooncake_ports"]["control"]
        entries.append((host, "host", control, control, label + " Mooncake control", var, "engines", None))
    if rank["nixl_side_channel_port"] is not None:
        port = rank["nixl_side_channel_port"]
        entries.append((host, "host", port, port, label + " NIXL side channel", group.variable("kv_port"), "engines", None))
    if rank["lookup_rpc_port"] is not None:
        port = rank["lookup_rpc_port"]
        entries.append((host, "host", port, port, label + " lookup RPC", group.variable("lookup_rpc_port_base"), "engines", None))
    return entries


def _service_reach(service, variable):
    if service.name == FRONT_DOOR_SERVICE:
        return "clients"
    if service.name == metrics_relay.SERVICE:
        return "monitoring"
    if variable.endswith("metrics_port"):
        return "metrics"
    return "etcd_peers" if variable.endswith("etcd_peer_port") else "pool"


def port_collisions(cluster, entries):
    """Overlapping intervals on one machine and space, found by a sweep (fast for thousands of ranks).
    Hosts with the same address are one machine: their ports are checked together."""
    problems = []
    address = {node.host: node.address for node in cluster.nodes}
    by_space = {}
    for entry in entries:
        by_space.setdefault((address.get(entry[0], entry[0]), entry[1]), []).append(entry)
    for (_machine, _space), items in sorted(by_space.items()):
        items.sort(key=lambda e: (e[2], e[3]))
        widest = None
        for item in items:
            if widest is not None and item[2] <= widest[3]:
                owner = widest[4] if widest[0] == item[0] else "%s of host %s" % (widest[4], widest[0])
                problems.append(Problem(
                    cluster.name, item[5], "%s (%s) overlaps %s (%s)" % (item[4], span(item), owner, span(widest)),
                    "move one of them; also check %s" % widest[5], host=item[0]))
            if widest is None or item[3] > widest[3]:
                widest = item
    return problems


def span(entry):
    return str(entry[2]) if entry[2] == entry[3] else "%d-%d" % (entry[2], entry[3])


def unique(cluster, items, field, group_field):
    problems = []
    between = " and between instances" if len(cluster.groups) > len(cluster.roles) else ""
    owner = {}
    for item in items:
        value = item[field]
        if value is None:
            continue
        rank = item["dp_rank"] if "dp_rank" in item else item["dp_ranks"][0]
        if value in owner:
            other = owner[value]
            problems.append(Problem(
                cluster.name, cluster.groups[item["instance"]].variable(group_field),
                "%s %s is also used by %s rank %s on %s" % (field, value, other[0], other[1], other[2]),
                "make %s unique per engine (include {dp_rank}, differ between prefill and decode%s)" % (field, between)
                if field == "engine_id" else "give prefill and decode%s lookup bases that do not overlap" % between,
                host=item["host"], rank=rank))
        else:
            owner[value] = (item["instance"], rank, item["host"])
    return problems
