# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The PD proxy's front door: the spec the plan gives it, what it refuses, and what the launcher lets through."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.services import _front_door as front_door
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members

ROOT = Path(__file__).resolve().parents[4]
FILES = ROOT / "roles" / "pd_proxy" / "files"
GUARD_FILES = ROOT / "roles" / "vllm_engine" / "files"
PLANTED = "s3cr3t-planted-4711-9c2e7a1b"  # strong enough (_key_strength), and findable in any output
CLIENT_A, CLIENT_B, ADMIN_A = "client-a-5d0e2b7c9f41e8a3", "client-b-8a3f6c1e0d27b4f9", "admin-a-2b9e4d7f1c63a0d5"
ENDPOINTS = {"prefill": [{"address": "192.0.2.41", "port": 9000}],
             "decode": [{"address": "192.0.2.43", "port": 9900}, {"address": "192.0.2.43", "port": 9901}]}
ENGINE_KEY = {"secret_env": {"VLLM_API_KEY": PLANTED}, "env": {}, "role_env": {}}


def settings(**extra):
    base = {"script": "/up/proxy.py", "bind": "0.0.0.0", "port": 8081, "extra_flags": {}, "address": "192.0.2.41",
            "config_dir": "/etc/llmops/pd_proxy", "container_name": "pd-proxy", "launcher": "# launcher\n", "client_keys": [CLIENT_A, CLIENT_B],
            "admin_keys": [ADMIN_A], "open_front_door": False, "tls_cert": "", "tls_key": "", "tls_ca": ""}
    base.update(extra)
    return base


