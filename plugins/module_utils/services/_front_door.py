# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PD proxy's front door: what its launch spec runs, and the inputs refused before any host is touched.

vllm-ascend's load-balance proxy checks no key on any endpoint. The pd_proxy role starts it through its
launcher (roles/pd_proxy/files/front_door.py), which wraps the upstream app, unchanged: client keys for the
API, admin keys (or the proxy's own host) for /instances/* and /reset_prefix_cache, only the plan's
instances for /instances/add, optional TLS. The keys reach the container as secret files (_secret_files: the
spec names them, deploy writes their values from ``pd_proxy_client_keys`` / ``pd_proxy_admin_keys``, the secret
source SOURCE, and the engines' key), which the launcher reads again when they change.
"""

from __future__ import annotations

import json
import typing as t
from collections.abc import Mapping

from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.plan._key_strength import weakness
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import API_KEY_ENV, PROXY_KEY_ENV, render_flags, role_values, secret_digest

LAUNCHER = "front_door.py"
INSTANCES = "instances.json"
UPSTREAM_ENV = "LLMOPS_FRONT_DOOR_UPSTREAM"
INSTANCES_ENV = "LLMOPS_FRONT_DOOR_INSTANCES"
KEYS_ENV = "LLMOPS_FRONT_DOOR_KEYS"
ADMIN_KEYS_ENV = "LLMOPS_FRONT_DOOR_ADMIN_KEYS"
TLS_CERT_ENV = "LLMOPS_FRONT_DOOR_TLS_CERT"
TLS_KEY_ENV = "LLMOPS_FRONT_DOOR_TLS_KEY"
FAILOVER_ENV = "LLMOPS_FRONT_DOOR_FAILOVER"
# The bounds of the failover request path (roles/pd_proxy/files/front_door_router.py), by setting.
BOUND_ENV = {"probe_interval": "LLMOPS_FRONT_DOOR_PROBE_INTERVAL", "first_byte_timeout": "LLMOPS_FRONT_DOOR_FIRST_BYTE_TIMEOUT",
             "tries": "LLMOPS_FRONT_DOOR_TRIES", "request_deadline": "LLMOPS_FRONT_DOOR_DEADLINE"}
# Where deploy finds the keys' values: container_launch_secret_sources[SOURCE][field], one key per line.
SOURCE = "front_door"
KEY_FIELDS = {KEYS_ENV: "client_keys", ADMIN_KEYS_ENV: "admin_keys"}
TLS_DIR = "/run/llmops-front-door-tls"  # inside the container: the certificate and key, mounted read-only
# The proxy's members: the upstream flags listing them and the file the launcher reads them from at start. Both are
# the spec's live parts: a grown or shrunk cluster changes them without restarting the proxy, deploy adds and
# removes the members through the admin API (front_door_members), and a proxy restarted later reads the file.
MEMBER_FLAGS = ("--prefiller-hosts", "--prefiller-ports", "--decoder-hosts", "--decoder-ports")


def _keys(value: t.Any, variable: str, cluster: str) -> list[str]:
    """The keys of a list variable, refusing what would not work as one."""
    if value in (None, ""):
        return []
    if not isinstance(value, (list, tuple)):
        raise ValueError("cluster %s: %s must be a list of keys, not %s. Fix: write it as a YAML list (one item per "
                         "key, two while rotating)." % (cluster, variable, type(value).__name__))
    keys = []
    for index, key in enumerate(value):
        text = "" if key is None else str(key)
        if not text.strip():
            raise ValueError("cluster %s: %s[%d] is empty: a request with an empty key would pass. Fix: give it a key "
                             "(e.g. from openssl rand -hex 24) or remove the item." % (cluster, variable, index))
        if text != text.strip() or any(c in text for c in "\r\n"):
            raise ValueError("cluster %s: %s[%d] has spaces or line breaks around or in it, which no client sends in "
                             "a Bearer token. Fix: remove them." % (cluster, variable, index))
        weak = weakness(text, "%s[%d]" % (variable, index), cluster)
        if weak:
            raise ValueError(weak)
        keys.append(text)
    return keys


def check(settings: Mapping[str, t.Any], sources: Mapping[str, t.Any], cluster: str) -> tuple[list[str], list[str]]:
    """(client keys, admin keys) of the front door; ValueError naming the variable and the fix otherwise."""
    clients = _keys(settings.get("client_keys"), "pd_proxy_client_keys", cluster)
    admins = _keys(settings.get("admin_keys"), "pd_proxy_admin_keys", cluster)
    engine_keys = {str(role_values(sources, role).get(API_KEY_ENV)) for role in ("prefill", "decode")
                   if role_values(sources, role).get(API_KEY_ENV)}
    for variable, keys in (("pd_proxy_client_keys", clients), ("pd_proxy_admin_keys", admins)):
        for index, key in enumerate(keys):
            if key in engine_keys:
                raise ValueError("cluster %s: %s[%d] is the engines' %s: a client holding it could call every engine "
                                 "directly. Fix: give clients keys of their own." % (cluster, variable, index, API_KEY_ENV))
    shared = sorted(set(clients) & set(admins))
    if shared:
        raise ValueError("cluster %s: a key is in both pd_proxy_client_keys and pd_proxy_admin_keys, so every client "
                         "could add or remove instances. Fix: give admins keys of their own." % cluster)
    if not clients and not settings.get("open_front_door"):
        raise ValueError("cluster %s: the PD proxy, the cluster's front door, would serve anyone: "
                         "pd_proxy_client_keys is empty. Fix: give clients keys in pd_proxy_client_keys (in a vault), "
                         "or set pd_proxy_open_front_door: true to serve without keys on purpose." % cluster)
    if not admins:
        raise ValueError("cluster %s: the front door has no admin key, so its admin API (/instances/*) would answer "
                         "anything on the proxy's host. Fix: give pd_proxy_admin_keys, or leave it empty for the "
                         "pd_proxy role to make one in pd_proxy_admin_key_file." % cluster)
    cert, key = settings.get("tls_cert") or "", settings.get("tls_key") or ""
    if bool(cert) != bool(key):
        raise ValueError("cluster %s: pd_proxy_tls_cert and pd_proxy_tls_key go together (%s is set, %s is empty). "
                         "Fix: set both, or neither for plain HTTP." % (
                             cluster, "pd_proxy_tls_cert" if cert else "pd_proxy_tls_key",
                             "pd_proxy_tls_key" if cert else "pd_proxy_tls_cert"))
    return clients, admins


def engine_key(sources: Mapping[str, t.Any], cluster: str) -> str | None:
    """The engines' API key, one for both roles (the proxy sends one), else None."""
    keys = {role: role_values(sources, role).get(API_KEY_ENV) for role in ("prefill", "decode")}
    if not any(keys.values()):
        return None
    if keys["prefill"] != keys["decode"]:
        raise ValueError("cluster %s: the prefill and decode engines get different %s values (vllm_engine_role_env), "
                         "but the PD proxy sends one key to both. Fix: give both roles the same key in "
                         "vllm_engine_secret_env." % (cluster, API_KEY_ENV))
    return str(keys["prefill"])


def instances(endpoints: Mapping[str, list[dict[str, t.Any]]]) -> dict[str, list[str]]:
    """The instances /instances/add accepts: the plan's prefill API endpoints and decode ranks."""
    return {role: ["%s:%s" % (e["address"], e["port"]) for e in endpoints[role]] for role in ("prefill", "decode")}


def command(launcher: str, endpoints: Mapping[str, list[dict[str, t.Any]]], bind: str, port: int,
            extra_flags: Mapping[str, t.Any] | None = None) -> list[str]:
    """The launcher, then the upstream proxy's own argv (004 5.3): every prefill API endpoint and decode rank."""
    prefill, decode = endpoints["prefill"], endpoints["decode"]
    flags: list[str] = render_flags(extra_flags or {})
    return (["python", launcher, "--host", bind, "--port", str(port),
             "--prefiller-hosts"] + [e["address"] for e in prefill]
            + ["--prefiller-ports"] + [str(e["port"]) for e in prefill]
            + ["--decoder-hosts"] + [e["address"] for e in decode]
            + ["--decoder-ports"] + [str(e["port"]) for e in decode]
            + flags)


def failover_env(settings: Mapping[str, t.Any], cluster: str) -> dict[str, str]:
    """The failover path's environment: off (the upstream's own request path) or its bounds, checked."""
    if not settings.get("failover", True):
        return {FAILOVER_ENV: "0"}
    env = {}
    for name, variable in BOUND_ENV.items():
        value = settings.get(name)
        if value in (None, ""):
            continue
        number = int(value) if name == "tries" else float(value)
        if number <= 0 or (name == "probe_interval" and number > 1):
            raise ValueError("cluster %s: pd_proxy_%s is %s. Fix: give a number above 0%s." % (
                cluster, name, value, " and at most 1 (every member is probed at least once a second)"
                if name == "probe_interval" else ""))
        env[variable] = str(number)
    return env


def launcher_files(config_dir: str, texts: str | Mapping[str, str]) -> dict[str, str]:
    """{path on the host: text} of the launcher and the modules beside it (``texts``: {file name: text}, or the
    launcher's text alone)."""
    if isinstance(texts, str):
        texts = {LAUNCHER: texts}
    return {config_dir + "/" + name: text for name, text in sorted(texts.items())}


def proxy_fields(settings: Mapping[str, t.Any], endpoints: Mapping[str, list[dict[str, t.Any]]], sources: Mapping[str, t.Any],
                 cluster: str) -> dict[str, t.Any]:
    """The proxy's launch spec fields that the front door decides: command, env, secret_env, volumes, files, ready
    and meta. ``settings``: script, bind, port, extra_flags, address (the proxy node's), config_dir, container_name,
    launcher (the launcher's files, {file name: text}), client_keys, admin_keys, open_front_door, tls_cert, tls_key,
    failover, probe_interval, first_byte_timeout, tries, request_deadline."""
    clients, admins = check(settings, sources, cluster)
    key = engine_key(sources, cluster)
    config_dir = settings["config_dir"].rstrip("/")
    launcher, listed = config_dir + "/" + LAUNCHER, config_dir + "/" + INSTANCES
    env = {UPSTREAM_ENV: settings["script"], INSTANCES_ENV: listed}
    env.update(failover_env(settings, cluster))
    volumes = ["%s:%s:ro" % (config_dir, config_dir)]
    tls = bool(settings.get("tls_cert"))
    if tls:
        env.update({TLS_CERT_ENV: TLS_DIR + "/tls.crt", TLS_KEY_ENV: TLS_DIR + "/tls.key"})
        volumes += ["%s:%s/tls.crt:ro" % (settings["tls_cert"], TLS_DIR), "%s:%s/tls.key:ro" % (settings["tls_key"], TLS_DIR)]
    names: list[str] = []
    aliases: dict[str, str] = {}
    from_sources: dict[str, list[str]] = {}
    values: dict[str, str] = {}
    if key:
        names.append(PROXY_KEY_ENV)
        aliases[PROXY_KEY_ENV] = API_KEY_ENV
        values[PROXY_KEY_ENV] = key
    for name, keys in ((KEYS_ENV, clients), (ADMIN_KEYS_ENV, admins)):
        if keys:
            names.append(name)
            from_sources[name] = [SOURCE, KEY_FIELDS[name]]
            values[name] = "\n".join(keys)
    secret: dict[str, t.Any] | None = None
    live_secrets: list[str] = []
    if names:
        # the launcher reads each again when it changes: deploy rewrites the clients' and admins' without restarting
        # the proxy; a new engines' key restarts it, in its wave after every engine took the key
        live = {name: values[name] for name in KEY_FIELDS if name in values}
        fixed = {name: value for name, value in values.items() if name not in live}
        secret = {"names": names, "role": "prefill", "digest": secret_digest(fixed, cluster)}
        secret_files.as_files(secret, settings["container_name"], names)
        live_secrets = secret_files.make_live(secret, live)
        volumes.append(secret_files.mount(settings["container_name"]))
        if aliases:
            secret["aliases"] = aliases
        if from_sources:
            secret["sources"] = from_sources
    url = "%s://%s:%s" % ("https" if tls else "http", settings["address"], settings["port"])
    ready = {"http": url + "/healthcheck"}
    if settings.get("tls_ca"):
        ready["ca"] = settings["tls_ca"]
    meta = {"kind": "proxy", "port": int(settings["port"]), "api_url": url, "ca": settings.get("tls_ca") or None if tls else None,
            "client_auth": bool(clients), "admin_auth": bool(admins), "tls": tls,
            "failover": env.get(FAILOVER_ENV) != "0", "live": {"flags": list(MEMBER_FLAGS), "files": [listed] + live_secrets}}
    if meta["failover"] and not tls:  # its members' state, for Prometheus (a scrape over TLS would need the CA)
        meta["metrics_url"] = url + "/metrics"
    files = launcher_files(config_dir, settings["launcher"])
    files[listed] = json.dumps(instances(endpoints), indent=2, sort_keys=True) + "\n"
    return {
        "command": command(launcher, endpoints, settings["bind"], settings["port"], settings.get("extra_flags")),
        "env": env, "secret_env": secret, "volumes": volumes, "files": files, "ready": ready, "meta": meta,
    }
