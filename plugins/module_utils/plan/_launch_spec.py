# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launch specs: one JSON-able dict per container the collection starts.

Plan mode writes them; deploy mode starts exactly them. The keys are a contract other
tools read (docs/plan_mode.md): name, host, image, command, env, devices, gpus, volumes,
network_mode, ipc_mode, privileged, shm_size, files, wave, ready, secret_env, and meta (what the plan
knows of the container, _spec_meta; no part of the hash).

Secrets never enter a spec: an environment variable that is secret (from vllm_engine_secret_env,
or named like *TOKEN*, *KEY*, *PASSWORD*, *SECRET*) has the value ``<secret>`` in ``env``, and
``secret_env`` names it, says where its value comes from and carries a slow salted digest of the
values, so a changed secret still changes the spec (and restarts its container) without the spec
telling anything about the secret. Deploy mode puts the values in only when it starts the container.
The keys that open the cluster go as files instead, which its env does not list (_secret_files).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import typing as t
from collections.abc import Iterable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit

from ansible_collections.llmops.inference.plugins.module_utils._text import aligned
from ansible_collections.llmops.inference.plugins.module_utils.plan import _restart_policy as restart_policy
from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._key_strength import weakness
from ansible_collections.llmops.inference.plugins.module_utils.plan._kv_config import compact_json
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec, Plan

SPEC_KEYS = ("name", "host", "image", "command", "env", "devices", "gpus", "volumes", "network_mode",
             "ipc_mode", "privileged", "shm_size", "files", "wave", "ready", "secret_env", "meta", "restart")
# What the plan knows of a container (_spec_meta), and Docker's restart policy (_restart_policy: a running container
# gets a changed one without a restart): carried by the spec, not part of its hash.
UNHASHED_KEYS = ("meta", "restart")
SECRET_PLACEHOLDER = "<secret>"
API_KEY_ENV = "VLLM_API_KEY"  # vLLM's key for /v1/* (vllm serve reads it; --api-key would show it)
# vllm serve flags that take a secret (vllm_engine_args / vllm_engine_role_args keys, without the dashes), and the
# environment variable the engine reads it from instead (vLLM: VLLM_API_KEY; huggingface_hub: HF_TOKEN)
HF_TOKEN_ENV = "HF_TOKEN"
HF_TOKEN_PATH_ENV = "HF_TOKEN_PATH"  # huggingface_hub's token file, read when HF_TOKEN is unset
SECRET_FLAGS = {"api-key": API_KEY_ENV, "api_key": API_KEY_ENV, "hf-token": HF_TOKEN_ENV, "hf_token": HF_TOKEN_ENV}
PROXY_KEY_ENV = "OPENAI_API_KEY"  # what vllm-ascend's load-balance proxy sends the engines as its Bearer token
# Environment names that hold secrets even when set in vllm_engine_env.
SECRET_NAME = re.compile(r"TOKEN|KEY|PASSWORD|SECRET", re.IGNORECASE)


def render_flags(flags: Mapping[str, t.Any]) -> list[str]:
    """{flag: value} -> argv items: true is a bare flag, false/None drop it, dicts and lists become JSON."""
    argv: list[str] = []
    for flag, value in flags.items():
        if value is None or value is False:
            continue
        argv.append("--" + flag)
        if value is True:
            continue
        argv.append(compact_json(value) if isinstance(value, (dict, list)) else str(value))
    return argv


def merged(common: Mapping[str, t.Any] | None, override: Mapping[str, t.Any] | None) -> dict[str, t.Any]:
    """Role settings over cluster settings, keeping the cluster's order; None in the role removes a key."""
    result = dict(common or {})
    for key, value in (override or {}).items():
        result[key] = value
    return {k: v for k, v in result.items() if v is not None}


def identity(spec: LaunchSpec) -> dict[str, t.Any]:
    """What decides a container's restart: the spec but ``meta`` (what the plan knows of the container, not what it
    runs) and its live parts (meta.live: flags and files the running process learns otherwise, the front door's
    members, which deploy adds and removes through the proxy's admin API, and its key files, which deploy rewrites
    and it reads again). The container still starts with them."""
    flags, files = spec_meta.live(spec)
    same = {key: value for key, value in spec.items() if key not in UNHASHED_KEYS}
    if flags:
        same["command"] = without_flags(spec.get("command") or [], flags)
    if files:
        same["files"] = {path: text for path, text in (spec.get("files") or {}).items() if path not in files}
    record = spec.get("secret_env") or {}
    if record.get("digests"):  # the digests of key files it reads again (its ``digest`` covers the other secrets)
        same["secret_env"] = {key: value for key, value in record.items() if key != "digests"}
    return same