def launcher():
    for beside in (FILES, GUARD_FILES):  # the launcher imports front_door_guard and llmops_key_guard from beside it
        if str(beside) not in sys.path:
            sys.path.insert(0, str(beside))
    spec = importlib.util.spec_from_file_location("front_door_launcher", FILES / "front_door.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_spec_runs_the_upstream_proxy_through_the_launcher_with_every_key_masked():
    fields = front_door.proxy_fields(settings(), ENDPOINTS, ENGINE_KEY, "pd_a2")
    assert fields["command"][:2] == ["python", "/etc/llmops/pd_proxy/front_door.py"]
    # the upstream proxy's own flags (004 5.3), unchanged after the launcher
    assert fields["command"][2:] == ["--host", "0.0.0.0", "--port", "8081", "--prefiller-hosts", "192.0.2.41",
                                     "--prefiller-ports", "9000", "--decoder-hosts", "192.0.2.43", "192.0.2.43",
                                     "--decoder-ports", "9900", "9901"]
    assert fields["env"]["LLMOPS_FRONT_DOOR_UPSTREAM"] == "/up/proxy.py"
    # the keys go as files (0400, mounted read-only), never as environment, which docker inspect shows
    names = ("OPENAI_API_KEY", "LLMOPS_FRONT_DOOR_KEYS", "LLMOPS_FRONT_DOOR_ADMIN_KEYS")
    assert not set(names) & set(fields["env"])
    assert fields["secret_env"]["files"] == {name: "/etc/llmops/secrets/pd-proxy/" + name for name in names}
    text = json.dumps(fields)
    assert PLANTED not in text and CLIENT_A not in text and ADMIN_A not in text
    assert json.loads(fields["files"]["/etc/llmops/pd_proxy/instances.json"]) == {
        "prefill": ["192.0.2.41:9000"], "decode": ["192.0.2.43:9900", "192.0.2.43:9901"]}
    assert fields["volumes"] == ["/etc/llmops/pd_proxy:/etc/llmops/pd_proxy:ro", "/etc/llmops/secrets/pd-proxy:/run/llmops/secrets:ro"]
    assert fields["ready"] == {"http": "http://192.0.2.41:8081/healthcheck"}
    assert fields["meta"] == {"kind": "proxy", "port": 8081, "api_url": "http://192.0.2.41:8081", "ca": None, "client_auth": True,
                              "admin_auth": True, "tls": False, "failover": True,
                              "metrics_url": "http://192.0.2.41:8081/metrics",
                              "live": {"flags": ["--prefiller-hosts", "--prefiller-ports", "--decoder-hosts", "--decoder-ports"],
                                       # the clients' and admins' keys: rewritten without a restart
                                       "files": ["/etc/llmops/pd_proxy/instances.json"]
                                       + ["/etc/llmops/secrets/pd-proxy/LLMOPS_FRONT_DOOR_%sKEYS" % kind for kind in ("ADMIN_", "")]}}
    # deploy puts the values in from the host's variables: the keys one per line
    sources = dict(ENGINE_KEY, front_door={"client_keys": [CLIENT_A, CLIENT_B], "admin_keys": [ADMIN_A]})
    assert launch.secret_values(fields["secret_env"], sources) == {
        "OPENAI_API_KEY": PLANTED, "LLMOPS_FRONT_DOOR_KEYS": CLIENT_A + "\n" + CLIENT_B, "LLMOPS_FRONT_DOOR_ADMIN_KEYS": ADMIN_A}


def proxy_spec(**extra):
    fields = front_door.proxy_fields(settings(**extra), ENDPOINTS, ENGINE_KEY, "pd_a2")
    return launch.new_spec(name="pd-proxy", host="p0", image="img", **fields)


def test_a_rotated_key_is_a_file_rewritten_not_a_restart_and_tls_serves_https_from_mounted_files(tmp_path):
    before, after = proxy_spec(), proxy_spec(client_keys=[CLIENT_B])
    # the launcher reads its key files again: the spec's identity (what restarts it) stays, the file's digest changes
    assert launch.spec_hash(before) == launch.spec_hash(after)
    path = "/etc/llmops/secrets/pd-proxy/LLMOPS_FRONT_DOOR_KEYS"
    assert secret_files.live_digests([before])[path] != secret_files.live_digests([after])[path]
    # the look finds the host's file different by its digest alone, and what deploy writes there matches it
    sources = dict(ENGINE_KEY, front_door={"client_keys": [CLIENT_B], "admin_keys": [ADMIN_A]})
    contents = secret_files.live_contents(after["secret_env"], launch.secret_values(after["secret_env"], sources))
    assert contents[path] == CLIENT_B + "\n"
    digests = secret_files.live_digests([after])
    assert all(secret_files.file_digest(p, text[:-1]) == digests[p] for p, text in contents.items())
    # a new engines' key restarts the proxy, in its wave after every engine took the key (they roll first)
    rotated = front_door.proxy_fields(settings(), ENDPOINTS, {"secret_env": {"VLLM_API_KEY": "rotated-" + PLANTED}}, "pd_a2")
    assert launch.spec_hash(launch.new_spec(name="pd-proxy", host="p0", image="img", **rotated)) != launch.spec_hash(before)
    # on a host: a file with the planned value is current; another value or none is to write
    current, stale = tmp_path / "current", tmp_path / "stale"
    current.write_text(CLIENT_B + "\n")
    stale.write_text(CLIENT_A + "\n")
    wanted = {str(f): secret_files.file_digest(str(f), CLIENT_B) for f in (current, stale, tmp_path / "missing")}
    assert secret_files.differing(wanted) == [str(tmp_path / "missing"), str(stale)]
    fields = front_door.proxy_fields(settings(tls_cert="/etc/pki/fd.crt", tls_key="/etc/pki/fd.key", tls_ca="/etc/pki/ca.crt"),
                                     ENDPOINTS, ENGINE_KEY, "pd_a2")
    assert fields["ready"] == {"http": "https://192.0.2.41:8081/healthcheck", "ca": "/etc/pki/ca.crt"}
    assert "/etc/pki/fd.key:/run/llmops-front-door-tls/tls.key:ro" in fields["volumes"]
    assert fields["env"]["LLMOPS_FRONT_DOOR_TLS_CERT"] == "/run/llmops-front-door-tls/tls.crt"
    assert fields["meta"]["tls"] and fields["meta"]["api_url"].startswith("https://")
    # the model says which CA verifies it: the admin API's callers read it there, not from the readiness probe
    assert fields["meta"]["ca"] == "/etc/pki/ca.crt"
    assert members.door_of([launch.new_spec(name="pd-proxy", host="p0", image="i", **fields)])["ca"] == "/etc/pki/ca.crt"


def test_an_open_front_door_holds_only_its_admin_key():
    fields = front_door.proxy_fields(settings(client_keys=[], open_front_door=True), ENDPOINTS, {"secret_env": {}}, "lab")
    assert fields["secret_env"]["names"] == ["LLMOPS_FRONT_DOOR_ADMIN_KEYS"] and fields["meta"]["client_auth"] is False
    assert "LLMOPS_FRONT_DOOR_KEYS" not in fields["env"]


@pytest.mark.parametrize("extra, sources, message", [
    ({"client_keys": []}, ENGINE_KEY, r"the PD proxy, the cluster.s front door, would serve anyone: .*pd_proxy_open_front_door: true"),
    ({"client_keys": []}, {"secret_env": {}}, r"the PD proxy, .*would serve anyone: pd_proxy_client_keys is empty"),  # engine key or not
    ({"admin_keys": []}, ENGINE_KEY, r"the front door has no admin key, .*pd_proxy_admin_key_file"),
    ({"client_keys": [CLIENT_A, ""]}, ENGINE_KEY, r"pd_proxy_client_keys\[1\] is empty"),
    ({"client_keys": [CLIENT_A, "engine-key-4711"]}, ENGINE_KEY, r"pd_proxy_client_keys\[1\] is a key of about 91 bits, below the 128"),
    ({"admin_keys": ["ab" * 32]}, ENGINE_KEY, r"pd_proxy_admin_keys\[0\] is a key of about 8 bits"),
    ({"admin_keys": [" padded"]}, ENGINE_KEY, r"pd_proxy_admin_keys\[0\] has spaces or line breaks"),
    ({"client_keys": [PLANTED]}, ENGINE_KEY, r"pd_proxy_client_keys\[0\] is the engines' VLLM_API_KEY"),
    ({"admin_keys": [PLANTED]}, ENGINE_KEY, r"pd_proxy_admin_keys\[0\] is the engines' VLLM_API_KEY"),
    ({"admin_keys": [CLIENT_A]}, ENGINE_KEY, r"a key is in both pd_proxy_client_keys and pd_proxy_admin_keys"),
    ({"client_keys": "one-key"}, ENGINE_KEY, r"pd_proxy_client_keys must be a list of keys, not str"),
    ({"tls_cert": "/c.pem"}, ENGINE_KEY, r"pd_proxy_tls_cert and pd_proxy_tls_key go together \(pd_proxy_tls_cert is set"),
    ({}, {"role_env": {"decode": {"VLLM_API_KEY": "k1"}, "prefill": {"VLLM_API_KEY": "k2"}}},
     r"the prefill and decode engines get different VLLM_API_KEY"),
])
def test_bad_front_door_input_is_refused_naming_the_variable(extra, sources, message):
    with pytest.raises(ValueError, match="cluster pd_a2: " + message):
        front_door.proxy_fields(settings(**extra), ENDPOINTS, sources, "pd_a2")


def test_an_open_front_door_with_engine_keys_is_allowed_when_asked():
    fields = front_door.proxy_fields(settings(client_keys=[], open_front_door=True), ENDPOINTS, ENGINE_KEY, "pd_a2")
    assert fields["meta"]["client_auth"] is False and fields["secret_env"]["names"] == ["OPENAI_API_KEY", "LLMOPS_FRONT_DOOR_ADMIN_KEYS"]


# The launcher's wrapper, driven as ASGI (no server): what reaches the upstream app and what is refused.

def call(door, path, headers=(), body=b"", client=("198.51.100.7", 40000), query=b"", server=("192.0.2.41", 8081),
         method="POST"):
    reached = []

    async def upstream(scope, receive, send):
        message = await receive()
        reached.append((scope["path"], message.get("body")))
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    door.app = upstream
    sent = []

    async def receive():
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": path, "headers": [(k.encode(), v.encode()) for k, v in headers],
             "client": client, "server": server, "query_string": query, "method": method}
    asyncio.run(door(scope, receive, send))
    status = sent[0]["status"]
    answer = json.loads(sent[1]["body"] or b"{}")
    return status, answer, reached


