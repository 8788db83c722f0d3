# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster description the planner reads, parsed from plain dicts.

Field names follow the inventory variables (see roles/vllm_engine/meta/argument_specs.yml):
cluster-wide values come from ``vllm_engine_*`` group vars, DP group settings from
``vllm_engine_groups.<role>.*`` and node settings from ``vllm_engine_*`` host vars.

A role is one DP group unless ``vllm_engine_instances.<role>`` names more: each instance is a DP group
of its own on the hosts whose ``vllm_engine_instance`` names it, with the role's settings and the
overrides INSTANCE_KEYS allows. The role's own group is its first instance, named after the role, so
a cluster without instances plans as before.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import typing as t
from collections.abc import Iterable, Mapping, Sequence


# Devices per node and how the runtime is told which of them a process may use. start_rank_zero: whether
# the API node of a multi-node DP group says --data-parallel-start-rank 0, as the seeds (vllm-ascend) do.
# Upstream vLLM (0.32, seen with the harness's real engine) reads an explicit start rank on a node with an
# API server as hybrid load balancing, which then refuses the headless nodes ("Remote engine 1 must not
# use --headless in external or hybrid dp lb mode"); without the flag the rank is 0 all the same.
class HardwareKind(t.TypedDict):
    devices: int  # accelerators per node
    visible_var: str | None  # the variable that hands a process its devices
    ascend: bool
    start_rank_zero: bool


HARDWARE: dict[str, HardwareKind] = {
    "a2": {"devices": 8, "visible_var": "ASCEND_RT_VISIBLE_DEVICES", "ascend": True, "start_rank_zero": True},
    "a3": {"devices": 16, "visible_var": "ASCEND_RT_VISIBLE_DEVICES", "ascend": True, "start_rank_zero": True},
    "a5": {"devices": 8, "visible_var": "ASCEND_RT_VISIBLE_DEVICES", "ascend": True, "start_rank_zero": True},
    "h100": {"devices": 8, "visible_var": "CUDA_VISIBLE_DEVICES", "ascend": False, "start_rank_zero": False},
    # vLLM's CPU backend: no accelerator to share out, the engines use the host's cores and memory
    # (VLLM_CPU_KVCACHE_SPACE). For rehearsing a layout without accelerators, not for production serving.
    "cpu": {"devices": 0, "visible_var": None, "ascend": False, "start_rank_zero": False},
}
ROLES = ("prefill", "decode", "colocated")
LAUNCH_MODES = ("per_rank", "per_node")
CONNECTORS = ("none", "ucm", "mooncake", "nixl")
POOL_BACKENDS = ("mooncake", "memcache")
SEGMENT_SIZE_VARIABLE = "mooncake_master_segment_size"  # {role: size}: each role's Mooncake segment
KV_ROLES = ("kv_producer", "kv_consumer", "kv_both")
# Variables filled from the node's own address or NIC (004 5.2 / 5.3 node scripts).
ADDRESS_ENV = ("HCCL_IF_IP", "VLLM_HOST_IP")
NIC_ENV = ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "HCCL_SOCKET_IFNAME")


class InputError(ValueError):
    """The description is not even well-formed (wrong type, unknown choice)."""


GROUP_KEYS = ("dp_size", "tp_size", "launch", "dp_rpc_port", "dp_address", "api_port", "kv_port", "kv_role",
              "engine_id_template", "lookup_rpc_port_base", "hccl_port_range", "memcache_dp_init_barrier",
              "consumer_is_to_load", "consumer_is_to_put", "set_visible_devices")
HCCL_RANGE_KEYS = ("base", "stride", "size")
# What a DP group's settings are when the inventory leaves them out (vllm_engine_groups' documentation says the same;
# tests/unit/test_docs.py holds them equal)
GROUP_DEFAULTS = {"launch": "per_rank", "dp_rpc_port": 12325, "api_port": 8000, "memcache_dp_init_barrier": True,
                  "consumer_is_to_load": False, "consumer_is_to_put": False, "set_visible_devices": True}
HCCL_RANGE_DEFAULTS = {"stride": 100, "size": 100}
# What an instance may set for itself (vllm_engine_instances.<role>.<name>): its size, the ports and ids that
# must differ where it shares a host or the cluster with another instance, and its image (a canary). The
# rest of GROUP_KEYS is the role's: the connector, launcher and pool settings its peers rely on.
INSTANCE_KEYS = ("dp_size", "tp_size", "dp_rpc_port", "dp_address", "api_port", "kv_port", "engine_id_template",
                 "lookup_rpc_port_base", "hccl_port_range", "image")
