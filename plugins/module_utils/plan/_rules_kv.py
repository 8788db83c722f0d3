# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""KV rules: the connector's ports and roles (MooncakeConnectorV2, NixlConnector) and the KV pool (Mooncake or
Memcache): lookup ports, sizes, world size, tenant and PYTHONHASHSEED on every node."""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils._text import size_bytes
from ansible_collections.llmops.inference.plugins.module_utils.plan._kv_config import EXPECTED_KV_ROLE
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import SEGMENT_SIZE_VARIABLE, Cluster, Group, Pool, unknown_keys
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_topology import group_var

# Mooncake's AscendDirectTransport picks random ports in [20000, 20000 + npus * 1000).
ASCEND_DIRECT_BASE = 20000


GIB = 1 << 30


# memcache-hybrid 1.3.0 (its config/mmc-local.conf): at most 1024 ranks, 1TB of DRAM.
MEMCACHE_MAX_WORLD_SIZE = 1024


MEMCACHE_MAX_DRAM = 1 << 40


def connector_problems(cluster: Cluster) -> list[Problem]:
    problems = []
    c = cluster.name
    for group in cluster.groups.values():
        expected = EXPECTED_KV_ROLE[group.role]
        if group.kv_role is not None and group.kv_role != expected and cluster.connector != "nixl":
            problems.append(Problem(c, group_var(group, "kv_role"), "%s ranks must be %s, got %s" % (group.role, expected, group.kv_role),
                                    "set kv_role to %s or remove it" % expected))
    if cluster.connector == "nixl":
        if cluster.roles != ["decode", "prefill"]:
            problems.append(Problem(c, "vllm_engine_groups", "NixlConnector needs exactly a prefill and a decode group, got %s"
                                    % cluster.roles, "define vllm_engine_groups.prefill and .decode"))
        for group in cluster.groups.values():
            if group.kv_port is None:
                problems.append(Problem(c, group_var(group, "kv_port"), "NixlConnector needs a side-channel base port",
                                        "set kv_port (VLLM_NIXL_SIDE_CHANNEL_PORT; vLLM's default is 5600)"))
    if cluster.connector == "mooncake":
        if cluster.roles != ["decode", "prefill"]:
            problems.append(Problem(c, "vllm_engine_groups", "MooncakeConnectorV2 needs exactly a prefill and a decode group, got %s"
                                    % cluster.roles, "define vllm_engine_groups.prefill and .decode"))
        for group in cluster.groups.values():
            problems += _kv_port_problems(cluster, group)
        for role in ("prefill", "decode"):
            declared = cluster.mooncake_extra_config.get(role)
            for group in cluster.groups_of(role):
                real = {"dp_size": group.dp_size, "tp_size": group.tp_size}
                if declared is None or declared == real:
                    continue
                if group.instance is None:
                    problems.append(Problem(c, "vllm_engine_mooncake_extra_config.%s" % role,
                                            "declares %s but the %s group is %s" % (declared, role, real),
                                            "declare %s: %s (MooncakeConnector must see the real topology)" % (role, real)))
                else:  # one extra config for the cluster: every peer computes this role's ports from it
                    problems.append(Problem(c, group.variable("dp_size" if "dp_size" in group.overrides else "tp_size"),
                                            "instance %s of role %s is %s, but MooncakeConnectorV2's extra config, which every "
                                            "engine of the cluster reads, declares %s %s" % (group.instance, role, real, role, declared),
                                            "give every %s instance the same dp_size and tp_size (remove the override)" % role))
    return problems


def _kv_port_problems(cluster: Cluster, group: Group) -> list[Problem]:
    c = cluster.name
    var = group_var(group, "kv_port")
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


def pool_problems(cluster: Cluster) -> list[Problem]:
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
            problems.append(Problem(c, group_var(group, "lookup_rpc_port_base"), "AscendStoreConnector needs a lookup port per rank",
                                    "set lookup_rpc_port_base (004 5.4: 37000 prefill, 37100 decode)"))
        if group.launch != "per_rank":
            problems.append(Problem(c, group_var(group, "launch"), "each pool engine needs its own lookup port and engine id",
                                    "set launch: per_rank"))
        if pool.backend == "memcache" and not group.memcache_dp_init_barrier:
            problems.append(Problem(c, group_var(group, "memcache_dp_init_barrier"), "Memcache needs the barrier on every rank of a DP group",
                                    "set memcache_dp_init_barrier: true"))
    problems += _same_everywhere(cluster, "pythonhashseed", "vllm_engine_pythonhashseed", "PYTHONHASHSEED")
    if pool.backend == "mooncake":
        problems += _same_everywhere(cluster, "tenant_id", "mooncake_master_tenant_id", "Mooncake tenant_id")
    problems += _pool_size_problems(c, pool)
    if pool.backend == "mooncake":
        found = unknown_keys(pool.segment_sizes, tuple(cluster.roles), SEGMENT_SIZE_VARIABLE)
        found += [("%s.%s" % (SEGMENT_SIZE_VARIABLE, role), "missing: every %s worker's mooncake.json needs its size" % role,
                   "set it (0 on nodes that contribute nothing)") for role in cluster.roles if role not in pool.segment_sizes]
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


def _pool_size_problems(cluster_name: str, pool: Pool) -> list[Problem]:
    """Sizes parse, are aligned (1 GB for Mooncake segments and Memcache device protocols, 2 MB for
    host protocols: memcache-hybrid's mmc-local.conf), and Memcache's DRAM stays within its bounds."""
    c = cluster_name
    problems = []
    host_protocol = pool.backend == "memcache" and (pool.protocol or "").startswith("host_")
    align, unit = (2 << 20, "2 MB") if host_protocol else (GIB, "1 GB")
    sizes: dict[str, int | None] = {}
    named = pool.named_sizes()
    for name, text in sorted(named.items()):
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
                                % (named["memcache_pool_dram_size"], named["memcache_pool_max_dram_size"]),
                                "lower it, or raise memcache_pool_max_dram_size"))
    for name in ("memcache_pool_dram_size", "memcache_pool_max_dram_size"):
        if (size := sizes.get(name)) is not None and size > MEMCACHE_MAX_DRAM:
            problems.append(Problem(c, name, "%s is above Memcache's maximum of 1TB" % named[name], "set at most 1TB"))
    return problems


def _same_everywhere(cluster: Cluster, field: str, variable: str, what: str) -> list[Problem]:
    values: dict[t.Any, list[str]] = {}
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