def test_the_wrapper_lets_through_only_valid_keys_from_the_authorization_header():
    module = launcher()
    door = module.FrontDoor(None, client_keys=("client-a", "client-b"), admin_keys=("admin-a",),
                            instances={"prefill": ("192.0.2.41:9000",), "decode": ("192.0.2.43:9900",)})
    completions = "/v1/completions"
    assert call(door, completions, [("Authorization", "Bearer client-b")], b"{}")[0] == 200
    for headers, query in (((), b""), ((("Authorization", "Bearer wrong"),), b""), ((), b"api_key=client-a"),
                           ((("Authorization", "client-a"),), b""), ((("Authorization", "Bearer admin-a"),), b"")):
        status, answer, reached = call(door, completions, headers, query=query)
        assert (status, reached) == (401, []) and answer["error"]["code"] == "invalid_api_key"
    assert call(door, "/healthcheck")[0] == 200  # open
    assert call(door, "/docs")[0] == 401  # every other path needs a key too
    # admin endpoints: the admin key, not a client key
    assert call(door, "/instances/remove", [("Authorization", "Bearer client-a")])[0] == 401
    assert call(door, "/reset_prefix_cache", [("Authorization", "Bearer admin-a")])[0] == 200


def test_instances_add_accepts_only_the_plans_instances_and_passes_on_the_plans_strings():
    module = launcher()
    door = module.FrontDoor(None, admin_keys=("admin-a",),
                            instances={"prefill": ("192.0.2.41:9000",), "decode": ("192.0.2.43:9900",)})
    admin = [("Authorization", "Bearer admin-a")]
    planned = json.dumps({"type": "decode", "instances": ["192.0.2.43:9900"]}).encode()
    status, _answer, reached = call(door, "/instances/add", admin, planned)
    assert status == 200 and reached == [("/instances/add", planned)]
    # the plan's string goes on, never the client's spelling of it (nor any other field it sent)
    spelled = json.dumps({"type": "decode", "instances": ["192.0.2.43:09900"], "extra": "x"}).encode()
    assert call(door, "/instances/add", admin, spelled)[2] == [("/instances/add", planned)]
    for body in ({"type": "decode", "instances": ["203.0.113.9:9900"]}, {"type": "prefill", "instances": "192.0.2.43:9900"},
                 {"type": "decode", "instances": ["192.0.2.43:9900", "203.0.113.9:80"]}, {"type": "other"}, "x"):
        status, answer, reached = call(door, "/instances/add", admin, json.dumps(body).encode())
        assert (status, reached) == (403, []) and answer["error"]["code"] == "instance_not_planned"