INSTANCE_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
# MooncakeConnectorV2's kv_connector_extra_config: the keys the seeds use. The connector reads more
# across versions, so other keys pass unless they look like a misspelling of one of these.
MOONCAKE_EXTRA_KEYS = ("prefill", "decode", "use_ascend_direct")
# what vLLM 0.32's NixlConnector reads of its kv_connector_extra_config (nixl/*.py, get_from_extra_config)
NIXL_EXTRA_KEYS = ("backends", "bidirectional_kv_xfer", "decoder_kv_blocks_ttl", "enforce_handshake_compat", "engine_ttl",
                   "kv_lease_duration", "kv_recompute_threshold", "num_threads", "push_registration_timeout")
MOONCAKE_TOPOLOGY_KEYS = ("dp_size", "tp_size")


def unknown_keys(raw: Iterable[t.Any], known: Sequence[str], variable: str, strict: bool = True) -> list[tuple[str, str, str]]:
    """[(variable.key, message, fix)] for each key of raw that is not known. Not strict: only keys
    that look like a misspelt known key (an open schema, such as a connector's extra config)."""
    found = []
    for key in raw:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75 if strict else 0.8)
        if not strict and not close:
            continue
        fix = ("rename it to %s" % close[0]) if close else "remove it"
        found.append(("%s.%s" % (variable, key), "unknown key (known: %s)" % ", ".join(known), fix))
    return found


def _require(mapping: Mapping[str, t.Any], key: str, where: str, kind: type | None = None) -> t.Any:
    if key not in mapping or mapping[key] is None:
        raise InputError("%s: %s is required" % (where, key))
    value = mapping[key]
    if kind is not None and not _is_kind(value, kind):
        raise InputError("%s: %s must be %s, got %r" % (where, key, kind.__name__, value))
    return value


def _optional(mapping: Mapping[str, t.Any], key: str, where: str, kind: type, default: t.Any = None) -> t.Any:
    value = mapping.get(key)
    if value is None:
        return default
    if not _is_kind(value, kind):
        raise InputError("%s: %s must be %s, got %r" % (where, key, kind.__name__, value))
    return value


def _is_kind(value: object, kind: type) -> bool:
    # bool is an int in Python; a port given as `true` is a typo, not a number.
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


def _choice(value: t.Any, choices: Sequence[str], where: str, key: str) -> t.Any:
    if value not in choices:
        raise InputError("%s: %s must be one of %s, got %r" % (where, key, ", ".join(choices), value))
    return value


@dataclasses.dataclass(frozen=True)
class HcclPortRange:
    base: int
    stride: int
    size: int

    def ports(self, dp_rank: int) -> tuple[int, int]:
        """The first and last port of a DP rank's HCCL sockets: base + dp_rank * stride, size ports."""
        low = self.base + dp_rank * self.stride
        return low, low + self.size - 1


@dataclasses.dataclass(frozen=True)
class Group:
    """One DP group: all ranks of one instance of a role. ``name`` is the role for the role's first
    instance, else ``<role>-<instance>``; ``instance`` is None for the first, else the instance's name."""

    role: str
    dp_size: int
    tp_size: int
    launch: str
    dp_rpc_port: int
    dp_address: str | None
    api_port: int
    kv_port: int | None
    kv_role: str | None
    engine_id_template: str | None
    lookup_rpc_port_base: int | None
    hccl_port_range: HcclPortRange | None
    memcache_dp_init_barrier: bool
    consumer_is_to_load: bool
    consumer_is_to_put: bool
    set_visible_devices: bool
    name: str = ""
    instance: str | None = None
    image: str | None = None  # the instance's own image, else the cluster's
    overrides: tuple[str, ...] = ()  # the keys its instance entry sets

    def variable(self, field: str) -> str:
        """The inventory variable that sets (or, for an instance, would override) this group's field."""
        if self.instance is not None and field in INSTANCE_KEYS:
            return "vllm_engine_instances.%s.%s.%s" % (self.role, self.instance, field)
        return "vllm_engine_groups.%s.%s" % (self.role, field)


def group_name(role: str, instance: str | None) -> str:
    return role if instance is None else "%s-%s" % (role, instance)


