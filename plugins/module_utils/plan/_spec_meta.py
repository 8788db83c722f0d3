# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the plan knows about a container, carried by its launch spec as ``meta``.

The planner knows every process's role, DP group and ranks, its API and /metrics URLs, the KV pool it
uses and how much host memory that takes, the UCM storage it writes to. ``meta`` keeps them, filled
where the plan is made (engine_specs for the engines, each service role for its own container), and
status, rollout, verify, drain, preflight, monitoring and the plan table read them through the
accessors below instead of parsing argv, names or rendered files.

``meta`` is no part of a spec's hash (_launch_spec.spec_hash): what a container runs is the rest of
the spec, so a cluster deployed before ``meta`` existed is unchanged by a run that has it.

Keys: kind (engine, proxy, pool_service, pool_store, metrics_relay, service), role (prefill, decode, colocated; service for the
rest), instance (an engine's DP group by name: its role for the role's first instance, else
"<role>-<instance>"; absent for services), dp_group ("address:rpc port" of its DP coordinator, or null), dp_ranks, engines_behind (how
many engines a request to its API may reach), port (an engine's API port or a service's HTTP one), api_url, metrics_url, headless, devices, model,
served_model, devices (what the plan hands it: NPUs through ASCEND_RT_VISIBLE_DEVICES or GPUs), npus,
pool ({backend, bytes_per_worker} or null), ucm_storage ({host path: posix_capacity_gb}), ascend_direct
(MooncakeConnectorV2's use_ascend_direct), front_door ("address:port" the PD proxy lists an engine's API as, or
null), ha (a service in HA: _pool_ha), data (host directories it keeps data in), relay_url (the metrics relay's
address: _metrics_relay), backend (a pool service's: mooncake or memcache),
ca (the CA file that verifies the front door's HTTPS, when it serves HTTPS with one),
live ({"flags": [...], "files": [...]}: what a running process learns by other means than a restart, the
front door's members, which its admin API adds and removes; no part of the hash, see _launch_spec.identity).
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils._text import flag_name, size_bytes
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec, Process, SpecMeta

SERVICE: SpecMeta = {"kind": "service", "role": "service"}


def of(spec: LaunchSpec) -> SpecMeta:
    return spec.get("meta") or SERVICE


def kind(spec: LaunchSpec) -> str:
    return of(spec).get("kind", "service")


def is_engine(spec: LaunchSpec) -> bool:
    """A vLLM engine process (vllm serve), not a service such as the proxy or a pool service."""
    return kind(spec) == "engine"


def ha(spec: LaunchSpec) -> dict[str, t.Any] | None:
    """What a service in HA is ({service: mooncake_master, cluster_id, health_url} or {service: etcd, member,
    client_url}), None for anything else."""
    return of(spec).get("ha")


def data_dirs(spec: LaunchSpec) -> list[str]:
    """Host directories where a container keeps data (an etcd member's): kept by teardown unless purged."""
    return list(of(spec).get("data") or [])


def instance(spec: LaunchSpec) -> str | None:
    """An engine's instance (its role for the role's first), None for a service."""
    return of(spec).get("instance")


def role(spec: LaunchSpec) -> str:
    """prefill, decode or colocated for an engine; service for anything else."""
    return of(spec).get("role", "service") if is_engine(spec) else "service"


def dp_group(spec: LaunchSpec) -> str:
    """A DP group is named by its coordinator (address and RPC port); any other container is its own group."""
    group = of(spec).get("dp_group")
    return "dp %s" % group if group else "%s/%s" % (spec["host"], spec["name"])


def dp_ranks(spec: LaunchSpec) -> str:
    """The DP ranks a container runs as text ("0", "0-3"; "" when it is no DP engine)."""
    ranks = of(spec).get("dp_ranks") or []
    if not ranks:
        return ""
    return str(ranks[0]) if len(ranks) == 1 else "%d-%d" % (ranks[0], ranks[-1])


def port(spec: LaunchSpec) -> int | None:
    """The port a container answers on: an engine's API (None when headless), a service's HTTP endpoint."""
    return of(spec).get("port")


def api_url(spec: LaunchSpec) -> str | None:
    return of(spec).get("api_url")


def metrics_url(spec: LaunchSpec) -> str | None:
    return of(spec).get("metrics_url")


def engines_behind(spec: LaunchSpec) -> int:
    return int(of(spec).get("engines_behind") or 1)


def served_model(spec: LaunchSpec) -> str | None:
    return of(spec).get("served_model")


def model(spec: LaunchSpec) -> str | None:
    return of(spec).get("model")


def devices(spec: LaunchSpec) -> list[int]:
    """The devices the plan hands the container: its NPUs (ASCEND_RT_VISIBLE_DEVICES) or its GPUs (device request)."""
    return list(of(spec).get("devices") or [])


def npus(spec: LaunchSpec) -> list[int]:
    """The NPUs the plan hands the container through ASCEND_RT_VISIBLE_DEVICES."""
    return list(of(spec).get("npus") or [])


def front_door(spec: LaunchSpec) -> tuple[str, str] | None:
    """("prefill" or "decode", "address:port") of an engine the PD proxy lists, else None."""
    member = of(spec).get("front_door") if is_engine(spec) else None
    return (role(spec), member) if member else None


def live(spec: LaunchSpec) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(flags, files) of a spec that a running container learns without a restart (the front door's members)."""
    found = of(spec).get("live")
    return (tuple(found.get("flags") or ()), tuple(found.get("files") or ())) if found else ((), ())


def ca(spec: LaunchSpec) -> str | None:
    """The CA file that verifies a service's HTTPS (the front door's pd_proxy_tls_ca), else None."""
    return of(spec).get("ca")


def pool_backend(spec: LaunchSpec) -> str | None:
    """The KV pool backend a pool service serves ("mooncake", "memcache"), else None."""
    return of(spec).get("backend") if kind(spec) == "pool_service" else None


def uses_pool(spec: LaunchSpec) -> bool:
    return bool(of(spec).get("pool"))


def pool_bytes(spec: LaunchSpec) -> int:
    """Host memory the KV pool takes for one engine container: its per-worker segment (Mooncake) or DRAM pool
    (Memcache) times its workers (the devices it is given, at least one)."""
    pool = of(spec).get("pool")
    return (pool["bytes_per_worker"] if pool else 0) * max(1, len(devices(spec)))


def ucm_storage(spec: LaunchSpec) -> dict[str, int]:
    return dict(of(spec).get("ucm_storage") or {})


def ascend_direct(spec: LaunchSpec) -> bool:
    return bool(of(spec).get("ascend_direct"))


def ucm_storage_of_config(config: dict[str, t.Any] | None) -> dict[str, int]:
    """{storage backend path: posix_capacity_gb} of a UCM config (ucm_cache_config), for the engines' meta."""
    found = {}
    for connector in (config or {}).get("ucm_connectors") or []:
        store = connector.get("ucm_connector_config") or {}
        capacity = int(store.get("posix_capacity_gb") or 0)
        for path in str(store.get("storage_backends") or "").split(":"):
            if path:
                found[path] = capacity
    return found


def engine_meta(process: Process, model_path: str | None, flags: dict[str, t.Any], addons: Iterable[dict[str, t.Any]],
                gpus: Iterable[object] | None = None, live_files: Iterable[str] = ()) -> SpecMeta:
    """An engine's meta: the plan's facts of its process, the served model of its flags, what addons add
    (``meta`` of ucm_cache / mooncake_master / memcache_pool: pool {backend, per_worker}, ucm_storage), and the files it
    reads again when they change (its key file), when it has any."""
    api = "http://%s:%d" % (process["address"], process["port"]) if process["api"] else None
    served = next((value for key, value in flags.items() if flag_name(key) == "served-model-name"), None)
    if isinstance(served, list):
        served = served[0] if served else None
    meta: SpecMeta = {
        "kind": "engine", "role": process["role"], "instance": process["instance"], "dp_group": process["dp_group"],
        "dp_ranks": list(process["dp_ranks"]),
        "engines_behind": 1 if process["launch"] == "per_rank" else process["dp_size"],
        "port": process["port"] if process["api"] else None,
        "api_url": api, "metrics_url": api + "/metrics" if api else None, "headless": not process["api"],
        # the proxy lists every prefill API and every decode rank (_planner._proxy_endpoints)
        "front_door": "%s:%d" % (process["address"], process["port"])
        if process["api"] and process["role"] in ("prefill", "decode") else None,
        "devices": [int(str(g)) for g in gpus] if gpus else list(process["npus"]), "npus": list(process["npus"]),
        "model": model_path, "served_model": str(served) if served else model_path,
        "pool": None, "ucm_storage": None, "ascend_direct": bool(process.get("ascend_direct")),
    }
    if live_files:
        meta["live"] = {"flags": [], "files": list(live_files)}
    for part in addons:
        pool = part.get("pool")
        if pool:
            meta["pool"] = {"backend": pool["backend"], "bytes_per_worker": size_bytes(pool.get("per_worker")) or 0}
        if part.get("ucm_storage"):
            meta["ucm_storage"] = dict(part["ucm_storage"])
    return meta


def service_meta(fields: SpecMeta | dict[str, t.Any] | None) -> SpecMeta:
    """A service's meta from what its role gives (kind, port, api_url, metrics_url), role always service."""
    meta = t.cast(SpecMeta, {**SERVICE, **(fields or {})})
    meta["role"] = "service"
    if meta.get("port") is not None:  # a role's YAML may hand it templated as text
        meta["port"] = int(str(meta["port"]))
    return meta