def test_without_admin_keys_admin_endpoints_answer_only_to_the_proxys_own_host():
    module = launcher()
    door = module.FrontDoor(None, client_keys=("client-a",))
    assert call(door, "/instances/remove", client=("192.0.2.42", 5000))[0] == 403  # another host
    assert call(door, "/instances/remove", client=("127.0.0.1", 5000))[0] == 200
    assert call(door, "/instances/remove", client=("::1", 5000))[0] == 200
    # the proxy's host reaching the address it listens on (what deploy does from there) sends from that address
    assert call(door, "/instances/remove", client=("192.0.2.41", 5000), server=("192.0.2.41", 8081))[0] == 200
    # and an open front door (no client keys) still guards them
    assert call(module.FrontDoor(None), "/reset_prefix_cache", client=("203.0.113.9", 1))[0] == 403
    assert call(module.FrontDoor(None), "/v1/completions")[0] == 200


def test_the_members_file_replaces_the_argv_lists_and_is_read_again_on_each_add(tmp_path):
    module = launcher()
    argv = ["--host", "0.0.0.0", "--port", "8081", "--prefiller-hosts", "192.0.2.41", "--prefiller-ports", "9081",
            "--decoder-hosts", "192.0.2.43", "192.0.2.43", "--decoder-ports", "9900", "9901", "--workers", "2"]
    grown = {"prefill": ["192.0.2.41:9081", "192.0.2.42:9081"], "decode": ["192.0.2.43:9900"]}
    assert module.with_members(argv, grown) == [
        "--host", "0.0.0.0", "--port", "8081", "--workers", "2", "--prefiller-hosts", "192.0.2.41", "192.0.2.42",
        "--prefiller-ports", "9081", "9081", "--decoder-hosts", "192.0.2.43", "--decoder-ports", "9900"]
    assert module.with_members(argv, {"prefill": [], "decode": []}) == argv  # an empty or missing list keeps the argv's
    members = tmp_path / "instances.json"
    members.write_text(json.dumps({"prefill": ["192.0.2.41:9081"], "decode": []}))
    put_back = []
    door = module.FrontDoor(None, admin_keys=("admin-a",), instances=lambda: module.load_instances(str(members)),
                            put_back=lambda role, found: put_back.append((role, found)))
    admin = [("Authorization", "Bearer admin-a")]
    added = json.dumps({"type": "prefill", "instances": ["192.0.2.42:9081"]}).encode()
    assert call(door, "/instances/add", admin, added)[0] == 403
    members.write_text(json.dumps(grown))  # deploy rewrote it: the grown cluster's member is accepted
    assert call(door, "/instances/add", admin, added)[0] == 200
    assert put_back == [("prefill", [("192.0.2.42", 9081)])]


