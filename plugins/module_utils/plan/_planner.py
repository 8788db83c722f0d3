# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rank planner: a cluster description in, the per-DP-rank plan out.

It does by computation what the seeds do by hand with ``launch_online_dp.py`` and the
run_p.sh / run_d.sh templates (004 5.2, 5.3, 5.4): devices, ports, engine ids, HCCL
port ranges, lookup ports and the ``--kv-transfer-config`` JSON of every process.
Pure Python, no Ansible import: the module and the tests both call ``plan_cluster``.
"""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.plan import _plan_rules as rules
from ansible_collections.llmops.inference.plugins.module_utils.plan._engine_args import engine_arg_problems
from ansible_collections.llmops.inference.plugins.module_utils.plan._kv_config import compact_json, kv_transfer_config
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError, Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster, Group, InputError, Node, parse_cluster
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import (
    BoundPort,
    Endpoint,
    MooncakePorts,
    Plan,
    PortEntry,
    Process,
    ProxyEndpoints,
    Rank,
)
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_ports import bound_ports
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_ucm import ucm_config_unknown

# Order in which roles are planned and listed; the start order is start_waves().
ROLE_START_ORDER = ("decode", "prefill", "colocated")


def start_waves(cluster: Cluster) -> list[list[str]]:
    """Engine roles grouped by start wave, in the seeds' order.

    004 5.3 starts prefill and decode together ("各组的第一个节点、其余节点、代理": the first node of
    each group, the others right after, then the proxy), so both groups initialise in parallel.
    004 5.4 starts a pool deployment "pool service, decode, prefill, proxy": decode must be ready
    (and, with Memcache, have reserved its DDR pool) before prefill starts.
    """
    roles = [r for r in ROLE_START_ORDER if r in cluster.roles]
    if cluster.pool is not None:
        return [[role] for role in roles]
    return [roles]


def _mooncake_ports(group: Group, kv_port: int, dp_rank: int) -> MooncakePorts:
    """MooncakeConnector V2 per-rank ports (vllm-ascend's mooncake_connector_v2: side channel kv_port + dp_rank * tp, worker + tp_rank)."""
    side_channel = kv_port + dp_rank * group.tp_size
    return {
        "side_channel": [side_channel, side_channel + group.tp_size - 1],
        "control": kv_port + group.tp_size * group.dp_size + dp_rank,
    }


def _rank_plan(cluster: Cluster, group: Group, node: Node, local_index: int, dp_rank: int, dp_address: str) -> Rank:
    first_device = node.device_offset + local_index * group.tp_size
    devices = list(range(first_device, first_device + group.tp_size)) if cluster.accelerators else []
    port = node.api_port if node.api_port is not None else group.api_port
    if group.launch == "per_rank":
        port += local_index  # launch_online_dp.py: --vllm-start-port + i
    rank: Rank = {
        "cluster": cluster.name,
        "role": group.role,
        "instance": group.name,
        "host": node.host,
        "address": node.address,
        "dp_rank": dp_rank,
        "local_index": local_index,
        "devices": devices,
        "visible_devices_var": cluster.visible_var,
        "visible_devices": ",".join(str(d) for d in devices),
        "port": port,
        "api": not node.headless,
        "headless": node.headless,
        "dp_master": dp_rank == 0,
        "dp_address": dp_address,
        "dp_rpc_port": group.dp_rpc_port,
        "launch": group.launch,
        "engine_id": group.engine_id_template.format(dp_rank=dp_rank, instance=group.instance or group.role)
        if group.engine_id_template else None,
        "lookup_rpc_port": None,
        "hccl_host_socket_port_range": None,
        "hccl_npu_socket_port_range": None,
        "mooncake_ports": None,
        "nixl_side_channel_port": None,
    }
    if cluster.pool is not None and group.lookup_rpc_port_base is not None:
        rank["lookup_rpc_port"] = group.lookup_rpc_port_base + dp_rank
    if group.hccl_port_range is not None:  # as HCCL_HOST_SOCKET_PORT_RANGE takes it, "low-high"
        rank["hccl_host_socket_port_range"] = rank["hccl_npu_socket_port_range"] = "%d-%d" % group.hccl_port_range.ports(dp_rank)
    if cluster.connector == "mooncake" and group.kv_port is not None:
        rank["mooncake_ports"] = _mooncake_ports(group, group.kv_port, dp_rank)
    if cluster.connector == "nixl" and group.kv_port is not None:
        # NixlConnector's handshake listener: VLLM_NIXL_SIDE_CHANNEL_PORT (the group's kv_port) plus the DP rank
        rank["nixl_side_channel_port"] = group.kv_port + dp_rank
    return rank


def _process_plan(cluster: Cluster, group: Group, node: Node, ranks: list[Rank]) -> Process:
    """One ``vllm serve``: a single rank (per_rank) or all local ranks of a node (per_node)."""
    first = ranks[0]
    name_rank = ("-dp%d" % first["dp_rank"]) if group.launch == "per_rank" else ""
    devices = [d for r in ranks for d in r["devices"]]
    kv_config = kv_transfer_config(cluster, group, first["dp_rank"], first["engine_id"])
    process: Process = {
        "key": "%s%s" % (group.name, name_rank),
        "role": group.role,
        "instance": group.name,
        "image": group.image,
        "host": node.host,
        "address": node.address,
        "nic": node.nic,
        "launch": group.launch,
        "dp_ranks": [r["dp_rank"] for r in ranks],
        "devices": devices,
        "port": first["port"],
        "api": first["api"],
        "api_server_count": node.api_server_count,
        "engine_id": first["engine_id"],
        "kv_transfer_config": compact_json(kv_config) if kv_config is not None else None,
        "args": _topology_args(cluster, group, node, first, len(ranks)),
        "env": _topology_env(cluster, group, node, first, devices),
        # facts the launch spec's meta carries (_spec_meta), so no consumer reads them back from the args
        "dp_size": group.dp_size,
        # the NPUs the plan hands the process through ASCEND_RT_VISIBLE_DEVICES (none where the seed sets none)
        "npus": devices if cluster.ascend and group.set_visible_devices else [],
        "dp_group": "%s:%d" % (first["dp_address"], group.dp_rpc_port) if _has_coordinator(group) else None,
        "ascend_direct": cluster.connector == "mooncake" and bool(cluster.mooncake_extra_config.get("use_ascend_direct")),
    }
    return process


def _has_coordinator(group: Group) -> bool:
    """Whether the group's processes meet at a DP coordinator (--data-parallel-address and -rpc-port)."""
    return group.launch == "per_rank" or group.dp_size > 1


def _topology_args(cluster: Cluster, group: Group, node: Node, first: Rank, local_ranks: int) -> list[str]:
    """The flags the launcher and the node scripts compute (004 5.2 / 5.3), in the seeds' order."""
    args = ["--host", "0.0.0.0", "--port", str(first["port"])]
    if node.headless:
        args.append("--headless")
    args += ["--data-parallel-size", str(group.dp_size)]
    if group.launch == "per_rank":
        args += ["--data-parallel-rank", str(first["dp_rank"])]
    elif group.dp_size > 1:
        args += ["--data-parallel-size-local", str(local_ranks)]
        if first["dp_rank"] or cluster.start_rank_zero:
            args += ["--data-parallel-start-rank", str(first["dp_rank"])]
    if _has_coordinator(group):
        args += ["--data-parallel-address", first["dp_address"], "--data-parallel-rpc-port", str(group.dp_rpc_port)]
    args += ["--tensor-parallel-size", str(group.tp_size)]
    return args


def _topology_env(cluster: Cluster, group: Group, node: Node, first: Rank, devices: list[int]) -> dict[str, str]:
    env: dict[str, str] = {}
    for var in cluster.network_env:
        env[var] = node.address if var in ("HCCL_IF_IP", "VLLM_HOST_IP") else (node.nic or "")
    if first["hccl_host_socket_port_range"] is not None and first["hccl_npu_socket_port_range"] is not None:
        env["HCCL_HOST_SOCKET_PORT_RANGE"] = first["hccl_host_socket_port_range"]
        env["HCCL_NPU_SOCKET_PORT_RANGE"] = first["hccl_npu_socket_port_range"]
    if cluster.connector == "nixl" and group.kv_port is not None:
        # NixlConnector: where decode reaches this engine's handshake listener (it adds the DP rank to the port)
        env["VLLM_NIXL_SIDE_CHANNEL_HOST"] = node.address
        env["VLLM_NIXL_SIDE_CHANNEL_PORT"] = str(group.kv_port)
    if node.pythonhashseed is not None:  # the same on every node of a KV pool (004 5.4)
        env["PYTHONHASHSEED"] = node.pythonhashseed
    # NVIDIA containers get their GPUs from a device request instead (000 3.1).
    if cluster.ascend and group.set_visible_devices and cluster.visible_var is not None:
        env[cluster.visible_var] = ",".join(str(d) for d in devices)
    return env


def _proxy_endpoints(processes: list[Process]) -> ProxyEndpoints:
    """Every prefill API process and every decode rank (the proxy must list each decode rank)."""
    endpoints: ProxyEndpoints = {"prefill": [], "decode": []}
    for process in processes:
        if process["api"] and process["role"] in ("prefill", "decode"):
            endpoint: Endpoint = {"host": process["host"], "address": process["address"], "port": process["port"]}
            endpoints["prefill" if process["role"] == "prefill" else "decode"].append(endpoint)
    return endpoints


def _ports_by_host(entries: list[BoundPort]) -> dict[str, list[PortEntry]]:
    ports: dict[str, list[PortEntry]] = {}
    for bound in sorted(entries, key=lambda b: (b.host, b.entry["space"], b.entry["low"])):
        ports.setdefault(bound.host, []).append(bound.entry)
    return ports


def build_plan(cluster: Cluster) -> Plan:
    """Compute the plan of a parsed Cluster; raise PlanError listing every broken rule."""
    problems = rules.structure_problems(cluster) + engine_arg_problems(cluster)
    if problems:
        raise PlanError(problems)
    starts = cluster.rank_starts()
    ranks: list[Rank] = []
    processes: list[Process] = []
    for group in (g for role in ROLE_START_ORDER for g in cluster.groups_of(role)):
        nodes = cluster.nodes_of(group)
        master = next(n for n in nodes if starts[n.host] == 0)
        dp_address = group.dp_address or master.address
        for node in nodes:
            node_ranks = [
                _rank_plan(cluster, group, node, i, starts[node.host] + i, dp_address) for i in range(node.local_ranks)
            ]
            ranks += node_ranks
            chunks = [[r] for r in node_ranks] if group.launch == "per_rank" else [node_ranks]
            processes += [_process_plan(cluster, group, node, chunk) for chunk in chunks]
    bound = bound_ports(cluster, ranks, processes)
    problems = rules.plan_problems(cluster, ranks, processes, bound)
    if problems:
        raise PlanError(problems)
    plan: Plan = {
        "cluster": cluster.name,
        "hardware": cluster.hardware,
        "kv_pool": cluster.pool.backend if cluster.pool is not None else None,
        "start_waves": start_waves(cluster),
        "ranks": ranks,
        "processes": processes,
        "ports": _ports_by_host(bound),
        "proxy": _proxy_endpoints(processes),
        # every inventory host's machine, the retired ones' too: hosts on one machine share its containers
        "machines": {node.host: node.address for node in cluster.nodes + cluster.retired},
        "retired": [node.host for node in cluster.retired],
    }
    if cluster.pool is not None and cluster.pool.store:
        plan["kv_pool_store"] = cluster.pool.store  # etcd of HA masters, started before them
    return plan


def plan_cluster(raw: dict[str, t.Any]) -> Plan:
    """Parse a plain-dict cluster description and return its plan (see build_plan).

    Unknown keys (a misspelt group field, say) are reported with every other structural problem.
    """
    unknown: list[tuple[str, str, str]] = []
    cluster = parse_cluster(raw, unknown)
    problems = [Problem(cluster.name, variable, message, fix) for variable, message, fix in unknown]
    problems += ucm_config_unknown(cluster)
    if problems:
        raise PlanError(problems + rules.structure_problems(cluster))
    return build_plan(cluster)


def plan_result(raw: dict[str, t.Any]) -> dict[str, t.Any]:
    """engine_plan's result (module and action plugin alike): the plan, or a failure naming every problem."""
    try:
        return {"changed": False, "plan": plan_cluster(raw)}
    except PlanError as err:
        return {"failed": True, "msg": "The cluster plan breaks %d rule(s):\n%s" % (len(err.problems), err),
                "problems": [str(p) for p in err.problems]}
    except InputError as err:
        return {"failed": True, "msg": "The cluster description is malformed: %s" % err, "problems": [str(err)]}
