# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules the seeds state, checked before any host is touched.

``structure_problems`` needs only the description; ``plan_problems`` needs the computed
ranks (ports, ids). Each returns a list of Problem, empty when the cluster is sound.
"""

from __future__ import annotations

import ipaddress
import string

from ansible_collections.llmops.inference.plugins.module_utils._kv_config import EXPECTED_KV_ROLE
from ansible_collections.llmops.inference.plugins.module_utils._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils._plan_model import unknown_keys
from ansible_collections.llmops.inference.plugins.module_utils._text import size_bytes

# Mooncake's AscendDirectTransport picks random ports in [20000, 20000 + npus * 1000).
ASCEND_DIRECT_BASE = 20000
UCM_STORES = ("UcmPipelineStore", "UcmNfsStore")
UCM_PIPELINES = (
    "Cache|Posix", "Cache|Compress|Posix", "Cache|Empty", "Cache|Fake", "Empty", "Fake",
    "Mooncake", "Mooncake|Posix", "Dram",
)
UCM_IO_ENGINES = ("psync", "aio")
# UCM's YAML keys (as its loader reads them): newer versions add keys, so only near-misses of these are refused.
UCM_TOP_KEYS = ("ucm_connectors", "enable_event_sync", "use_layerwise", "enable_record_traces", "use_lite",
                "persist_token_threshold", "enable_metrics", "metrics_config_path", "hit_ratio", "timeout_ms")
UCM_CONNECTOR_KEYS = ("ucm_connector_name", "ucm_connector_config")
UCM_STORE_KEYS = ("store_pipeline", "storage_backends", "io_direct", "posix_io_engine", "cache_buffer_capacity_gb",
                  "posix_capacity_gb", "posix_gc_trigger_threshold_ratio", "use_gdr")
GIB = 1 << 30
# memcache-hybrid 1.3.0 (its config/mmc-local.conf): at most 1024 ranks, 1TB of DRAM.
MEMCACHE_MAX_WORLD_SIZE = 1024
MEMCACHE_MAX_DRAM = 1 << 40


def _group_var(group, field):
    return "vllm_engine_groups.%s.%s" % (group.role, field)


def structure_problems(cluster):
    problems = []
    problems += _node_group_problems(cluster)
    if problems:
        return problems
    problems += _rank_problems(cluster)
    problems += _shared_machine_problems(cluster)
    problems += _connector_problems(cluster)
    problems += _pool_problems(cluster)
    problems += _ucm_problems(cluster)
    return problems


def _identity_problems(cluster):
    """Each node needs a real address (it becomes HCCL_IF_IP, VLLM_HOST_IP, the DP address) and,
    when the network env names interfaces, its NIC."""
    problems = []
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


def _shared_machine_problems(cluster):
    """Hosts with one address are one machine (P and D on one A3, say): their devices must not overlap."""
    problems = []
    if not cluster.accelerators:  # CPU engines share the machine's cores: nothing to share out
        return problems
    by_address = {}
    for node in cluster.nodes:
        group = cluster.groups.get(node.role)
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


def _service_host_problems(cluster):
    hosts = [node.host for node in cluster.nodes]
    return [Problem(cluster.name, service.host_variable or "%s host" % service.name,
                    "%r is neither a host of the cluster nor the address of one" % service.host,
                    "name one of %s (or leave it empty for the first prefill host)" % ", ".join(hosts))
            for service in cluster.services if service.host not in hosts]


def _node_group_problems(cluster):
    problems = _identity_problems(cluster) + _service_host_problems(cluster)
    c = cluster.name
    seen = set()
    for node in cluster.nodes:
        if node.host in seen:
            problems.append(Problem(c, "inventory", "host is listed twice", "list each host once", host=node.host))
        seen.add(node.host)
        if node.role not in cluster.groups:
            problems.append(Problem(
                c, "vllm_engine_role", "role %s has no entry in vllm_engine_groups" % node.role,
                "add vllm_engine_groups.%s or set vllm_engine_role to one of %s"
                % (node.role, ", ".join(sorted(cluster.groups))), host=node.host))
        if node.local_ranks < 1:
            problems.append(Problem(c, "vllm_engine_local_ranks", "must be at least 1, got %d" % node.local_ranks,
                                    "give the number of DP ranks this node runs", host=node.host))
    for group in cluster.groups.values():
        if not any(n.role == group.role for n in cluster.nodes):
            problems.append(Problem(c, "vllm_engine_groups.%s" % group.role, "no host has vllm_engine_role %s" % group.role,
                                    "add hosts for this role or remove the group"))
        for field in ("dp_size", "tp_size"):
            if getattr(group, field) < 1:
                problems.append(Problem(c, _group_var(group, field), "must be at least 1", "set a positive size"))
    return problems


def _rank_problems(cluster):
    problems = []
    c = cluster.name
    starts = cluster.rank_starts()
    for group in cluster.groups.values():
        nodes = [n for n in cluster.nodes if n.role == group.role]
        owner = {}
        for node in nodes:
            used = node.device_offset + node.local_ranks * group.tp_size
            if cluster.accelerators and used > cluster.devices_per_node:
                problems.append(Problem(
                    c, "vllm_engine_local_ranks", "%d local ranks x tp_size %d from device %d need %d devices, the node has %d"
                    % (node.local_ranks, group.tp_size, node.device_offset, used, cluster.devices_per_node),
                    "lower vllm_engine_local_ranks or %s, or set vllm_engine_devices_per_node to the real count"
                    % _group_var(group, "tp_size"), host=node.host))
            for rank in range(starts[node.host], starts[node.host] + node.local_ranks):
                if rank >= group.dp_size:
                    problems.append(Problem(
                        c, "vllm_engine_rank_start", "rank %d is outside 0..%d of %s" % (rank, group.dp_size - 1, _group_var(group, "dp_size")),
                        "lower vllm_engine_rank_start / vllm_engine_local_ranks or raise dp_size", host=node.host, rank=rank))
                elif rank in owner:
                    problems.append(Problem(
                        c, "vllm_engine_rank_start", "rank %d is already run by host %s" % (rank, owner[rank]),
                        "give each node of role %s a rank_start after the previous node's last rank" % group.role,
                        host=node.host, rank=rank))
                else:
                    owner[rank] = node.host
            if node.headless and node.api_server_count is not None:
                problems.append(Problem(c, "vllm_engine_api_server_count", "a headless node serves no API",
                                        "remove vllm_engine_api_server_count or vllm_engine_headless", host=node.host))
        if group.launch == "per_node" and group.hccl_port_range is not None:
            problems.append(Problem(c, _group_var(group, "hccl_port_range"),
                                    "per-rank HCCL port ranges need one process per rank",
                                    "set %s to per_rank or drop hccl_port_range" % _group_var(group, "launch")))
        missing = [r for r in range(group.dp_size) if r not in owner]
        if missing:
            problems.append(Problem(c, _group_var(group, "dp_size"), "DP ranks %s are run by no host" % missing,
                                    "add nodes or vllm_engine_local_ranks so that ranks 0..%d are each run once" % (group.dp_size - 1)))
            continue
        master = next(n for n in nodes if starts[n.host] == 0)
        if master.headless:
            problems.append(Problem(c, "vllm_engine_headless", "the DP master (rank 0) of role %s must serve the API" % group.role,
                                    "set vllm_engine_headless: false on the node that runs rank 0", host=master.host, rank=0))
        if group.dp_address is not None and group.dp_address != master.address:
            problems.append(Problem(
                c, _group_var(group, "dp_address"), "%s is not the address %s of the DP master %s"
                % (group.dp_address, master.address, master.host),
                "remove dp_address (it defaults to the rank-0 node) or set it to %s" % master.address, rank=0))
        problems += _engine_id_template_problems(cluster, group)
    return problems


def _engine_id_template_problems(cluster, group):
    template = group.engine_id_template
    if template is None:
        return []
    fields = {part[1] for part in string.Formatter().parse(template) if part[1] is not None}
    var = _group_var(group, "engine_id_template")
    if fields - {"dp_rank"}:
        return [Problem(cluster.name, var, "only {dp_rank} may be substituted, got %s" % sorted(fields - {"dp_rank"}),
                        "write the template like glm53-flash-%s-dp{dp_rank}" % group.role)]
    return []


def _connector_problems(cluster):
    problems = []
    c = cluster.name
    for group in cluster.groups.values():
        expected = EXPECTED_KV_ROLE[group.role]
        if group.kv_role is not None and group.kv_role != expected and cluster.connector != "nixl":
            problems.append(Problem(c, _group_var(group, "kv_role"), "%s ranks must be %s, got %s" % (group.role, expected, group.kv_role),
                                    "set kv_role to %s or remove it" % expected))
    if cluster.connector == "nixl":
        if set(cluster.groups) != {"prefill", "decode"}:
            problems.append(Problem(c, "vllm_engine_groups", "NixlConnector needs exactly a prefill and a decode group, got %s"
                                    % sorted(cluster.groups), "define vllm_engine_groups.prefill and .decode"))
        for group in cluster.groups.values():
            if group.kv_port is None:
                problems.append(Problem(c, _group_var(group, "kv_port"), "NixlConnector needs a side-channel base port",
                                        "set kv_port (VLLM_NIXL_SIDE_CHANNEL_PORT; vLLM's default is 5600)"))
    if cluster.connector == "mooncake":
        if set(cluster.groups) != {"prefill", "decode"}:
            problems.append(Problem(c, "vllm_engine_groups", "MooncakeConnectorV2 needs exactly a prefill and a decode group, got %s"
                                    % sorted(cluster.groups), "define vllm_engine_groups.prefill and .decode"))
        for group in cluster.groups.values():
            problems += _kv_port_problems(cluster, group)
        for role in ("prefill", "decode"):
            declared = cluster.mooncake_extra_config.get(role)
            group = cluster.groups.get(role)
            if declared is None or group is None:
                continue
            real = {"dp_size": group.dp_size, "tp_size": group.tp_size}
            if declared != real:
                problems.append(Problem(c, "vllm_engine_mooncake_extra_config.%s" % role,
                                        "declares %s but the %s group is %s" % (declared, role, real),
                                        "declare %s: %s (MooncakeConnector must see the real topology)" % (role, real)))
    return problems


def _kv_port_problems(cluster, group):
    c = cluster.name
    var = _group_var(group, "kv_port")
    if group.kv_port is None:
        return [Problem(c, var, "MooncakeConnectorV2 needs a KV base port", "set kv_port (004 uses 30000 / 30100 on A2)")]
    last = group.kv_port + group.tp_size * group.dp_size + group.dp_size - 1
    problems = []
    if last > 65535:
        problems.append(Problem(c, var, "ranks would use ports up to %d" % last, "lower kv_port"))
    if cluster.ascend:
        low, high = ASCEND_DIRECT_BASE, ASCEND_DIRECT_BASE + cluster.devices_per_node * 1000
        if group.kv_port < high and last >= low:
            problems.append(Problem(c, var, "ports %d-%d overlap AscendDirectTransport's random range [%d, %d)"
                                    % (group.kv_port, last, low, high), "set kv_port to %d or more" % high))
    return problems


def _pool_problems(cluster):
    pool = cluster.pool
    if pool is None:
        return []
    c = cluster.name
    problems = []
    if cluster.connector != "mooncake":
        problems.append(Problem(c, "vllm_engine_connector", "a KV pool rides on MultiConnector with MooncakeConnectorV2",
                                "set vllm_engine_connector: mooncake, or deploy without a pool"))
    if pool.hybrid_model and pool.use_layerwise:
        problems.append(Problem(c, "vllm_engine_kv_pool_use_layerwise", "a hybrid model has groups that cannot be prefix-cached",
                                "set use_layerwise: false (004 5.4)"))
    for group in cluster.groups.values():
        if group.lookup_rpc_port_base is None:
            problems.append(Problem(c, _group_var(group, "lookup_rpc_port_base"), "AscendStoreConnector needs a lookup port per rank",
                                    "set lookup_rpc_port_base (004 5.4: 37000 prefill, 37100 decode)"))
        if group.launch != "per_rank":
            problems.append(Problem(c, _group_var(group, "launch"), "each pool engine needs its own lookup port and engine id",
                                    "set launch: per_rank"))
        if pool.backend == "memcache" and not group.memcache_dp_init_barrier:
            problems.append(Problem(c, _group_var(group, "memcache_dp_init_barrier"), "Memcache needs the barrier on every rank of a DP group",
                                    "set memcache_dp_init_barrier: true"))
    problems += _same_everywhere(cluster, "pythonhashseed", "vllm_engine_pythonhashseed", "PYTHONHASHSEED")
    if pool.backend == "mooncake":
        problems += _same_everywhere(cluster, "tenant_id", "mooncake_master_tenant_id", "Mooncake tenant_id")
    problems += _pool_size_problems(cluster)
    if pool.backend == "mooncake":
        keys = {name.split(".", 1)[1]: None for name in pool.sizes if name.startswith("mooncake_master_segment_size.")}
        found = unknown_keys(keys, tuple(sorted(cluster.groups)), "mooncake_master_segment_size")
        found += [("mooncake_master_segment_size.%s" % role, "missing: every %s worker's mooncake.json needs its size" % role,
                   "set it (0 on nodes that contribute nothing)") for role in sorted(cluster.groups) if role not in keys]
        problems += [Problem(c, variable, message, fix) for variable, message, fix in found]
    if pool.backend == "memcache":
        workers = sum(g.dp_size * g.tp_size for g in cluster.groups.values())
        if workers > MEMCACHE_MAX_WORLD_SIZE:
            problems.append(Problem(c, "memcache_pool_world_size", "the pool has %d workers (dp x tp of every group), more than "
                                    "Memcache's maximum of %d" % (workers, MEMCACHE_MAX_WORLD_SIZE),
                                    "use fewer workers per pool, or the Mooncake pool (llmops_kv_pool_backend: mooncake)"))
        elif pool.world_size is None or pool.world_size < workers:
            problems.append(Problem(c, "memcache_pool_world_size", "world_size %s does not cover the %d workers (dp x tp of every group)"
                                    % (pool.world_size, workers), "set memcache_pool_world_size to at least %d" % workers))
        elif pool.world_size > MEMCACHE_MAX_WORLD_SIZE:
            problems.append(Problem(c, "memcache_pool_world_size", "world_size %d is above Memcache's maximum %d"
                                    % (pool.world_size, MEMCACHE_MAX_WORLD_SIZE), "set it between %d and %d" % (workers, MEMCACHE_MAX_WORLD_SIZE)))
    return problems


def _pool_size_problems(cluster):
    """Sizes parse, are aligned (1 GB for Mooncake segments and Memcache device protocols, 2 MB for
    host protocols: memcache-hybrid's mmc-local.conf), and Memcache's DRAM stays within its bounds."""
    pool, c = cluster.pool, cluster.name
    problems = []
    host_protocol = pool.backend == "memcache" and (pool.protocol or "").startswith("host_")
    align, unit = (2 << 20, "2 MB") if host_protocol else (GIB, "1 GB")
    sizes = {}
    for name, text in sorted(pool.sizes.items()):
        size = size_bytes(text)
        sizes[name] = size
        if size is None:
            problems.append(Problem(c, name, "%r is not a size the pool's config reads (a number with B, KB, MB, GB or TB)" % (text,),
                                    "write it like 8GB or 512MB"))
        elif size % align:
            problems.append(Problem(c, name, "%r is not a whole multiple of %s%s" % (
                text, unit, " (protocol %s)" % pool.protocol if pool.backend == "memcache" else ""),
                "use a %s-aligned size such as 8GB, or 0" % unit))
    dram, most = sizes.get("memcache_pool_dram_size"), sizes.get("memcache_pool_max_dram_size")
    if dram is not None and most is not None and dram > most:
        problems.append(Problem(c, "memcache_pool_dram_size", "%s is above memcache_pool_max_dram_size %s"
                                % (pool.sizes["memcache_pool_dram_size"], pool.sizes["memcache_pool_max_dram_size"]),
                                "lower it, or raise memcache_pool_max_dram_size"))
    for name in ("memcache_pool_dram_size", "memcache_pool_max_dram_size"):
        if sizes.get(name) is not None and sizes[name] > MEMCACHE_MAX_DRAM:
            problems.append(Problem(c, name, "%s is above Memcache's maximum of 1TB" % pool.sizes[name], "set at most 1TB"))
    return problems


def _same_everywhere(cluster, field, variable, what):
    values = {}
    for node in cluster.nodes:
        values.setdefault(getattr(node, field), []).append(node.host)
    if None in values:
        return [Problem(cluster.name, variable, "%s is not set" % what, "set %s for every node of the pool" % variable,
                        host=values[None][0])]
    if len(values) > 1:
        majority = max(values, key=lambda v: len(values[v]))
        return [Problem(cluster.name, variable, "%s is %r here but %r on %s" % (what, value, majority, ", ".join(values[majority])),
                        "use the same %s on every node of the pool" % variable, host=hosts[0])
                for value, hosts in values.items() if value != majority]
    return []


def _ucm_problems(cluster):
    if cluster.connector != "ucm":
        return []
    c = cluster.name
    problems = []
    if not cluster.ucm_config_file:
        problems.append(Problem(c, "ucm_cache_config_file", "UCMConnector needs UCM_CONFIG_FILE", "set ucm_cache_config_file"))
    for group in cluster.groups.values():
        if group.role != "colocated":
            problems.append(Problem(c, "vllm_engine_groups.%s" % group.role, "UCMConnector runs kv_both on colocated engines",
                                    "use role colocated with the ucm connector"))
    config = cluster.ucm_config or {}
    connectors = config.get("ucm_connectors")
    if not isinstance(connectors, list) or not connectors or not isinstance(connectors[0], dict):
        return problems + [Problem(c, "ucm_cache_config.ucm_connectors", "needs one store", "list one ucm_connector_name with its config")]
    store = connectors[0]
    name = store.get("ucm_connector_name")
    if name not in UCM_STORES:
        problems.append(Problem(c, "ucm_cache_config.ucm_connectors[0].ucm_connector_name", "unknown store %r" % name,
                                "use one of %s" % ", ".join(UCM_STORES)))
    if name == "UcmNfsStore" and config.get("enable_event_sync", True):
        problems.append(Problem(c, "ucm_cache_config.enable_event_sync", "UcmNfsStore needs enable_event_sync: false", "set it to false"))
    store_config = store.get("ucm_connector_config") or {}
    var = "ucm_cache_config.ucm_connectors[0].ucm_connector_config"
    if name == "UcmPipelineStore" and store_config.get("store_pipeline") not in UCM_PIPELINES:
        problems.append(Problem(c, var + ".store_pipeline", "unknown pipeline %r" % store_config.get("store_pipeline"),
                                "use Cache|Posix for production (known: %s)" % ", ".join(UCM_PIPELINES)))
    if not store_config.get("storage_backends"):
        problems.append(Problem(c, var + ".storage_backends", "no storage backend is set",
                                "set the cache directory, several joined with ':'"))
    engine = store_config.get("posix_io_engine", "psync")
    if engine not in UCM_IO_ENGINES:
        problems.append(Problem(c, var + ".posix_io_engine", "unknown engine %r" % engine, "use psync or aio"))
    if engine == "aio" and store_config.get("io_direct") is not True:
        problems.append(Problem(c, var + ".posix_io_engine", "aio needs io_direct: true", "set io_direct: true or use psync"))
    return problems


def ucm_config_unknown(cluster):
    """Misspelt keys of the UCM YAML (ucm_cache_config): UCM ignores what it does not read."""
    if cluster.connector != "ucm" or not isinstance(cluster.ucm_config, dict):
        return []
    config = cluster.ucm_config
    found = unknown_keys(config, UCM_TOP_KEYS, "ucm_cache_config", strict=False)
    connectors = config.get("ucm_connectors")
    if isinstance(connectors, list) and connectors and isinstance(connectors[0], dict):
        where = "ucm_cache_config.ucm_connectors[0]"
        found += unknown_keys(connectors[0], UCM_CONNECTOR_KEYS, where)
        store = connectors[0].get("ucm_connector_config")
        if isinstance(store, dict):
            found += unknown_keys(store, UCM_STORE_KEYS, where + ".ucm_connector_config", strict=False)
    return [Problem(cluster.name, variable, message, fix) for variable, message, fix in found]


def bound_ports(cluster, ranks, processes):
    """Every (host, space, low, high, owner, variable) a process will bind; NPU ports are their own space."""
    entries = []
    for process in processes:
        role = process["role"]
        label = "%s %s" % (role, "rank %d" % process["dp_ranks"][0] if process["launch"] == "per_rank" else "engine")
        if process["api"]:
            var = "vllm_engine_api_port / %s" % ("vllm_engine_groups.%s.api_port" % role)
            entries.append((process["host"], "host", process["port"], process["port"], label + " API", var))
    for rank in ranks:
        role, host, dp_rank = rank["role"], rank["host"], rank["dp_rank"]
        label = "%s rank %d" % (role, dp_rank)
        if rank["dp_master"] and (rank["launch"] == "per_rank" or cluster.groups[role].dp_size > 1):
            entries.append((host, "host", rank["dp_rpc_port"], rank["dp_rpc_port"], label + " DP RPC",
                            "vllm_engine_groups.%s.dp_rpc_port" % role))
        if rank["hccl_host_socket_port_range"]:
            low, high = (int(p) for p in rank["hccl_host_socket_port_range"].split("-"))
            var = "vllm_engine_groups.%s.hccl_port_range" % role
            entries.append((host, "host", low, high, label + " HCCL host sockets", var))
            entries.append((host, "npu", low, high, label + " HCCL NPU sockets", var))
        if rank["mooncake_ports"]:
            low, high = rank["mooncake_ports"]["side_channel"]
            var = "vllm_engine_groups.%s.kv_port" % role
            entries.append((host, "host", low, high, label + " Mooncake side channel", var))
            control = rank["mooncake_ports"]["control"]
            entries.append((host, "host", control, control, label + " Mooncake control", var))
        if rank["nixl_side_channel_port"] is not None:
            port = rank["nixl_side_channel_port"]
            entries.append((host, "host", port, port, label + " NIXL side channel", "vllm_engine_groups.%s.kv_port" % role))
        if rank["lookup_rpc_port"] is not None:
            port = rank["lookup_rpc_port"]
            entries.append((host, "host", port, port, label + " lookup RPC", "vllm_engine_groups.%s.lookup_rpc_port_base" % role))
    for service in cluster.services:
        for index, port in enumerate(service.ports):
            variable = service.variables[index] if service.variables else "%s port" % service.name
            entries.append((service.host, "host", port, port, service.name, variable))
    return entries


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
                    cluster.name, item[5], "%s (%s) overlaps %s (%s)" % (item[4], _span(item), owner, _span(widest)),
                    "move one of them; also check %s" % widest[5], host=item[0]))
            if widest is None or item[3] > widest[3]:
                widest = item
    return problems


def _span(entry):
    return str(entry[2]) if entry[2] == entry[3] else "%d-%d" % (entry[2], entry[3])


def visible_devices_problems(cluster, processes):
    """The devices variable set by hand (vllm_engine_env / _role_env) must say what the plan gives
    each process: another value starts the ranks on other NPUs, or on ones the node lacks."""
    var = cluster.visible_var
    problems = []
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


def plan_problems(cluster, ranks, processes, entries):
    problems = port_collisions(cluster, entries)
    problems += visible_devices_problems(cluster, processes)
    for entry in entries:
        if not 1 <= entry[2] <= entry[3] <= 65535:
            problems.append(Problem(cluster.name, entry[5], "%s uses port %s outside 1-65535" % (entry[4], _span(entry)),
                                    "choose a lower base port", host=entry[0]))
    problems += _unique(cluster, processes, "engine_id", "engine_id_template")
    problems += _unique(cluster, ranks, "lookup_rpc_port", "lookup_rpc_port_base")
    return problems


def _unique(cluster, items, field, group_field):
    problems = []
    owner = {}
    for item in items:
        value = item[field]
        if value is None:
            continue
        rank = item["dp_rank"] if "dp_rank" in item else item["dp_ranks"][0]
        if value in owner:
            other = owner[value]
            problems.append(Problem(
                cluster.name, "vllm_engine_groups.%s.%s" % (item["role"], group_field),
                "%s %s is also used by %s rank %s on %s" % (field, value, other[0], other[1], other[2]),
                "make %s unique per engine (include {dp_rank}, differ between prefill and decode)" % field
                if field == "engine_id" else "give prefill and decode lookup bases that do not overlap",
                host=item["host"], rank=rank))
        else:
            owner[value] = (item["role"], rank, item["host"])
    return problems