def test_put_back_untaints_only_members_the_scheduler_still_lists():
    module = launcher()
    calls = []

    class Scheduler:
        @staticmethod
        def get_snapshot():
            return {"prefill_instances": [{"host": "192.0.2.41", "port": 9081}], "decode_instances": []}

        @staticmethod
        def activate_waiting_instance(role, host, port):
            calls.append((role, host, port))

    class Upstream:
        ServerRole = str

        @staticmethod
        def get_runtime():
            return type("Runtime", (), {"scheduler": Scheduler})

    module.put_back_with(Upstream)("prefill", [("192.0.2.41", 9081), ("192.0.2.42", 9081)])
    assert calls == [("prefill", "192.0.2.41", 9081)]  # the one not listed goes through upstream's waiting list
    # the router's request path: upstream counts no request in flight, so a remove dropped the member; every member
    # added is listed at once (the router serves it only once its pair probe passed)
    calls.clear()
    module.put_back_with(Upstream, every=True)("prefill", [("192.0.2.41", 9081), ("192.0.2.42", 9081)])
    assert calls == [("prefill", "192.0.2.41", 9081), ("prefill", "192.0.2.42", 9081)]


def test_failover_is_on_by_default_with_its_bounds_in_the_environment_and_its_modules_beside_the_launcher():
    texts = {"front_door.py": "# launcher\n", "front_door_router.py": "# router\n", "front_door_health.py": "# health\n"}
    fields = front_door.proxy_fields(settings(launcher=texts, probe_interval=0.5, first_byte_timeout=30, tries=4,
                                              request_deadline=300), ENDPOINTS, ENGINE_KEY, "pd_a2")
    assert {k: v for k, v in fields["env"].items() if k.startswith("LLMOPS_FRONT_DOOR_") and "KEYS" not in k
            and k not in ("LLMOPS_FRONT_DOOR_UPSTREAM", "LLMOPS_FRONT_DOOR_INSTANCES")} == {
        "LLMOPS_FRONT_DOOR_PROBE_INTERVAL": "0.5", "LLMOPS_FRONT_DOOR_FIRST_BYTE_TIMEOUT": "30.0",
        "LLMOPS_FRONT_DOOR_TRIES": "4", "LLMOPS_FRONT_DOOR_DEADLINE": "300.0"}
    assert {path: fields["files"][path] for path in fields["files"] if path.endswith(".py")} == {
        "/etc/llmops/pd_proxy/" + name: text for name, text in texts.items()}
    off = front_door.proxy_fields(settings(failover=False), ENDPOINTS, ENGINE_KEY, "pd_a2")
    assert off["env"]["LLMOPS_FRONT_DOOR_FAILOVER"] == "0" and off["meta"]["failover"] is False
    assert "metrics_url" not in off["meta"]  # the upstream proxy has no /metrics
    tls = front_door.proxy_fields(settings(tls_cert="/c.pem", tls_key="/k.pem"), ENDPOINTS, ENGINE_KEY, "pd_a2")
    assert "metrics_url" not in tls["meta"]  # Prometheus's file targets cannot carry the CA