def without_flags(command: Iterable[str], flags: Sequence[str]) -> list[str]:
    """An argv without the given --flags and their values (the words up to the next --flag)."""
    kept: list[str] = []
    dropping = False
    for word in command:
        if word.startswith("--"):
            dropping = word in flags
        if not dropping:
            kept.append(word)
    return kept


def spec_hash(spec: LaunchSpec) -> str:
    """Stable digest of a spec's identity: the label deploy mode compares to decide a restart (a cluster deployed
    before ``meta`` existed stays as it is)."""
    hashed = identity(spec)
    return hashlib.sha256(json.dumps(hashed, sort_keys=True).encode()).hexdigest()[:16]


def new_spec(**fields: t.Any) -> LaunchSpec:
    spec: dict[str, t.Any] = {
        "name": None, "host": None, "image": None, "command": [], "env": {}, "devices": [], "gpus": None,
        "volumes": [], "network_mode": "host", "ipc_mode": None, "privileged": False, "shm_size": None,
        "files": {}, "wave": 0, "ready": None, "secret_env": None, "meta": None, "restart": restart_policy.NEVER,
    }
    unknown = set(fields) - set(SPEC_KEYS)
    if unknown:
        raise ValueError("unknown launch spec keys %s" % sorted(unknown))
    spec.update(fields)
    spec["env"] = {k: str(v) for k, v in spec["env"].items()}
    if spec["meta"] is None or spec["meta"].get("kind") != "engine":
        spec["meta"] = spec_meta.service_meta(spec["meta"])
    return t.cast(LaunchSpec, spec)


def engine_waves(plan: Plan) -> dict[str, int]:
    """{role: wave}, plus 'store', 'pool' and 'proxy': the KV pool's store first when the collection deploys one (etcd
    of HA masters, which elect their leader in it), the pool service, then the plan's engine waves, the proxy last.
    Waves are numbered densely: no empty wave costs a round."""
    store = 1 if plan.get("kv_pool_store") else 0
    first = store + (1 if plan.get("kv_pool") else 0)
    waves = {"store": 0, "pool": store}
    for index, roles in enumerate(plan["start_waves"]):
        waves.update({role: first + index for role in roles})
    waves["proxy"] = first + len(plan["start_waves"])
    return waves


def wave_numbers(plan: Plan) -> list[int]:
    """The waves that have containers: the pool service's, the engines', and the proxy's (PD only)."""
    waves = engine_waves(plan)
    numbers = {waves[role] for roles in plan["start_waves"] for role in roles}
    if plan.get("kv_pool"):
        numbers.add(waves["pool"])
    if plan.get("kv_pool_store"):
        numbers.add(waves["store"])
    if any("prefill" in roles for roles in plan["start_waves"]):
        numbers.add(waves["proxy"])
    return sorted(numbers)


def looks_secret(name: str) -> bool:
    return SECRET_NAME.search(name) is not None


secret_digest = secret_files.digest


def secret_values(record: Mapping[str, t.Any] | None, sources: Mapping[str, t.Any]) -> dict[str, str]:
    """The real values of a spec's secret environment (deploy mode, right before the container starts).

    ``sources``: {"secret_env": vllm_engine_secret_env, "env": vllm_engine_env, "role_env": vllm_engine_role_env,
    "front_door": {"client_keys": pd_proxy_client_keys, "admin_keys": pd_proxy_admin_keys}}.
    """
    if not record:
        return {}
    values = role_values(sources, record["role"])
    aliases = record.get("aliases") or {}  # a name whose value is another variable's (the proxy's key)
    # a name whose value is followed by a list of another source, one item per line (the engines' retiring keys)
    for name, source in (record.get("appended") or {}).items():
        if values.get(name):
            values[name] = secret_files.key_lines(values[name], sources.get(source))
    # a name whose value is a list in another source, one item per line (the front door's keys: [source, field])
    for name, (source, field) in (record.get("sources") or {}).items():
        items = (sources.get(source) or {}).get(field)
        if items:
            values[name] = "\n".join(str(item) for item in items)
    missing = [name if name not in aliases else "%s (from %s)" % (name, aliases[name])
               for name in record["names"] if aliases.get(name, name) not in values]
    if missing:
        raise ValueError("secret environment %s has no value on this host" % ", ".join(missing))
    return {name: str(values[aliases.get(name, name)]) for name in record["names"]}


def role_values(sources: Mapping[str, t.Any], role: str) -> dict[str, t.Any]:
    """The environment values an engine of this role gets: vllm_engine_env, its role_env, then secret_env."""
    values = dict(sources.get("env") or {})
    values.update(((sources.get("role_env") or {}).get(role)) or {})
    values.update(sources.get("secret_env") or {})
    return values


