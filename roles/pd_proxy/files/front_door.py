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

What the wrapper enforces, from its secret files (/run/llmops/secrets, mounted read-only; each read again when it
changes, so a key added or retired takes effect without a restart) and its environment (the pd_proxy role sets both
from the plan):
  LLMOPS_FRONT_DOOR_KEYS         (file) client keys, one per line; /v1/* and every other path but the open and
                                 admin ones need ``Authorization: Bearer <one of them>`` (401 otherwise).
                                 No file: the API is open (the plan allows that only when asked).
  LLMOPS_FRONT_DOOR_ADMIN_KEYS   (file) admin keys, one per line, for /instances/* and /reset_prefix_cache.
                                 No file: those answer only to the proxy's own host (loopback, or a
                                 connection from the address it was reached on).
  OPENAI_API_KEY                 (file) the engines' key, which the proxy sends them (the upstream reads it from
                                 this process's environment, which the launcher keeps equal to the file).
  LLMOPS_FRONT_DOOR_UPSTREAM     path of the upstream proxy script (required)
  LLMOPS_FRONT_DOOR_INSTANCES    JSON file {"prefill": ["host:port", ...], "decode": [...]}: the plan's members.
                                 The proxy starts with them (they replace the argv's --prefiller-* and
                                 --decoder-* lists, so a proxy restarted after the cluster grew or shrank
                                 serves its current instances), and /instances/add accepts only them (403
                                 otherwise, read again on each add), so the proxy never sends the engines' key
                                 to a host that is not in the plan.
  LLMOPS_FRONT_DOOR_TLS_CERT / _TLS_KEY   PEM files: serve HTTPS instead of HTTP.
  LLMOPS_FRONT_DOOR_FAILOVER     "0": completions take the upstream proxy's own request path. Otherwise (the default)
                                 front_door_router.py serves them over the upstream's lists: members watched, tries
                                 sent again, explicit errors (its docstring); LLMOPS_FRONT_DOOR_PROBE_INTERVAL,
                                 _FIRST_BYTE_TIMEOUT, _TRIES and _DEADLINE bound it. It also serves GET /v1/models,
                                 GET /metrics (open, like /healthcheck) and GET /members (admin: each member's state).
An /instances/add of a member the proxy still lists, taken out earlier (upstream's remove only taints a member
while any request is in flight, and its add skips a listed member, so under steady load a member taken out could
never come back), puts it back at once through the upstream scheduler's own activate_waiting_instance.
/healthcheck (and /metrics) stay open. Keys are compared in constant time and read from the Authorization header
only (never from a query string). Before a request reaches the proxy, front_door_guard.py refuses what no client
should send: a body over LLMOPS_FRONT_DOOR_MAX_BODY bytes (413; 32 MiB unless set) or slower to arrive than
LLMOPS_FRONT_DOOR_READ_TIMEOUT seconds (408; 30 unless set), an address's wrong or missing keys past 20 a minute
(429 with Retry-After), websockets; it drops the proxy's own fields (kv_transfer_params) from completion bodies, and
/instances/add passes on the plan's member strings, never the client's body. TLS offers AEAD suites only. Each
worker holds at most LLMOPS_FRONT_DOOR_MAX_CONCURRENCY connections and requests (4096 unless set), answering 503 past
them (uvicorn's limit_concurrency). The
process runs with umask 077, so the upstream's cross-worker manager file (its authkey,
/tmp/vllm_lb_proxy_manager_<port>.json) is readable by its owner only.
"""

from __future__ import annotations

import importlib
import ipaddress
import json
import math
import os
import sys
from pathlib import Path

# beside this file in the proxy's container (and on the controller's path in the unit tests)
import front_door_guard  # pylint: disable=wrong-import-order
import llmops_key_guard  # pylint: disable=wrong-import-order
from front_door_stream import error_of  # pylint: disable=wrong-import-order
from llmops_key_guard import bearer, key_matches  # pylint: disable=wrong-import-order

OPEN_PATHS = frozenset({"/healthcheck", "/metrics"})
ADMIN_PATHS = frozenset({"/instances/add", "/instances/remove", "/reset_prefix_cache", "/members"})
ADD_PATH = "/instances/add"
REMOVE_PATH = "/instances/remove"
COMPLETIONS = frozenset({"/v1/completions", "/v1/chat/completions"})
ROLES = ("prefill", "decode")
MEMBER_FLAGS = {"prefill": ("--prefiller-hosts", "--prefiller-ports"), "decode": ("--decoder-hosts", "--decoder-ports")}
PROXY_KEY = "OPENAI_API_KEY"  # the upstream proxy's Bearer token to the engines


def key_source(keys):
    """A callable giving the keys now: a KeyFile's (read again when it changes), or a fixed tuple's."""
    if hasattr(keys, "keys") and callable(keys.keys):
        return keys.keys
    fixed = tuple(keys or ())
    return lambda: fixed


def secret_file(name):
    """The KeyFile of a secret the deploy wrote for this container, or None when it wrote none (the plan's choice)."""
    keys = llmops_key_guard.KeyFile("%s/%s" % (llmops_key_guard.SECRETS_DIR, name))
    return keys if keys.exists() else None


def is_own_host(client, server):
    """Whether the ASGI client (host, port) is the proxy's own host: loopback, or the very address the connection
    reached (a host talking to its own address sends from it)."""
    if not client:
        return False
    if server and client[0] == server[0]:
        return True
    try:
        return ipaddress.ip_address(client[0]).is_loopback
    except ValueError:
        return False


def host_port(instance):
    """("host", port) of a "host:port" or "[v6]:port" instance, else None."""
    host, sep, port = str(instance).rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]").lower(), int(port)


def requested(body):
    """(role, ["host:port", ...]) of an /instances/* body, or (None, [why it is not one])."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return None, ["(a body that is not JSON)"]
    if not isinstance(data, dict):
        return None, ["(a body that is not an object)"]
    role, instances = data.get("type"), data.get("instances", [])
    if isinstance(instances, str):
        instances = [instances]
    if role not in ROLES or not isinstance(instances, list):
        return None, ["(type %r)" % (role,)]
    return role, [str(i) for i in instances]


def refused_instances(body, allowed):
    """The instances of an /instances/add body that are not in the plan (all of them when the body is not one)."""
    role, instances = requested(body)
    if role is None:
        return instances
    planned = {host_port(i) for i in allowed.get(role, ())}
    return [i for i in instances if host_port(i) is None or host_port(i) not in planned]


def with_members(argv, members):
    """The upstream argv with its member lists replaced by the members file's (argv as is for a role it lists none of)."""
    for role in ROLES:
        pairs = [host_port(i) for i in members.get(role) or ()]
        if not pairs or None in pairs:
            continue
        hosts_flag, ports_flag = MEMBER_FLAGS[role]
        kept, dropping = [], False
        for word in argv:
            if word.startswith("--"):
                dropping = word in (hosts_flag, ports_flag)
            if not dropping:
                kept.append(word)
        argv = kept + [hosts_flag] + [h for h, _p in pairs] + [ports_flag] + [str(p) for _h, p in pairs]
    return argv


def load_instances(path):
    if not path:
        return {role: () for role in ROLES}
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return {role: tuple(data.get(role) or ()) for role in ROLES}


def planned_strings(members, planned):
    """The plan's own "host:port" string of each member (members: already checked to be in the plan)."""
    by_address = {host_port(i): str(i) for i in planned}
    return [by_address[host_port(m)] for m in members]


def replayed(body, receive):
    """receive that gives body (whole) first, then what the client sends next (its disconnect)."""
    given = False

    async def replay():
        nonlocal given
        if given:
            return await receive()
        given = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class FrontDoor:
    """ASGI middleware: the key check in front of the upstream proxy's app, and the router's paths."""

    def __init__(self, app, client_keys=(), admin_keys=(), instances=None, put_back=None, router=None,
                 limits=(front_door_guard.MAX_BODY, front_door_guard.READ_TIMEOUT), guesses=None, engine_key=None):
        self.app = app
        # keys: a KeyFile (read again when it changes: a key added or retired needs no restart), or a tuple; none
        # given (no file, an empty tuple) leaves the API open and the admin API to the proxy's own host, as planned
        self.client_auth, self.client_keys = bool(client_keys), key_source(client_keys)
        self.admin_auth, self.admin_keys = bool(admin_keys), key_source(admin_keys)
        self.engine_key = engine_key  # KeyFile of the engines' key, which the upstream reads from OPENAI_API_KEY
        self.max_body, self.read_timeout = limits
        self.guesses = guesses or front_door_guard.Guesses()
        # the plan's members: a callable, so a members file rewritten while the proxy runs is what add accepts
        self.instances = instances if callable(instances) else (lambda: instances or {role: () for role in ROLES})
        self.put_back = put_back  # (role, [(host, port)]) -> None: untaint members the proxy still lists
        self.router = router  # front_door_router.Router, or None: the upstream's request path

    async def __call__(self, scope, receive, send):
        if scope["type"] == "lifespan":  # the upstream app's own start and stop, then the router's
            return await self.app(scope, receive, self.lifespan_send(send))
        if scope["type"] == "websocket":  # the proxy serves none: refused before it is accepted (HTTP 403)
            await receive()
            return await send({"type": "websocket.close", "code": 1008})
        if scope["type"] != "http":
            return None
        try:
            return await self.http(scope, receive, send)
        except front_door_guard.Refused as refused:
            return await self.refuse(send, refused.status, refused.message, refused.kind, refused.code)

    async def http(self, scope, receive, send):
        path = scope.get("path", "")
        self.engine_key_to_upstream()
        token = bearer(scope.get("headers") or [])
        if path in OPEN_PATHS:
            if path == "/metrics" and self.router:
                return await self.router.metrics(send)
            return await self.app(scope, receive, send)
        length = front_door_guard.declared_length(scope.get("headers"))
        if length is not None and length > self.max_body:
            raise front_door_guard.too_large(self.max_body)
        address = (scope.get("client") or ("", 0))[0]
        blocked = self.guesses.blocked_for(address)
        if blocked:
            return await self.refuse(send, 429, "too many requests with a wrong or no key from %s" % address,
                                     "rate_limit_error", "too_many_wrong_keys", retry_after=blocked)
        if path in ADMIN_PATHS:
            if self.admin_auth and not key_matches(token, self.admin_keys()):
                self.guesses.wrong(address)
                return await self.refuse(send, 401, "an admin key is required for %s" % path, "authentication_error",
                                         "invalid_api_key")
            if not self.admin_auth and not is_own_host(scope.get("client"), scope.get("server")):
                return await self.refuse(send, 403, "%s answers only to the proxy's own host" % path, "permission_error",
                                         "forbidden")
            return await self.admin(path, scope, receive, send)
        if self.client_auth and not key_matches(token, self.client_keys()):
            self.guesses.wrong(address)
            return await self.refuse(send, 401, "a valid API key is required (Authorization: Bearer <key>)",
                                     "invalid_request_error", "invalid_api_key")
        if path in COMPLETIONS and scope.get("method") == "POST":
            body = await self.body(receive)
            if body is None:
                return None
            if self.router:  # it parses the body once, dropping the proxy's own fields there
                return await self.router.completions(scope, receive, send, body)
            return await self.app(scope, replayed(front_door_guard.without_proxy_fields(body), receive), send)
        if self.router and path == "/v1/models" and scope.get("method") == "GET":
            return await self.router.models(send)
        return await self.app(scope, front_door_guard.bounded(receive, self.max_body), send)

    async def body(self, receive):
        return await front_door_guard.read_body(receive, self.max_body, self.read_timeout)

    def engine_key_to_upstream(self):
        """The upstream proxy reads the engines' key from OPENAI_API_KEY on each call to an engine: kept equal to
        the key file's (in this process only: the container's environment never holds it)."""
        key = self.engine_key.first() if self.engine_key else None
        if key and os.environ.get(PROXY_KEY) != key:
            os.environ[PROXY_KEY] = key

    async def admin(self, path, scope, receive, send):
        if path == "/members":
            if self.router:
                return await self.router.view(send)
            return await self.refuse(send, 404, "the front door's failover is off (LLMOPS_FRONT_DOOR_FAILOVER=0)",
                                     "not_found_error", "not_found")
        if path == ADD_PATH:
            return await self.add_instances(scope, receive, send)
        await self.app(scope, receive, send)
        if path == REMOVE_PATH and self.router:  # a member taken out gets no new request from here on
            self.router.sync()
        return None

    def lifespan_send(self, send):
        async def relay(message):
            if self.router and message["type"] == "lifespan.startup.complete":
                await self.router.start()
            if self.router and message["type"] == "lifespan.shutdown.complete":
                await self.router.stop()
            await send(message)
        return relay

    async def add_instances(self, scope, receive, send):
        """Only instances of the plan: the upstream proxy polls an added instance with the engines' key. With the
        router, the answer waits until the members added pass a pair probe (they serve from then on)."""
        body = await self.body(receive)
        if body is None:
            return None
        allowed = self.instances()
        refused = refused_instances(body, allowed)
        if refused:
            return await self.refuse(send, 403, "not instances of the cluster's plan: %s" % ", ".join(refused),
                                     "permission_error", "instance_not_planned")
        role, members = requested(body)
        members = planned_strings(members, allowed[role])  # the plan's own strings go on, never the client's
        if self.put_back:
            self.put_back(role, [host_port(m) for m in members])
        if self.router and members:
            await self.router.admit(role, members)
        return await self.app(scope, replayed(json.dumps({"type": role, "instances": members}).encode(), receive), send)

    @staticmethod
    async def refuse(send, status, message, kind, code, retry_after=None):
        headers = [(b"content-type", b"application/json")]
        if status == 401:
            headers.append((b"www-authenticate", b"Bearer"))
        if retry_after:
            headers.append((b"retry-after", str(int(math.ceil(retry_after))).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": json.dumps(error_of(message, kind, code)).encode()})


def upstream_module():
    """The upstream proxy script, imported by its file name from its directory (once per process)."""
    script = Path(os.environ["LLMOPS_FRONT_DOOR_UPSTREAM"]).resolve()
    if str(script.parent) not in sys.path:
        sys.path.insert(0, str(script.parent))
    return importlib.import_module(script.stem)


def put_back_with(upstream, every=False):
    """Put back members: those the upstream scheduler still lists (tainted by a remove while requests were in flight:
    its add skips a listed member, its activate_waiting_instance untaints one; a member not tainted is left as it
    is), or with ``every`` (the router's request path, which the upstream's in-flight count never sees, so a remove
    drops a member at once) every member added, at once: the router serves it only after its pair probe."""
    def put_back(role, members):
        scheduler = upstream.get_runtime().scheduler
        listed = {(str(s["host"]).lower(), int(s["port"])) for s in scheduler.get_snapshot()["%s_instances" % role]}
        for host, port in members:
            if every or (host, port) in listed:
                scheduler.activate_waiting_instance(upstream.ServerRole(role), host, port)
    return put_back


def create_app():
    """uvicorn's factory, in the parent (one worker) or in each worker process."""
    upstream = upstream_module()
    listed = os.environ.get("LLMOPS_FRONT_DOOR_INSTANCES")
    # in the proxy's image, beside this file: imported only where it runs (it needs the upstream's httpx)
    import front_door_router  # pylint: disable=import-outside-toplevel

    engine_key = secret_file(PROXY_KEY)
    router = front_door_router.from_env(upstream, engine_key.first if engine_key else lambda: None)
    door = FrontDoor(upstream.create_app(),
                     client_keys=secret_file("LLMOPS_FRONT_DOOR_KEYS") or (),
                     admin_keys=secret_file("LLMOPS_FRONT_DOOR_ADMIN_KEYS") or (),
                     instances=lambda: load_instances(listed), put_back=put_back_with(upstream, every=router is not None),
                     router=router, limits=front_door_guard.limits(), engine_key=engine_key)
    door.engine_key_to_upstream()  # before the upstream's lifespan calls any engine
    return door


def main():
    """What the upstream script's __main__ does, with create_app above as the factory."""
    os.umask(0o077)
    upstream = upstream_module()
    listed = os.environ.get("LLMOPS_FRONT_DOOR_INSTANCES")
    if listed and Path(listed).is_file():  # the current members, also for the workers (they parse sys.argv again)
        sys.argv[1:] = with_members(sys.argv[1:], load_instances(listed))
    args = upstream.parse_args()
    upstream.global_args = args
    upstream.setup_logging(args.log_level)
    upstream.bootstrap_parent_process(args)
    tls = {"ssl_certfile": os.environ.get("LLMOPS_FRONT_DOOR_TLS_CERT") or None,
           "ssl_keyfile": os.environ.get("LLMOPS_FRONT_DOOR_TLS_KEY") or None}
    if tls["ssl_certfile"]:
        tls["ssl_ciphers"] = front_door_guard.TLS_CIPHERS
    # in the proxy's image, not the controller's: imported only where it runs
    import uvicorn  # pylint: disable=import-outside-toplevel

    try:
        uvicorn.run("%s:create_app" % Path(__file__).stem, host=args.host, port=args.port, workers=args.workers,
                    factory=True, app_dir=str(Path(__file__).resolve().parent),
                    limit_concurrency=front_door_guard.concurrency(), **tls)
    finally:
        upstream.cleanup_manager_config(args.port)


if __name__ == "__main__":
    main()
