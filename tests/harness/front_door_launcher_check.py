# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's launcher with the real upstream proxy, in the proxy's image, on loopback (tests only).

    python3 front_door_launcher_check.py LAUNCHER UPSTREAM CERT KEY CA INSTANT_ENGINE

Starts instant engines, then the launcher with TLS, two workers (the upstream's cross-worker manager), a client
key and a members file that lists a second decode member its argv does not, and prints one JSON object of what
it saw: the answers over HTTPS checked against CA, what plain HTTP to the same port got, the mode of the manager's
authkey file, the members the proxy started with, whether a member taken out while a request was in flight
and added again stays listed once that request ended (upstream's own taint would drop it), and what a second front
door bounded to three connections answers past them. Bounded: every request has
a timeout, the wait for the proxy 60 s.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import secret_files  # beside this file

PORT = 18443
KEY = "launcher-check-key"
NEW_KEY = "launcher-check-key-added-later"


def status(url, context, body=None, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, ssl.SSLError) as err:
        return "no answer: %s" % type(err).__name__


def weak_client(ca, version, ciphers):
    """A client that offers only version and ciphers (its own security level lowered, so the server is what refuses)."""
    context = ssl.create_default_context(cafile=ca)
    context.minimum_version = context.maximum_version = version
    context.set_ciphers(ciphers + ":@SECLEVEL=0")
    return context


def admin(base, context, path, role, members):
    """The lists of an admin call (from loopback: the proxy's own host, no admin key)."""
    request = urllib.request.Request(base + path, data=json.dumps({"type": role, "instances": members}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10, context=context) as answer:
        found = json.loads(answer.read().decode())
    return {"message": found.get("message"), "decode": sorted(found.get("current_decode_instances") or [])}


def taken_out_and_put_back(base, context):
    """Decode 18201 taken out while a slow request is in flight, added again before that request ends: the request
    still gets its answer, and once it ended is 18201 listed (the front door's router counts requests itself, so
    upstream drops a member at once; the add lists it again once its pair probe passed)?"""
    answered = {}
    slow = threading.Thread(target=lambda: answered.update(status=status(
        base + "/v1/completions", context, {"model": "bench", "prompt": "slow", "max_tokens": 1}, KEY)))
    slow.start()
    time.sleep(1)  # in flight at the slow prefill
    seen = {"remove while in flight": admin(base, context, "/instances/remove", "decode", ["127.0.0.1:18201"])["message"]}
    seen["added again"] = admin(base, context, "/instances/add", "decode", ["127.0.0.1:18201"])["message"]
    slow.join(30)
    seen["request in flight answered"] = answered.get("status")
    time.sleep(3)  # the listener's rounds (--waiting-retry-interval 1) after the request ended
    seen["listed after"] = admin(base, context, "/instances/add", "decode", [])["decode"]
    return seen


def concurrency_bound(launcher, env):
    """A second front door, one worker, plain HTTP, LLMOPS_FRONT_DOOR_MAX_CONCURRENCY=3: what a request gets while
    three idle connections hold it, then once they are gone."""
    port = PORT + 1
    env = dict(env, LLMOPS_FRONT_DOOR_MAX_CONCURRENCY="3", LLMOPS_FRONT_DOOR_TLS_CERT="", LLMOPS_FRONT_DOOR_TLS_KEY="")
    proc = subprocess.Popen([sys.executable, launcher, "--host", "127.0.0.1", "--port", str(port), "--prefiller-hosts",
                             "127.0.0.1", "--prefiller-ports", "18100", "--decoder-hosts", "127.0.0.1", "--decoder-ports",
                             "18200"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d/healthcheck" % port
    seen = {}
    try:
        deadline = time.monotonic() + 60
        while status(base, None) != 200:
            if time.monotonic() > deadline:
                sys.exit("the bounded launcher never answered on %s" % base)
            time.sleep(0.2)
        idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _index in range(3)]
        time.sleep(0.5)  # accepted by the server before the next one comes
        seen["a request past 3 connections"] = status(base, None)
        for connection in idle:
            connection.close()
        time.sleep(0.5)
        seen["a request once they closed"] = status(base, None)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    return seen


def keys_rewritten(base, verified, completion):
    """What the running front door answers once its client key file lists another key (as deploy rewrites it), then
    the first one again: no restart between."""
    seen = {}
    secret_files.write("LLMOPS_FRONT_DOOR_KEYS", NEW_KEY)
    seen["the new key once the file lists it"] = status(base + "/v1/completions", verified, completion, NEW_KEY)
    seen["the retired key once the file lists it no more"] = status(base + "/v1/completions", verified, completion, KEY)
    secret_files.write("LLMOPS_FRONT_DOOR_KEYS", KEY)
    seen["the first key once the file lists it again"] = status(base + "/v1/completions", verified, completion, KEY)
    return seen


def main():
    launcher, upstream, cert, key, ca, engine = sys.argv[1:7]
    procs = [subprocess.Popen([sys.executable, engine, port, delay]) for port, delay in (("18100", "0"), ("18200", "0"),
                                                                                         ("18201", "0"), ("18101", "4"))]
    members = os.path.join(tempfile.mkdtemp(), "instances.json")
    with open(members, "w", encoding="utf-8") as handle:
        json.dump({"prefill": ["127.0.0.1:18100", "127.0.0.1:18101"], "decode": ["127.0.0.1:18200", "127.0.0.1:18201"]}, handle)
    secret_files.write("LLMOPS_FRONT_DOOR_KEYS", KEY)
    env = dict(os.environ, LLMOPS_FRONT_DOOR_UPSTREAM=upstream,
               LLMOPS_FRONT_DOOR_TLS_CERT=cert, LLMOPS_FRONT_DOOR_TLS_KEY=key, LLMOPS_FRONT_DOOR_INSTANCES=members)
    # the argv lists 18100 and 18200 only, as a proxy created before the cluster grew: the members file wins
    procs.append(subprocess.Popen([sys.executable, launcher, "--host", "127.0.0.1", "--port", str(PORT), "--workers", "2",
                                   "--waiting-retry-interval", "1", "--prefiller-hosts", "127.0.0.1", "--prefiller-ports",
                                   "18100", "--decoder-hosts", "127.0.0.1", "--decoder-ports", "18200"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    verified = ssl.create_default_context(cafile=ca)
    base = "https://127.0.0.1:%d" % PORT
    seen = {}
    try:
        deadline = time.monotonic() + 60
        while status(base + "/healthcheck", verified) != 200:
            if time.monotonic() > deadline:
                sys.exit("the launcher never answered on %s" % base)
            time.sleep(0.2)
        completion = {"model": "bench", "prompt": "tls", "max_tokens": 1}
        seen["healthcheck over https"] = status(base + "/healthcheck", verified)
        seen["completion over https with the key"] = status(base + "/v1/completions", verified, completion, KEY)
        seen["completion over https without a key"] = status(base + "/v1/completions", verified, completion)
        seen["healthcheck over plain http"] = status("http://127.0.0.1:%d/healthcheck" % PORT, None)
        seen["https checked against the system's store only"] = status(base + "/healthcheck", ssl.create_default_context())
        seen["a TLS 1.1 client"] = status(base + "/healthcheck", weak_client(ca, ssl.TLSVersion.TLSv1_1, "DEFAULT"))
        seen["a TLS 1.2 client offering CBC suites only"] = status(base + "/healthcheck", weak_client(
            ca, ssl.TLSVersion.TLSv1_2, "AES128-SHA:AES256-SHA:AES128-SHA256:ECDHE-RSA-AES128-SHA:ECDHE-ECDSA-AES128-SHA"))
        seen["a TLS 1.2 client offering AEAD suites"] = status(base + "/healthcheck", weak_client(
            ca, ssl.TLSVersion.TLSv1_2, "ECDHE+AESGCM"))
        manager = os.path.join(tempfile.gettempdir(), "vllm_lb_proxy_manager_%d.json" % PORT)
        seen["manager file mode"] = oct(stat.S_IMODE(os.stat(manager).st_mode)) if os.path.exists(manager) else None
        seen["decode members at start"] = admin(base, verified, "/instances/add", "decode", [])["decode"]
        # the slow prefill (18101, 4 s) is the only one from here (nothing in flight: 18100 goes at once), so a request
        # stays in flight while decode 18201 is taken out and added again
        admin(base, verified, "/instances/remove", "prefill", ["127.0.0.1:18100"])
        seen.update(taken_out_and_put_back(base, verified))
        seen.update(keys_rewritten(base, verified, completion))
        seen.update(concurrency_bound(launcher, env))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=20)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