@dataclasses.dataclass(frozen=True)
class Node:
    host: str
    address: str
    nic: str | None
    role: str
    local_ranks: int
    rank_start: int | None
    api_port: int | None
    headless: bool
    api_server_count: int | None
    device_offset: int
    pythonhashseed: str | None
    tenant_id: str | None
    instance: str | None = None  # vllm_engine_instance: None for the role's first instance
    retired: bool = False  # vllm_engine_retired: the node leaves the cluster, the plan gives it nothing

    @property
    def group(self) -> str:
        """The name of the DP group (instance) this node's ranks belong to."""
        return group_name(self.role, self.instance)


@dataclasses.dataclass(frozen=True)
class Pool:
    backend: str
    use_layerwise: bool
    hybrid_model: bool
    world_size: int | None
    sizes: dict[str, str]
    protocol: str | None = None
    store: str | None = None  # what the collection deploys for the pool service to keep its state in (etcd)
    segment_sizes: dict[str, str] = dataclasses.field(default_factory=dict)  # Mooncake: each role's mooncake.json size

    def named_sizes(self) -> dict[str, str]:
        """Every size of the pool by the variable that sets it (for messages): sizes as given, and each role's
        Mooncake segment as mooncake_master_segment_size.<role>."""
        return dict(self.sizes, **{"%s.%s" % (SEGMENT_SIZE_VARIABLE, role): size for role, size in self.segment_sizes.items()})


@dataclasses.dataclass(frozen=True)
class Service:
    """A non-engine process (proxy, pool service) whose ports count on its host."""

    name: str
    host: str
    ports: tuple[int, ...]
    variables: tuple[str, ...] = ()  # the variable setting each port, for messages
    host_variable: str | None = None


@dataclasses.dataclass(frozen=True)
class Cluster:
    name: str
    hardware: str
    devices_per_node: int
    connector: str
    mooncake_extra_config: dict[str, t.Any]
    ucm_config_file: str | None
    ucm_config: dict[str, t.Any] | None
    pool: Pool | None
    network_env: tuple[str, ...]
    env: dict[str, t.Any]
    role_env: dict[str, dict[str, t.Any]]
    groups: dict[str, Group]
    nodes: tuple[Node, ...]  # the nodes that serve: every node of the inventory but the retired ones
    services: tuple[Service, ...]
    # What `vllm serve` is given besides the plan's flags (checked by _engine_args): the model, whether it
    # may come from a hub, the container-side mounts of the engines, vllm_engine_args and _role_args.
    model: str | None = None
    model_from_hub: bool = False
    mounts: tuple[str, ...] = ()
    args: dict[str, t.Any] = dataclasses.field(default_factory=dict)
    known_flags: tuple[str, ...] = ()  # flags of the image's vLLM beyond the collection's list (vllm_engine_known_flags)
    role_args: dict[str, dict[str, t.Any]] = dataclasses.field(default_factory=dict)
    retired: tuple[Node, ...] = ()  # nodes leaving the cluster (vllm_engine_retired): planned nothing, kept for their machine
    nixl_extra_config: dict[str, t.Any] = dataclasses.field(default_factory=dict)  # NixlConnector's extra config

    @property
    def visible_var(self) -> str | None:
        return HARDWARE[self.hardware]["visible_var"]

    @property
    def roles(self) -> list[str]:
        """The roles the cluster runs, each once, whatever its instances."""
        return sorted({group.role for group in self.groups.values()})

    def group_of(self, node: Node) -> Group | None:
        """The DP group (instance) of a node, or None when its role or instance is not declared."""
        return self.groups.get(node.group)

    def groups_of(self, role: str) -> list[Group]:
        """The instances of a role, the role's own first, then in the inventory's order."""
        return [group for group in self.groups.values() if group.role == role]

    def nodes_of(self, group: Group) -> list[Node]:
        return [node for node in self.nodes if node.group == group.name]

    @property
    def ascend(self) -> bool:
        return HARDWARE[self.hardware]["ascend"]

    @property
    def start_rank_zero(self) -> bool:
        return HARDWARE[self.hardware]["start_rank_zero"]

    @property
    def accelerators(self) -> bool:
        """Whether ranks are given devices (NPUs or GPUs); CPU clusters have none to give."""
        return HARDWARE[self.hardware]["visible_var"] is not None

    def rank_starts(self) -> dict[str, int]:
        """{host: first DP rank}; a node without rank_start continues after the previous node of its DP group."""
        starts: dict[str, int] = {}
        next_rank: dict[str, int] = {}
        for node in self.nodes:
            start = node.rank_start if node.rank_start is not None else next_rank.get(node.group, 0)
            starts[node.host] = start
            next_rank[node.group] = start + node.local_ranks
        return starts


