# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Topology rules: nodes and their groups, DP ranks and the DP master, one machine's several hosts, service
hosts, engine id templates and hand-set visible devices."""

from __future__ import annotations

import ipaddress
import string
from collections.abc import Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster, Group, Node
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import Process


def group_var(group: Group, field: str) -> str:
    return group.variable(field)


def _identity_problems(cluster: Cluster) -> list[Problem]:
    """Each node needs a real address (it becomes HCCL_IF_IP, VLLM_HOST_IP, the DP address) and,
    when the network env names interfaces, its NIC."""
    problems: list[Problem] = []
    c = cluster.name
    wants_nic = [var for var in cluster.network_env if var not in ("HCCL_IF_IP", "VLLM_HOST_IP")]
    for node in cluster.nodes:
        try:
            ipaddress.ip_address(node.address)
        except ValueError:
            problems.append(Problem(
                c, "ansible_host", "address %r is not an IP address; it becomes HCCL_IF_IP, VLLM_HOST_IP and the DP address "
                "(a host without ansible_host gets its inventory name)" % node.address,
                "set ansible_host (or vllm_engine_node_ip) to the address the other nodes reach this host on", host=node.host))
        if wants_nic and not node.nic:
            problems.append(Problem(
                c, "vllm_engine_nic", "%s need the name of the NIC that carries %s, and none is set" % (", ".join(wants_nic), node.address),
                "set vllm_engine_nic for this host (the seeds' nic_name)", host=node.host))
    return problems


def shared_machine_problems(cluster: Cluster) -> list[Problem]:
    """Hosts with one address are one machine (P and D on one A3, say): their devices must not overlap."""
    problems: list[Problem] = []
    if not cluster.accelerators:  # CPU engines share the machine's cores: nothing to share out
        return problems
    by_address: dict[str, list[tuple[Node, int, int]]] = {}
    for node in cluster.nodes:
        group = cluster.group_of(node)
        if group is not None:
            first = node.device_offset
            by_address.setdefault(node.address, []).append((node, first, first + node.local_ranks * group.tp_size - 1))
    for address, nodes in by_address.items():
        for index, (node, low, high) in enumerate(nodes):
            for other, other_low, other_high in nodes[:index]:
                if low <= other_high and other_low <= high:
                    problems.append(Problem(
                        cluster.name, "vllm_engine_device_offset",
                        "devices %d-%d overlap devices %d-%d of host %s, which has the same address %s (one machine)"
                        % (low, high, other_low, other_high, other.host, address),
                        "give each host its own ansible_host, or, if they are one machine, set vllm_engine_device_offset "
                        "so their devices do not overlap", host=node.host))
    return problems


def _service_host_problems(cluster: Cluster) -> list[Problem]:
    hosts = [node.host for node in cluster.nodes]
    retired = [node.host for node in cluster.retired]
    return [Problem(cluster.name, service.host_variable or "%s host" % service.name,
                    "%r is %s" % (service.host, "retired (vllm_engine_retired), so it runs nothing of the cluster"
                                  if service.host in retired else "neither a host of the cluster nor the address of one"),
                    "name one of %s (or leave it empty for the first prefill host)" % ", ".join(hosts))
            for service in cluster.services if service.host not in hosts]


def node_group_problems(cluster: Cluster) -> list[Problem]:
    problems = _identity_problems(cluster) + _service_host_problems(cluster)
    c = cluster.name
    seen = set()
    for node in cluster.nodes:
        if node.host in seen:
            problems.append(Problem(c, "inventory", "host is listed twice", "list each host once", host=node.host))
        seen.add(node.host)
        if node.role not in cluster.roles:
            problems.append(Problem(
                c, "vllm_engine_role", "role %s has no entry in vllm_engine_groups" % node.role,
                "add vllm_engine_groups.%s or set vllm_engine_role to one of %s"
                % (node.role, ", ".join(cluster.roles)), host=node.host))
        elif cluster.group_of(node) is None:
            declared = [g.instance for g in cluster.groups_of(node.role) if g.instance is not None]
            problems.append(Problem(
                c, "vllm_engine_instance", "%s is not an instance of role %s (its instances: %s)"
                % (node.instance, node.role, ", ".join(declared) or "none but the role's own"),
                "declare vllm_engine_instances.%s.%s, or set vllm_engine_instance to one of those (empty for the role's own)"
                % (node.role, node.instance), host=node.host))
        if node.local_ranks < 1:
            problems.append(Problem(c, "vllm_engine_local_ranks", "must be at least 1, got %d" % node.local_ranks,
                                    "give the number of DP ranks this node runs", host=node.host))
    for group in cluster.groups.values():
        if group.instance is not None and not cluster.nodes_of(group):
            problems.append(Problem(c, "vllm_engine_instances.%s.%s" % (group.role, group.instance),
                                    "no host has vllm_engine_role %s and vllm_engine_instance %s" % (group.role, group.instance),
                                    "set vllm_engine_instance: %s on the hosts of this instance, or remove it" % group.instance))
        elif not any(n.role == group.role for n in cluster.nodes):
            problems.append(Problem(c, "vllm_engine_groups.%s" % group.role, "no host has vllm_engine_role %s" % group.role,
                                    "add hosts for this role or remove the group"))
        elif not cluster.nodes_of(group):
            problems.append(Problem(c, "vllm_engine_instance", "every host of role %s names an instance, so the role's own "
                                    "(its first, vllm_engine_groups.%s) has none" % (group.role, group.role),
                                    "leave vllm_engine_instance unset on the hosts of the role's first instance"))
        for field in ("dp_size", "tp_size"):
            if getattr(group, field) < 1:
                problems.append(Problem(c, group_var(group, field), "must be at least 1", "set a positive size"))
    return problems


def rank_problems(cluster: Cluster) -> list[Problem]:
    problems: list[Problem] = []
    c = cluster.name
    starts = cluster.rank_starts()
    for group in cluster.groups.values():
        nodes = cluster.nodes_of(group)
        if not nodes:
            continue  # node_group_problems names it
        owner: dict[int, str] = {}
        for node in nodes:
            used = node.device_offset + node.local_ranks * group.tp_size
            if cluster.accelerators and used > cluster.devices_per_node:
                problems.append(Problem(
                    c, "vllm_engine_local_ranks", "%d local ranks x tp_size %d from device %d need %d devices, the node has %d"
                    % (node.local_ranks, group.tp_size, node.device_offset, used, cluster.devices_per_node),
                    "lower vllm_engine_local_ranks or %s, or set vllm_engine_devices_per_node to the real count"
                    % group_var(group, "tp_size"), host=node.host))
            for rank in range(starts[node.host], starts[node.host] + node.local_ranks):
                if rank >= group.dp_size:
                    problems.append(Problem(
                        c, "vllm_engine_rank_start", "rank %d is outside 0..%d of %s" % (rank, group.dp_size - 1, group_var(group, "dp_size")),
                        "lower vllm_engine_rank_start / vllm_engine_local_ranks or raise dp_size", host=node.host, rank=rank))
                elif rank in owner:
                    problems.append(Problem(
                        c, "vllm_engine_rank_start", "rank %d is already run by host %s" % (rank, owner[rank]),
                        "give each node of %s a rank_start after the previous node's last rank" % _called(group),
                        host=node.host, rank=rank))
                else:
                    owner[rank] = node.host
            if node.headless and node.api_server_count is not None:
                problems.append(Problem(c, "vllm_engine_api_server_count", "a headless node serves no API",
                                        "remove vllm_engine_api_server_count or vllm_engine_headless", host=node.host))
        if group.launch == "per_node" and group.hccl_port_range is not None:
            problems.append(Problem(c, group_var(group, "hccl_port_range"),
                                    "per-rank HCCL port ranges need one process per rank",
                                    "set %s to per_rank or drop hccl_port_range" % group_var(group, "launch")))
        missing = [r for r in range(group.dp_size) if r not in owner]
        if missing:
            problems.append(Problem(c, group_var(group, "dp_size"), "DP ranks %s are run by no host" % missing,
                                    "add nodes or vllm_engine_local_ranks so that ranks 0..%d are each run once" % (group.dp_size - 1)))
            continue
        master = next(n for n in nodes if starts[n.host] == 0)
        if master.headless:
            problems.append(Problem(c, "vllm_engine_headless", "the DP master (rank 0) of %s must serve the API" % _called(group),
                                    "set vllm_engine_headless: false on the node that runs rank 0", host=master.host, rank=0))
        if group.dp_address is not None and group.dp_address != master.address:
            problems.append(Problem(
                c, group_var(group, "dp_address"), "%s is not the address %s of the DP master %s"
                % (group.dp_address, master.address, master.host),
                "remove dp_address (it defaults to the rank-0 node) or set it to %s" % master.address, rank=0))
        problems += _engine_id_template_problems(cluster, group)
    return problems


def _called(group: Group) -> str:
    """How messages name a DP group: its role, or the instance of its role."""
    return "role %s" % group.role if group.instance is None else "instance %s of role %s" % (group.instance, group.role)


def _engine_id_template_problems(cluster: Cluster, group: Group) -> list[Problem]:
    template = group.engine_id_template
    if template is None:
        return []
    fields = {part[1] for part in string.Formatter().parse(template) if part[1] is not None}
    var = group_var(group, "engine_id_template")
    if fields - {"dp_rank", "instance"}:
        return [Problem(cluster.name, var, "only {dp_rank} and {instance} may be substituted, got %s"
                        % sorted(fields - {"dp_rank", "instance"}), "write the template like glm53-flash-%s-dp{dp_rank}" % group.role)]
    return []


def visible_devices_problems(cluster: Cluster, processes: Sequence[Process]) -> list[Problem]:
    """The devices variable set by hand (vllm_engine_env / _role_env) must say what the plan gives
    each process: another value starts the ranks on other NPUs, or on ones the node lacks."""
    var = cluster.visible_var
    problems: list[Problem] = []
    if var is None:
        return problems
    for role in sorted({p["role"] for p in processes}):
        role_env = cluster.role_env.get(role) or {}
        if var in role_env:
            where, value = "vllm_engine_role_env.%s.%s" % (role, var), role_env[var]
        elif var in cluster.env:
            where, value = "vllm_engine_env.%s" % var, cluster.env[var]
        else:
            continue
        if value is None:
            continue
        if not cluster.ascend:
            problems.append(Problem(
                cluster.name, where, "%s=%s, but the GPUs come from the container's device request and are numbered from 0 "
                "inside it" % (var, value), "remove it: the plan requests each process's GPUs"))
            continue
        wrong = [p for p in processes if p["role"] == role and str(value) != ",".join(str(d) for d in p["devices"])]
        if wrong:
            first = wrong[0]
            problems.append(Problem(
                cluster.name, where, "%s=%s, but the plan gives %s rank %s devices %s%s" % (
                    var, value, role, first["dp_ranks"][0], ",".join(str(d) for d in first["devices"]),
                    " (and %d more processes differ)" % (len(wrong) - 1) if len(wrong) > 1 else ""),
                "remove it: the plan sets it per rank from tp_size, vllm_engine_local_ranks and vllm_engine_device_offset",
                host=first["host"]))
    return problems
