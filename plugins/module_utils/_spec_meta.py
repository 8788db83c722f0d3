# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the plan knows about a container, carried by its launch spec as ``meta`` (issue 19).

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
many engines a request to its API may reach), api_url, metrics_url, headless, devices, model,
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

from ansible_collections.llmops.inference.plugins.module_utils._text import flag_name, size_bytes

SERVICE = {"kind": "service", "role": "service"}


def of(spec):
    return spec.get("meta") or SERVICE


def kind(spec):
    return of(spec).get("kind", "service")


def is_engine(spec):
    """A vLLM engine process (vllm serve), not a service such as the proxy or a pool service."""
    return kind(spec) == "engine"


def ha(spec):
    """What a service in HA is ({service: mooncake_master, cluster_id, health_url} or {service: etcd, member,
    client_url}), None for anything else."""
    return of(spec).get("ha")


def data_dirs(spec):
    """Host directories where a container keeps data (an etcd member's): kept by teardown unless purged."""
    return list(of(spec).get("data") or [])


def instance(spec):
    """An engine's instance (its role for the role's first), None for a service."""
    return of(spec).get("instance")


def role(spec):
    """prefill, decode or colocated for an engine; service for anything else."""
    return of(spec).get("role", "service") if is_engine(spec) else "service"


def dp_group(spec):
    """A DP group is named by its coordinator (address and RPC port); any other container is its own group."""
    group = of(spec).get("dp_group")
    return "dp %s" % group if group else "%s/%s" % (spec["host"], spec["name"])


def dp_ranks(spec):
    """The DP ranks a container runs as text ("0", "0-3"; "" when it is no DP engine)."""
    ranks = of(spec).get("dp_ranks") or []
    if not ranks:
        return ""
    return str(ranks[0]) if len(ranks) == 1 else "%d-%d" % (ranks[0], ranks[-1])


def api_url(spec):
    return of(spec).get("api_url")


def metrics_url(spec):
    return of(spec).get("metrics_url")


def engines_behind(spec):
    return int(of(spec).get("engines_behind") or 1)


def served_model(spec):
    return of(spec).get("served_model")


def model(spec):
    return of(spec).get("model")


def devices(spec):
    """The devices the plan hands the container: its NPUs (ASCEND_RT_VISIBLE_DEVICES) or its GPUs (device request)."""
    return list(of(spec).get("devices") or [])


def npus(spec):
    """The NPUs the plan hands the container through ASCEND_RT_VISIBLE_DEVICES."""
    return list(of(spec).get("npus") or [])


def front_door(spec):
    """("prefill" or "decode", "address:port") of an engine the PD proxy lists, else None."""
    member = of(spec).get("front_door") if is_engine(spec) else None
    return (role(spec), member) if member else None


def live(spec):
    """(flags, files) of a spec that a running container learns without a restart (the front door's members)."""
    found = of(spec).get("live") or {}
    return tuple(found.get("flags") or ()), tuple(found.get("files") or ())


def ca(spec):
    """The CA file that verifies a service's HTTPS (the front door's pd_proxy_tls_ca), else None."""
    return of(spec).get("ca")


def pool_backend(spec):
    """The KV pool backend a pool service serves ("mooncake", "memcache"), else None."""
    return of(spec).get("backend") if kind(spec) == "pool_service" else None


def uses_pool(spec):
    return bool(of(spec).get("pool"))


def pool_bytes(spec):
    """Host memory the KV pool takes for one engine container: its per-worker segment (Mooncake) or DRAM pool
    (Memcache) times its workers (the devices it is given, at least one)."""
    pool = of(spec).get("pool") or {}
    return int(pool.get("bytes_per_worker") or 0) * max(1, len(devices(spec)))


def ucm_storage(spec):
    return dict(of(spec).get("ucm_storage") or {})


def ascend_direct(spec):
    return bool(of(spec).get("ascend_direct"))


def ucm_storage_of_config(config):
    """{storage backend path: posix_capacity_gb} of a UCM config (ucm_cache_config), for the engines' meta."""
    found = {}
    for connector in (config or {}).get("ucm_connectors") or []:
        store = connector.get("ucm_connector_config") or {}
        capacity = int(store.get("posix_capacity_gb") or 0)
        for path in str(store.get("storage_backends") or "").split(":"):
            if path:
                found[path] = capacity
    return found


def engine_meta(process, model_path, flags, addons, gpus=None, live_files=()):
    """An engine's meta: the plan's facts of its process, the served model of its flags, what addons add
    (``meta`` of ucm_cache / mooncake_master / memcache_pool: pool {backend, per_worker}, ucm_storage), and the files it
    reads again when they change (its key file), when it has any."""
    api = "http://%s:%d" % (process["address"], process["port"]) if process["api"] else None
    served = next((value for key, value in flags.items() if flag_name(key) == "served-model-name"), None)
    if isinstance(served, list):
        served = served[0] if served else None
    meta = {
        "kind": "engine", "role": process["role"], "instance": process["instance"], "dp_group": process["dp_group"],
        "dp_ranks": list(process["dp_ranks"]),
        "engines_behind": 1 if process["launch"] == "per_rank" else process["dp_size"],
        "api_url": api, "metrics_url": api + "/metrics" if api else None, "headless": not process["api"],
        # the proxy lists every prefill API and every decode rank (_planner._proxy_endpoints)
        "front_door": "%s:%d" % (process["address"], process["port"])
        if process["api"] and process["role"] in ("prefill", "decode") else None,
        "devices": [int(g) for g in gpus] if gpus else list(process["npus"]), "npus": list(process["npus"]),
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


def service_meta(fields):
    """A service's meta from what its role gives (kind, api_url, metrics_url), role always service."""
    meta = dict(SERVICE)
    meta.update(fields or {})
    meta["role"] = "service"
    return meta