@pytest.mark.parametrize("name, value, message", [
    ("probe_interval", 2, "pd_proxy_probe_interval is 2. Fix: give a number above 0 and at most 1"),
    ("tries", 0, "pd_proxy_tries is 0. Fix: give a number above 0."),
    ("first_byte_timeout", -1, "pd_proxy_first_byte_timeout is -1. Fix: give a number above 0."),
])
def test_a_failover_bound_that_is_no_positive_number_is_refused(name, value, message):
    with pytest.raises(ValueError, match="cluster pd_a2: " + message.replace(".", r"\.")):
        front_door.proxy_fields(settings(**{name: value}), ENDPOINTS, ENGINE_KEY, "pd_a2")


def test_the_proxys_own_fields_are_dropped_from_a_completions_body_and_other_bodies_are_bounded():
    module = launcher()
    door = module.FrontDoor(None, client_keys=("client-a",), limits=(128, 5.0))
    key = [("Authorization", "Bearer client-a")]
    pointed = json.dumps({"model": "m", "prompt": "hi", "kv_transfer_params": {"remote_host": "203.0.113.9"}}).encode()
    status, _answer, reached = call(door, "/v1/completions", key, pointed)
    assert status == 200 and json.loads(reached[0][1]) == {"model": "m", "prompt": "hi"}
    status, answer, reached = call(door, "/v1/completions", key, b"x" * 129)
    assert (status, reached, answer["error"]["code"]) == (413, [], "request_too_large")
    status, answer, reached = call(door, "/v1/embeddings", key + [("Content-Length", "129")], b"x" * 129)
    assert (status, reached) == (413, [])
    assert call(door, "/v1/embeddings", key, b"x" * 128)[0] == 200


def test_a_body_slower_than_the_read_deadline_gets_408():
    module = launcher()
    door = module.FrontDoor(None, client_keys=("client-a",), limits=(1024, 0.05))
    sent = []

    async def receive():
        await asyncio.sleep(1)
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": "/v1/completions", "method": "POST", "client": ("198.51.100.7", 1),
             "headers": [(b"authorization", b"Bearer client-a")]}
    asyncio.run(door(scope, receive, send))
    assert sent[0]["status"] == 408 and json.loads(sent[1]["body"])["error"]["code"] == "request_timeout"


def test_an_address_guessing_keys_gets_429_until_its_window_passed_and_others_are_served():
    module = launcher()
    guard = importlib.import_module("front_door_guard")
    clock = {"now": 1000.0}
    door = module.FrontDoor(None, client_keys=("client-a",), admin_keys=("admin-a",),
                            guesses=guard.Guesses(allowed=3, window=60.0, clock=lambda: clock["now"]))
    guesser, other = ("203.0.113.9", 1), ("198.51.100.7", 2)
    for guess in ("a", "b"):
        assert call(door, "/v1/completions", [("Authorization", "Bearer " + guess)], b"{}", client=guesser)[0] == 401
    clock["now"] += 30
    assert call(door, "/instances/remove", [("Authorization", "Bearer c")], client=guesser)[0] == 401  # the third
    sent = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    scope = {"type": "http", "path": "/v1/completions", "method": "POST", "client": guesser,
             "headers": [(b"authorization", b"Bearer client-a")]}
    asyncio.run(door(scope, receive, send))  # even the right key: its answer would tell a guesser it found one
    assert sent[0]["status"] == 429 and (b"retry-after", b"30") in sent[0]["headers"]
    assert call(door, "/v1/completions", [("Authorization", "Bearer client-a")], b"{}", client=other)[0] == 200
    assert call(door, "/healthcheck", client=guesser)[0] == 200  # open paths stay open
    clock["now"] += 31  # the first guess left the window
    assert call(door, "/v1/completions", [("Authorization", "Bearer client-a")], b"{}", client=guesser)[0] == 200


def test_websockets_are_refused_before_they_are_accepted():
    module = launcher()
    sent = []

    async def receive():
        return {"type": "websocket.connect"}

    async def send(message):
        sent.append(message)

    async def upstream(scope, receive_, send_):
        raise AssertionError("the upstream app got a websocket")

    asyncio.run(module.FrontDoor(upstream, client_keys=("client-a",))(
        {"type": "websocket", "path": "/v1/completions", "headers": []}, receive, send))
    assert sent == [{"type": "websocket.close", "code": 1008}]
