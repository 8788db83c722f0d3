# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PD proxy's front door: vllm-ascend's load-balance proxy, unchanged, behind a key check.

    python front_door.py --host H --port P --prefiller-hosts ... (the upstream proxy's own flags)

The upstream example checks no key on any endpoint and serves whoever reaches its port; its
``/instances/add`` registers any host, which it then polls with the engines' key (its
``check_instance_status`` sends ``Bearer $OPENAI_API_KEY``). This launcher imports the upstream
script as a module, wraps its ASGI app and starts uvicorn as the upstream ``__main__`` does (same
flags, same workers, same manager bootstrap), so the proxy's behaviour and flags stay upstream's.

What the wrapper enforces, from its environment (the pd_proxy role sets it from the plan):
  LLMOPS_FRONT_DOOR_UPSTREAM     path of the upstream proxy script (required)
  LLMOPS_FRONT_DOOR_KEYS         client keys, one per line; /v1/* and every other path but the open and
                                 admin ones need ``Authorization: Bearer <one of them>`` (401 otherwise).
                                 Unset or empty: the API is open (the plan allows that only when asked).
  LLMOPS_FRONT_DOOR_ADMIN_KEYS   admin keys, one per line, for /instances/* and /reset_prefix_cache.
                                 Unset or empty: those answer only to the proxy's own host (loopback).
  LLMOPS_FRONT_DOOR_INSTANCES    JSON file {"prefill": ["host:port", ...], "decode": [...]}: the only
                                 instances /instances/add accepts (403 otherwise), so the proxy never sends
                                 the engines' key to a host that is not in the plan.
  LLMOPS_FRONT_DOOR_TLS_CERT / _TLS_KEY   PEM files: serve HTTPS instead of HTTP.
/healthcheck stays open. Keys are compared in constant time and read from the Authorization header
only (never from a query string). The process runs with umask 077, so the upstream's cross-worker
manager file (its authkey, /tmp/vllm_lb_proxy_manager_<port>.json) is readable by its owner only.
"""

from __future__ import annotations

import hmac
import importlib
import ipaddress
import json
import os
import sys
from pathlib import Path

OPEN_PATHS = frozenset({"/healthcheck"})
ADMIN_PATHS = frozenset({"/instances/add", "/instances/remove", "/reset_prefix_cache"})
ADD_PATH = "/instances/add"
ROLES = ("prefill", "decode")


def keys_from(value):
    """The keys of a one-per-line variable (blank lines ignored)."""
    return tuple(line.strip() for line in (value or "").splitlines() if line.strip())


def bearer(headers):
    """The token of the request's ``Authorization: Bearer`` header (ASGI headers), else None."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _space, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def key_matches(token, keys):
    """Whether token is one of keys; every key is compared, in constant time."""
    if token is None:
        return False
    given = token.encode()
    found = False
    for key in keys:
        found |= hmac.compare_digest(given, key.encode())
    return found


def is_loopback(client):
    """Whether the ASGI client (host, port) is the proxy's own host."""
    try:
        return bool(client) and ipaddress.ip_address(client[0]).is_loopback
    except ValueError:
        return False


def host_port(instance):
    """("host", port) of a "host:port" or "[v6]:port" instance, else None."""
    host, sep, port = str(instance).rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]").lower(), int(port)


def refused_instances(body, allowed):
    """The instances of an /instances/add body that are not in the plan (all of them when the body is not one)."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return ["(a body that is not JSON)"]
    if not isinstance(data, dict):
        return ["(a body that is not an object)"]
    role, instances = data.get("type"), data.get("instances", [])
    if isinstance(instances, str):
        instances = [instances]
    if role not in ROLES or not isinstance(instances, list):
        return ["(type %r)" % (role,)]
    planned = {host_port(i) for i in allowed.get(role, ())}
    return [str(i) for i in instances if host_port(i) is None or host_port(i) not in planned]


def load_instances(path):
    if not path:
        return {role: () for role in ROLES}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {role: tuple(data.get(role) or ()) for role in ROLES}


def error_body(message, kind, code):
    """An OpenAI-style error body."""
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


class FrontDoor:
    """ASGI middleware: the key check in front of the upstream proxy's app."""

    def __init__(self, app, client_keys=(), admin_keys=(), instances=None):
        self.app = app
        self.client_keys = tuple(client_keys)
        self.admin_keys = tuple(admin_keys)
        self.instances = instances or {role: () for role in ROLES}

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":  # lifespan: the upstream app's own start and stop
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        token = bearer(scope.get("headers") or [])
        if path in OPEN_PATHS:
            return await self.app(scope, receive, send)
        if path in ADMIN_PATHS:
            if self.admin_keys and not key_matches(token, self.admin_keys):
                return await self.refuse(send, 401, "an admin key is required for %s" % path, "authentication_error",
                                         "invalid_api_key")
            if not self.admin_keys and not is_loopback(scope.get("client")):
                return await self.refuse(send, 403, "%s answers only to the proxy's own host" % path, "permission_error",
                                         "forbidden")
            if path == ADD_PATH:
                return await self.add_instances(scope, receive, send)
            return await self.app(scope, receive, send)
        if self.client_keys and not key_matches(token, self.client_keys):
            return await self.refuse(send, 401, "a valid API key is required (Authorization: Bearer <key>)",
                                     "invalid_request_error", "invalid_api_key")
        return await self.app(scope, receive, send)

    async def add_instances(self, scope, receive, send):
        """Only instances of the plan: the upstream proxy polls an added instance with the engines' key."""
        chunks, more = [], True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        refused = refused_instances(body, self.instances)
        if refused:
            return await self.refuse(send, 403, "not instances of the cluster's plan: %s" % ", ".join(refused),
                                     "permission_error", "instance_not_planned")
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        return await self.app(scope, replay, send)

    @staticmethod
    async def refuse(send, status, message, kind, code):
        headers = [(b"content-type", b"application/json")]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": error_body(message, kind, code)})


def upstream_module():
    """The upstream proxy script, imported by its file name from its directory (once per process)."""
    script = Path(os.environ["LLMOPS_FRONT_DOOR_UPSTREAM"]).resolve()
    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))
    return importlib.import_module(script.stem)


def create_app():
    """uvicorn's factory, in the parent (one worker) or in each worker process."""
    upstream = upstream_module()
    return FrontDoor(upstream.create_app(),
                     client_keys=keys_from(os.environ.get("LLMOPS_FRONT_DOOR_KEYS")),
                     admin_keys=keys_from(os.environ.get("LLMOPS_FRONT_DOOR_ADMIN_KEYS")),
                     instances=load_instances(os.environ.get("LLMOPS_FRONT_DOOR_INSTANCES")))


def main():
    """What the upstream script's __main__ does, with create_app above as the factory."""
    os.umask(0o077)
    upstream = upstream_module()
    args = upstream.parse_args()
    upstream.global_args = args
    upstream.setup_logging(args.log_level)
    upstream.bootstrap_parent_process(args)
    tls = {"ssl_certfile": os.environ.get("LLMOPS_FRONT_DOOR_TLS_CERT") or None,
           "ssl_keyfile": os.environ.get("LLMOPS_FRONT_DOOR_TLS_KEY") or None}
    # in the proxy's image, not the controller's: imported only where it runs
    import uvicorn  # pylint: disable=import-outside-toplevel

    try:
        uvicorn.run("%s:create_app" % Path(__file__).stem, host=args.host, port=args.port, workers=args.workers,
                    factory=True, app_dir=str(Path(__file__).resolve().parent), **tls)
    finally:
        upstream.cleanup_manager_config(args.port)


if __name__ == "__main__":
    main()