def parse_group(role: str, raw: t.Any, unknown: list[tuple[str, str, str]] | None = None, where: str | None = None) -> Group:
    where = where or "vllm_engine_groups.%s" % role
    if not isinstance(raw, dict):
        raise InputError("%s must be a mapping" % where)
    if unknown is not None:
        unknown += unknown_keys(raw, GROUP_KEYS, where)
    hccl = raw.get("hccl_port_range")
    hccl_range = None
    if hccl is not None:
        if not isinstance(hccl, dict):
            raise InputError("%s: hccl_port_range must be a mapping of base, stride, size" % where)
        hwhere = where + ".hccl_port_range"
        if unknown is not None:
            unknown += unknown_keys(hccl, HCCL_RANGE_KEYS, hwhere)
        hccl_range = HcclPortRange(
            base=_require(hccl, "base", hwhere, int),
            stride=_optional(hccl, "stride", hwhere, int, HCCL_RANGE_DEFAULTS["stride"]),
            size=_optional(hccl, "size", hwhere, int, HCCL_RANGE_DEFAULTS["size"]),
        )
    kv_role = _optional(raw, "kv_role", where, str)
    if kv_role is not None:
        _choice(kv_role, KV_ROLES, where, "kv_role")
    return Group(
        role=role,
        name=role,
        dp_size=_require(raw, "dp_size", where, int),
        tp_size=_require(raw, "tp_size", where, int),
        launch=_choice(_optional(raw, "launch", where, str, GROUP_DEFAULTS["launch"]), LAUNCH_MODES, where, "launch"),
        dp_rpc_port=_optional(raw, "dp_rpc_port", where, int, GROUP_DEFAULTS["dp_rpc_port"]),
        dp_address=_optional(raw, "dp_address", where, str),
        api_port=_optional(raw, "api_port", where, int, GROUP_DEFAULTS["api_port"]),
        kv_port=_optional(raw, "kv_port", where, int),
        kv_role=kv_role,
        engine_id_template=_optional(raw, "engine_id_template", where, str),
        lookup_rpc_port_base=_optional(raw, "lookup_rpc_port_base", where, int),
        hccl_port_range=hccl_range,
        memcache_dp_init_barrier=_optional(raw, "memcache_dp_init_barrier", where, bool, GROUP_DEFAULTS["memcache_dp_init_barrier"]),
        consumer_is_to_load=_optional(raw, "consumer_is_to_load", where, bool, GROUP_DEFAULTS["consumer_is_to_load"]),
        consumer_is_to_put=_optional(raw, "consumer_is_to_put", where, bool, GROUP_DEFAULTS["consumer_is_to_put"]),
        set_visible_devices=_optional(raw, "set_visible_devices", where, bool, GROUP_DEFAULTS["set_visible_devices"]),
    )


def parse_instances(raw: t.Any, groups_raw: Mapping[str, t.Any], groups: Mapping[str, Group],
                    unknown: list[tuple[str, str, str]] | None = None) -> dict[str, Group]:
    """The instances beyond each role's first (vllm_engine_instances): {name: Group}, in the inventory's order.
    ``groups_raw``: vllm_engine_groups as given, which an instance's overrides are laid over; ``groups``: it parsed."""
    found: dict[str, Group] = {}
    if not raw:
        return found
    if not isinstance(raw, dict):
        raise InputError("vllm_engine_instances must be a mapping of role to {instance name: overrides}")
    for role, instances in raw.items():
        where = "vllm_engine_instances.%s" % role
        _choice(role, ROLES, "vllm_engine_instances", "key")
        if role not in groups:
            raise InputError("%s: role %s has no vllm_engine_groups.%s to take its settings from" % (where, role, role))
        if not isinstance(instances, dict) or not instances:
            raise InputError("%s must be a mapping of instance name to its overrides (an empty mapping for none)" % where)
        previous = groups[role]
        for instance, overrides in instances.items():
            # no role's name, nor a rank's suffix: <role>-dp0 is the first instance's rank 0 container
            if not isinstance(instance, str) or not INSTANCE_NAME.match(instance) or instance in ROLES or re.match(r"^dp\d+$", instance):
                raise InputError("%s: an instance name is 1-32 lower-case letters, digits and dashes, and no role's name nor "
                                 "dp<number>, got %r" % (where, instance))
            previous = found[group_name(role, instance)] = _instance_group(groups_raw[role], previous, instance, overrides, unknown)
    return found