def mask_secrets(env: dict[str, t.Any], role: str, secret_env: Mapping[str, t.Any] | None, cluster: str, digests: dict[str, str],
                 live: Iterable[str] = ()) -> dict[str, t.Any] | None:
    """Replace secret values in env by SECRET_PLACEHOLDER; return the spec's secret_env record. Its digest leaves out
    the ``live`` names, key files the process reads again (their own digests decide their rewrite, not a restart)."""
    given = secret_env or {}
    names = sorted(set(given) | {name for name in env if looks_secret(name)})
    if not names:
        return None
    env.update({name: str(value) for name, value in given.items()})
    values = {name: env[name] for name in names if name not in live}
    key = json.dumps(values, sort_keys=True)
    if key not in digests:
        digests[key] = secret_digest(values, cluster)
    env.update(dict.fromkeys(names, SECRET_PLACEHOLDER))
    return {"names": names, "role": role, "digest": digests[key]}


def engine_secret_env(engine: Mapping[str, t.Any]) -> dict[str, t.Any]:
    """vllm_engine_secret_env with the engines' key as its file holds it: the key, then the retiring keys."""
    secret_env = dict(engine.get("secret_env") or {})
    if secret_env.get(API_KEY_ENV):
        secret_env[API_KEY_ENV] = secret_files.key_lines(secret_env[API_KEY_ENV], engine.get("retiring_api_keys"))
    return secret_env


def guard_engine(name: str, command: list[str], env: dict[str, t.Any], volumes: list[str], files: dict[str, str],
                 secret: dict[str, t.Any], guard_texts: dict[str, str], key_lines: str) -> tuple[list[str], list[str]]:
    """An engine with a key: the key goes as a file, which llmops_key_guard checks on every route (vLLM's own check
    covers /v1 and a few more prefixes only, from the environment) and reads again when it changes, so a new or
    retired key is written in place, restarting nothing. Returns (the command that loads the guard, the live file)."""
    env.pop(API_KEY_ENV, None)
    secret_files.as_files(secret, name, [API_KEY_ENV])
    secret["appended"] = {API_KEY_ENV: secret_files.RETIRING_SOURCE}
    files.update(secret_files.guard_files(guard_texts))
    volumes += ["%s:%s:ro" % (secret_files.GUARD_DIR, secret_files.GUARD_DIR), secret_files.mount(name)]
    return secret_files.guarded_command(command), secret_files.make_live(secret, {API_KEY_ENV: key_lines})


def token_as_file(name: str, env: dict[str, t.Any], volumes: list[str], secret: dict[str, t.Any]) -> None:
    """The Hugging Face token as a file that huggingface_hub reads (HF_TOKEN_PATH), not environment."""
    env.pop(HF_TOKEN_ENV, None)
    env[HF_TOKEN_PATH_ENV] = "%s/%s" % (secret_files.SECRETS_MOUNT, HF_TOKEN_ENV)
    secret_files.as_files(secret, name, [HF_TOKEN_ENV])
    if secret_files.mount(name) not in volumes:
        volumes.append(secret_files.mount(name))


def plain_api_key(engine: Mapping[str, t.Any], cluster: str) -> None:
    """Refuse the engines' key among plain settings. The specs would still mask it (its name looks
    secret), but vllm_engine_env and vllm_engine_role_env are kept in the clear in inventories, while the key,
    which opens every engine, belongs in vllm_engine_secret_env (kept in a vault)."""
    plain = [("vllm_engine_env", engine.get("env") or {})]
    plain += [("vllm_engine_role_env.%s" % role, env or {}) for role, env in sorted((engine.get("role_env") or {}).items())]
    for variable, env in plain:
        if API_KEY_ENV in env:
            raise ValueError("cluster %s: %s sets %s, the engines' API key, in plain environment. Fix: move it to "
                             "vllm_engine_secret_env (in a vault)." % (cluster, variable, API_KEY_ENV))


def weak_api_key(engine: Mapping[str, t.Any], cluster: str) -> None:
    """Refuse an engines' key, or a retiring one, that a guesser could find (_key_strength): it opens every engine."""
    key = (engine.get("secret_env") or {}).get(API_KEY_ENV)
    named = [("vllm_engine_secret_env.%s" % API_KEY_ENV, key)] if key else []
    named += [("vllm_engine_retiring_api_keys[%d]" % index, old) for index, old in enumerate(engine.get("retiring_api_keys") or ())]
    for variable, value in named:
        weak = weakness(str(value), variable, cluster)
        if weak:
            raise ValueError(weak)


