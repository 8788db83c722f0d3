# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The shapes of what the planner returns: a rank, a process, a bound port and the plan that holds them.

They are TypedDicts, so the plan stays the plain JSON that plan mode writes and Ansible passes between tasks
(docs/plan_mode.md), while mypy checks every key a consumer reads. The planner's inputs are the frozen
dataclasses of _plan_model.
"""

from __future__ import annotations

import typing as t


class MooncakePorts(t.TypedDict):
    """MooncakeConnectorV2's ports of one DP rank: its side channel (first, last) and its control port."""

    side_channel: list[int]
    control: int


class Rank(t.TypedDict):
    """One DP rank of one DP group: where it runs, on which devices, and every port and id it owns."""

    cluster: str
    role: str
    instance: str
    host: str
    address: str
    dp_rank: int
    local_index: int
    devices: list[int]
    visible_devices_var: str | None
    visible_devices: str
    port: int
    api: bool
    headless: bool
    dp_master: bool
    dp_address: str
    dp_rpc_port: int
    launch: str
    engine_id: str | None
    lookup_rpc_port: int | None
    hccl_host_socket_port_range: str | None  # "low-high", as HCCL_HOST_SOCKET_PORT_RANGE takes it
    hccl_npu_socket_port_range: str | None
    mooncake_ports: MooncakePorts | None
    nixl_side_channel_port: int | None


class Process(t.TypedDict):
    """One ``vllm serve``: one rank (per_rank launch) or every local rank of a node (per_node)."""

    key: str
    role: str
    instance: str
    image: str | None
    host: str
    address: str
    nic: str | None
    launch: str
    dp_ranks: list[int]
    devices: list[int]
    port: int
    api: bool
    api_server_count: int | None
    engine_id: str | None
    kv_transfer_config: str | None  # compact JSON, as --kv-transfer-config takes it
    args: list[str]
    env: dict[str, str]
    dp_size: int
    npus: list[int]
    dp_group: str | None  # "address:rpc_port" of the group's DP coordinator
    ascend_direct: bool


class PortEntry(t.TypedDict):
    """A port interval a process binds, as the plan lists it under its host (plan["ports"][host]). space: "host", or
    "npu" for the NPUs' own sockets; reach: who the port is for (see _rules_ports); group: the DP group of a "group"
    port."""

    space: str
    low: int
    high: int
    owner: str
    variable: str
    reach: str | None
    group: str | None


class BoundPort(t.NamedTuple):
    """A port a process binds: its host, and the entry the plan lists under that host."""

    host: str
    entry: PortEntry


class Endpoint(t.TypedDict):
    host: str
    address: str
    port: int


class ProxyEndpoints(t.TypedDict):
    """What the PD proxy lists: every prefill API process and every decode rank."""

    prefill: list[Endpoint]
    decode: list[Endpoint]


class Plan(t.TypedDict):
    """The plan of one cluster (engine_plan's result, the input of every launch spec)."""

    cluster: str
    hardware: str
    kv_pool: str | None
    start_waves: list[list[str]]
    ranks: list[Rank]
    processes: list[Process]
    ports: dict[str, list[PortEntry]]
    proxy: ProxyEndpoints
    machines: dict[str, str]
    retired: list[str]
    kv_pool_store: t.NotRequired[str]  # what keeps the pool service's state (etcd), started before it


class PoolUse(t.TypedDict):
    backend: str
    bytes_per_worker: int


class Live(t.TypedDict):
    """What a running process learns without a restart: flags and files (no part of the spec's hash)."""

    flags: list[str]
    files: list[str]


class SpecMeta(t.TypedDict, total=False):
    """What the plan knows of a container (docs/plan_mode.md lists each key): read through _spec_meta, never parsed
    back out of argv, names or rendered files. No part of the spec's hash."""

    kind: str  # engine, proxy, pool_service, pool_store, metrics_relay, service
    role: str  # prefill, decode, colocated; service for the rest
    instance: str
    dp_group: str | None
    dp_ranks: list[int]
    engines_behind: int
    port: int | None  # the port its table row shows: an engine's API (None when headless), a service's HTTP endpoint
    api_url: str | None
    metrics_url: str | None
    headless: bool
    front_door: str | None
    devices: list[int]
    npus: list[int]
    model: str | None
    served_model: str | None
    pool: PoolUse | None
    ucm_storage: dict[str, int] | None
    ascend_direct: bool
    ha: dict[str, t.Any]  # _pool_ha
    data: list[str]
    relay_url: str
    backend: str
    ca: str | None
    client_auth: bool
    admin_auth: bool
    tls: bool
    failover: bool
    live: Live


class SecretEnv(t.TypedDict, total=False):
    """A spec's secrets, by name only (_secret_files): the files the deploy writes and mounts, and digests of their
    values (a changed value changes the spec's hash; no value is in the spec)."""

    names: list[str]
    role: str
    digest: str
    files: dict[str, str]
    digests: dict[str, str]


class LaunchSpec(t.TypedDict, total=False):
    """One container: what deploy starts (docker run's settings, its files, its wave and readiness probe) and the
    plan's meta. Plan mode writes one per file."""

    name: str
    host: str
    image: str
    command: list[str]
    env: dict[str, str]
    secret_env: SecretEnv | None
    devices: list[str]
    gpus: list[str] | None  # the GPU numbers, as docker run --gpus takes them
    volumes: list[str]
    network_mode: str
    ipc_mode: str | None
    privileged: bool
    shm_size: str | None
    files: dict[str, t.Any]
    wave: int
    ready: dict[str, t.Any]
    labels: dict[str, str]
    meta: SpecMeta
    restart: str  # Docker's restart policy (_restart_policy): unless-stopped or no