def _instance_group(first: Mapping[str, t.Any], previous: Group, instance: str, overrides: Mapping[str, t.Any],
                    unknown: list[tuple[str, str, str]] | None) -> Group:
    """An instance: its role's group as given (``first``) with the INSTANCE_KEYS it sets. The engine id template it
    inherits gets ``-{instance}`` unless it names {instance}, and inherited lookup ports follow the previous instance's
    ranks, so that ids and lookup ports stay unique across the cluster without the operator spelling them out."""
    role = previous.role
    where = "vllm_engine_instances.%s.%s" % (role, instance)
    overrides = overrides or {}
    if not isinstance(overrides, dict):
        raise InputError("%s must be a mapping of overrides, got %r" % (where, overrides))
    if unknown is not None:
        unknown += [("%s.%s" % (where, key), "instances of role %s share %s" % (role, key),
                     "set it in vllm_engine_groups.%s.%s for every instance, or remove it" % (role, key))
                    for key in overrides if key in GROUP_KEYS and key not in INSTANCE_KEYS]
        unknown += unknown_keys({k: v for k, v in overrides.items() if k not in GROUP_KEYS}, INSTANCE_KEYS, where)
    settings = {key: value for key, value in overrides.items() if key in INSTANCE_KEYS and key != "image"}
    group = parse_group(role, dict(first, **settings), where=where)
    template = group.engine_id_template
    if template is not None and "engine_id_template" not in overrides and "{instance}" not in template:
        template += "-{instance}"
    lookup = group.lookup_rpc_port_base
    if lookup is not None and "lookup_rpc_port_base" not in overrides and previous.lookup_rpc_port_base is not None:
        lookup = previous.lookup_rpc_port_base + previous.dp_size
    return dataclasses.replace(group, name=group_name(role, instance), instance=instance, engine_id_template=template,
                               lookup_rpc_port_base=lookup, image=_optional(overrides, "image", where, str),
                               overrides=tuple(key for key in overrides if key in INSTANCE_KEYS))


def parse_node(raw: t.Any) -> Node:
    if not isinstance(raw, dict):
        raise InputError("every node must be a mapping, got %r" % (raw,))
    host = _require(raw, "host", "node", str)
    where = "host %s" % host
    seed = raw.get("pythonhashseed")
    return Node(
        host=host,
        address=_require(raw, "address", where, str),
        nic=_optional(raw, "nic", where, str),
        role=_choice(_require(raw, "role", where, str), ROLES, where, "vllm_engine_role"),
        local_ranks=_require(raw, "local_ranks", where, int),
        rank_start=_optional(raw, "rank_start", where, int),
        api_port=_optional(raw, "api_port", where, int),
        headless=_optional(raw, "headless", where, bool, False),
        api_server_count=_optional(raw, "api_server_count", where, int),
        device_offset=_optional(raw, "device_offset", where, int, 0),
        pythonhashseed=None if seed is None else str(seed),
        tenant_id=_optional(raw, "tenant_id", where, str),
        instance=_optional(raw, "instance", where, str) or None,
        retired=_optional(raw, "retired", where, bool, False),
    )


def parse_pool(raw: t.Any) -> Pool | None:
    if raw is None:
        return None
    where = "kv pool"
    if not isinstance(raw, dict):
        raise InputError("%s must be a mapping" % where)
    sizes, segment_sizes = raw.get("sizes") or {}, raw.get("segment_sizes") or {}
    if not isinstance(sizes, dict) or not isinstance(segment_sizes, dict):
        raise InputError("%s: sizes and segment_sizes must be mappings of name to size" % where)
    return Pool(
        backend=_choice(_require(raw, "backend", where, str), POOL_BACKENDS, where, "backend"),
        use_layerwise=_optional(raw, "use_layerwise", where, bool, False),
        hybrid_model=_optional(raw, "hybrid_model", where, bool, False),
        world_size=_optional(raw, "world_size", where, int),
        protocol=_optional(raw, "protocol", where, str),
        store=_optional(raw, "store", where, str),
        sizes={str(k): str(v) for k, v in sizes.items()},
        segment_sizes={str(k): str(v) for k, v in segment_sizes.items()},
    )


def parse_service(raw: t.Any) -> Service:
    where = "service"
    if not isinstance(raw, dict):
        raise InputError("every service must be a mapping, got %r" % (raw,))
    ports = _require(raw, "ports", where, list)
    for port in ports:
        if not _is_kind(port, int):
            raise InputError("service %s: ports must be integers, got %r" % (raw.get("name"), port))
    variables = tuple(_optional(raw, "variables", where, list, []))
    return Service(name=_require(raw, "name", where, str), host=_require(raw, "host", where, str), ports=tuple(ports),
                   variables=variables if len(variables) == len(ports) else (), host_variable=_optional(raw, "host_variable", where, str))