def secret_flags(engine: Mapping[str, t.Any], cluster: str) -> None:
    """Refuse secrets in vllm serve's command: the plan's output, ``ps`` on the host and ``docker inspect`` all show it.
    A flag that takes one (--api-key, --hf-token with a value) goes to the environment variable the engine reads
    instead, from vllm_engine_secret_env; a URL with a user and password, in any flag, likewise. The refusal names the
    flag, never its value."""
    variables = "vllm_engine_args / vllm_engine_role_args"
    for args in [engine.get("args") or {}] + list((engine.get("role_args") or {}).values()):
        for flag, value in sorted((args or {}).items()):
            if flag in SECRET_FLAGS and value is not True:  # a bare --hf-token uses the token huggingface-cli stored
                raise ValueError("cluster %s: %s in %s would show the key in every output. Fix: remove it and set "
                                 "vllm_engine_secret_env: {%s: ...} (the engine reads it)." % (cluster, flag, variables, SECRET_FLAGS[flag]))
            if any(_has_credentials(text) for text in _strings(value)):
                raise ValueError("cluster %s: %s in %s holds a URL with a user and password, which every output would show. "
                                 "Fix: give the engine the credentials through vllm_engine_secret_env (e.g. HF_TOKEN), never "
                                 "in a flag." % (cluster, flag, variables))


# vllm serve flags that say the engines take media (images, audio, video) in requests, which vLLM then fetches from
# any URL a client names unless --allowed-media-domains lists where media may come from
MEDIA_FLAGS = ("limit-mm-per-prompt", "mm-processor-kwargs", "media-io-kwargs", "allowed-local-media-path")
# --allowed-local-media-path at or above these lets a client read the container's own files as "media"
SYSTEM_PATHS = ("/", "/etc", "/root", "/home", "/proc", "/sys", "/var", "/usr", "/run", "/dev", "/boot", "/tmp")