def mooncake_extra_unknown(extra: Mapping[str, t.Any]) -> list[tuple[str, str, str]]:
    variable = "vllm_engine_mooncake_extra_config"
    found = unknown_keys(extra, MOONCAKE_EXTRA_KEYS, variable, strict=False)
    for role in ("prefill", "decode"):
        if isinstance(extra.get(role), dict):
            found += unknown_keys(extra[role], MOONCAKE_TOPOLOGY_KEYS, "%s.%s" % (variable, role))
    return found


def parse_cluster(raw: t.Any, unknown: list[tuple[str, str, str]] | None = None) -> Cluster:
    """Turn the module's ``cluster`` argument into a Cluster, or raise InputError.

    Keys the collection does not know are appended to ``unknown`` as (variable, message, fix).
    """
    if not isinstance(raw, dict):
        raise InputError("cluster must be a mapping")
    where = "cluster"
    name = _require(raw, "name", where, str)
    hardware = _choice(_require(raw, "hardware", where, str), tuple(HARDWARE), where, "vllm_engine_hardware")
    groups_raw = _require(raw, "groups", where, dict)
    groups = {}
    for role, group in groups_raw.items():
        if role not in ROLES and unknown is not None:
            unknown += unknown_keys({role: None}, ROLES, "vllm_engine_groups")
            continue
        _choice(role, ROLES, "vllm_engine_groups", "key")
        groups[role] = parse_group(role, group, unknown)
    groups.update(parse_instances(raw.get("instances"), groups_raw, groups, unknown))
    if unknown is not None and isinstance(raw.get("mooncake_extra_config"), dict):
        unknown += mooncake_extra_unknown(raw["mooncake_extra_config"])
    if unknown is not None and isinstance(raw.get("nixl_extra_config"), dict):
        unknown += unknown_keys(raw["nixl_extra_config"], NIXL_EXTRA_KEYS, "vllm_engine_nixl_extra_config", strict=False)
    ucm = raw.get("ucm") or {}
    network_env = tuple(raw.get("network_env") or ())
    nodes = [parse_node(n) for n in _require(raw, "nodes", where, list)]
    for var in network_env:
        _choice(var, ADDRESS_ENV + NIC_ENV, where, "vllm_engine_network_env")
    return Cluster(
        name=name,
        hardware=hardware,
        devices_per_node=_optional(raw, "devices_per_node", where, int, HARDWARE[hardware]["devices"]),
        connector=_choice(_optional(raw, "connector", where, str, "none"), CONNECTORS, where, "vllm_engine_connector"),
        mooncake_extra_config=dict(_optional(raw, "mooncake_extra_config", where, dict, {})),
        nixl_extra_config=dict(_optional(raw, "nixl_extra_config", where, dict, {})),
        ucm_config_file=_optional(ucm, "config_file", "ucm", str),
        ucm_config=_optional(ucm, "config", "ucm", dict),
        pool=parse_pool(raw.get("pool")),
        network_env=network_env,
        env=dict(_optional(raw, "env", where, dict, {})),
        role_env={role: dict(values or {}) for role, values in _optional(raw, "role_env", where, dict, {}).items()},
        groups=groups,
        nodes=tuple(n for n in nodes if not n.retired),
        services=tuple(parse_service(s) for s in raw.get("services") or ()),
        model=_optional(raw, "model", where, str),
        model_from_hub=_optional(raw, "model_from_hub", where, bool, False),
        mounts=tuple(str(v) for v in _optional(raw, "mounts", where, list, [])),
        args=dict(_optional(raw, "args", where, dict, {})),
        known_flags=tuple(str(flag) for flag in _optional(raw, "known_flags", where, list, [])),
        role_args=_role_args(_optional(raw, "role_args", where, dict, {})),
        retired=tuple(n for n in nodes if n.retired),
    )


def _role_args(raw: Mapping[str, t.Any]) -> dict[str, dict[str, t.Any]]:
    for role, flags in raw.items():
        if flags is not None and not isinstance(flags, dict):
            raise InputError("vllm_engine_role_args.%s must be a mapping of flag to value, got %r" % (role, flags))
    return {str(role): dict(flags or {}) for role, flags in raw.items()}