def _takes_media(flag: str, value: t.Any) -> bool:
    """Whether a media flag lets requests carry media: limit-mm-per-prompt with some modality above 0 (the seeds' {image:
    1, video: 0} does), any other of MEDIA_FLAGS when set."""
    if flag != "limit-mm-per-prompt":
        return bool(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return True
    return not isinstance(value, dict) or any(not isinstance(n, int) or n > 0 for n in value.values())


def open_media(engine: Mapping[str, t.Any], cluster: str) -> None:
    """Refuse what turns the engines into an open fetcher or a leak: media without a list of domains it may come from
    (a client could make every engine fetch any URL, internal ones too) unless the operator opens it by name
    (vllm_engine_open_media_fetch), and local media from a system directory."""
    sets = [("vllm_engine_args", engine.get("args") or {})]
    sets += [("vllm_engine_role_args.%s" % role, args or {}) for role, args in sorted((engine.get("role_args") or {}).items())]
    guarded = engine.get("open_media_fetch") or any("allowed-media-domains" in args for _variable, args in sets)
    for variable, args in sets:
        media = [flag for flag in MEDIA_FLAGS if flag in args and _takes_media(flag, args[flag])]
        if media and not guarded:
            raise ValueError("cluster %s: %s sets %s (the engines take media), but no allowed-media-domains, so any client "
                             "could make the engines fetch any URL. Fix: add allowed-media-domains (the domains media may "
                             "come from, e.g. [images.example.com]) to vllm_engine_args, or set vllm_engine_open_media_fetch: "
                             "true to allow every domain on purpose." % (cluster, variable, ", ".join(media)))
        local = args.get("allowed-local-media-path")
        if local and os.path.normpath(str(local)) in SYSTEM_PATHS:
            raise ValueError("cluster %s: %s sets allowed-local-media-path to %s, which lets a client read the engine "
                             "container's own files as media. Fix: a directory that holds only media (e.g. /data/media), "
                             "or none." % (cluster, variable, local))


def _strings(value: t.Any) -> Iterator[str]:
    """Every string in a flag's value (a JSON value may nest them)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _strings(item)


def _has_credentials(text: str) -> bool:
    """Whether text holds a URL with a password (scheme://user:password@host)."""
    for word in re.findall(r"[A-Za-z][A-Za-z0-9+.-]*://\S+", text):
        try:
            if urlsplit(word).password:
                return True
        except ValueError:  # not a URL after all (an unclosed IPv6 bracket)
            continue
    return False


def engine_specs(plan: Plan, engine: Mapping[str, t.Any]) -> list[LaunchSpec]:
    """The launch specs of every engine process of the plan.

    ``engine`` holds the per-cluster settings: image, model, container_name, args, role_args,
    env, role_env, volumes, driver (devices, volumes, network_mode, ipc_mode,
    privileged, shm_size, gpus), addons (env, volumes, files contributed by ucm_cache,
    memcache_pool, mooncake_master; an addon's ``by_role`` adds more of each per engine role) and
    secret_env (masked, see the module's docstring).
    """
    plain_api_key(engine, plan["cluster"])
    weak_api_key(engine, plan["cluster"])
    secret_flags(engine, plan["cluster"])
    open_media(engine, plan["cluster"])
    waves = engine_waves(plan)
    driver = engine["driver"]
    specs: list[LaunchSpec] = []
    digests: dict[str, str] = {}
    secret_env = engine_secret_env(engine)
    for process in plan["processes"]:
        host = process["host"]
        role = process["role"]
        flags = merged(engine.get("args"), (engine.get("role_args") or {}).get(role))
        command = ["vllm", "serve", engine["model"]] + process["args"] + render_flags(flags)
        if process["api_server_count"] is not None:
            command += ["--api-server-count", str(process["api_server_count"])]
        if process["kv_transfer_config"] is not None:
            command += ["--kv-transfer-config", process["kv_transfer_config"]]
        env = merged(engine.get("env"), (engine.get("role_env") or {}).get(role))
        volumes = list(driver.get("volumes") or []) + list(engine.get("volumes") or [])
        files: dict[str, str] = {}
        addon_meta: list[dict[str, t.Any]] = []
        for addon in engine.get("addons") or []:
            for part in (addon, (addon.get("by_role") or {}).get(role) or {}):
                env.update(part.get("env") or {})
                volumes += [v for v in part.get("volumes") or [] if v not in volumes]
                files.update(part.get("files") or {})
                addon_meta.append(part.get("meta") or {})
        env.update(process["env"])  # the plan's per-rank values win over any static setting
        secret = mask_secrets(env, role, secret_env, plan["cluster"], digests, live=[API_KEY_ENV])
        name = engine["container_name"]
        if process["launch"] == "per_rank":
            name = "%s-%s" % (name, process["key"])
        elif role in ("prefill", "decode"):  # one process per node of a PD group: still named by its role (and instance)
            name = "%s-%s" % (name, process["instance"])
        live: list[str] = []
        if secret and API_KEY_ENV in secret["names"]:
            command, live = guard_engine(name, command, env, volumes, files, secret, engine.get("guard") or {},
                                         secret_env[API_KEY_ENV])
        if secret and HF_TOKEN_ENV in secret["names"]:
            token_as_file(name, env, volumes, secret)
        if process["api"] and secret and API_KEY_ENV in secret["names"]:
            # vLLM then refuses /v1/* without the key; /health stays open (and the key stays out of probes)
            ready = {"http": "http://%s:%d/health" % (process["address"], process["port"])}
        elif process["api"]:
            # container_ready also checks the answer lists --served-model-name
            ready = {"http": "http://%s:%d/v1/models" % (process["address"], process["port"])}
        else:
            # what vLLM logs once an engine core has loaded (vllm_engine_headless_ready_log): a headless rank's only sign
            ready = {"log": engine["headless_ready_log"]}
        specs.append(new_spec(
            name=name, host=host, image=process.get("image") or engine["image"], command=command, env=env,
            devices=list(driver.get("devices") or []),
            gpus=[str(d) for d in process["devices"]] if driver.get("gpus") else None,
            volumes=volumes, network_mode=driver.get("network_mode", "host"), ipc_mode=driver.get("ipc_mode"),
            privileged=bool(driver.get("privileged")), shm_size=driver.get("shm_size"),
            files=files, wave=waves[role], ready=ready, secret_env=secret,
            meta=spec_meta.engine_meta(process, engine["model"], flags, addon_meta,
                                       gpus=process["devices"] if driver.get("gpus") else None, live_files=live),
        ))
    return specs


def plan_table(specs: Iterable[LaunchSpec]) -> list[str]:
    """Rows of hosts, containers, ranks, devices and ports, for the plan-mode printout."""
    rows = []
    for spec in sorted(specs, key=lambda s: (s["wave"], s["host"], s["name"])):
        devices = ",".join(str(d) for d in spec_meta.devices(spec)) or "-"
        port = spec_meta.port(spec)
        shown = "headless" if spec_meta.of(spec).get("headless") else "-" if port is None else str(port)
        rows.append((spec["host"], str(spec["wave"]), spec["name"], spec_meta.dp_ranks(spec) or "-", devices, shown))
    return aligned(("HOST", "WAVE", "CONTAINER", "DP RANKS", "DEVICES", "PORTS"), rows)
