# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's failover around the real upstream proxy, in the proxy's image, on loopback (tests only).

    python3 front_door_failover_check.py LAUNCHER UPSTREAM INSTANT_ENGINE

Two prefill and three decode instant engines behind the launcher (failover on, probes every 0.5 s, a first-byte
bound of 3 s). Under a bounded load (load.py: 4 threads, 40 requests a second, every other one streamed, at most
800 requests and 20 s, loopback only), one decoder
is killed (-9), another stopped (SIGSTOP) then continued, the dead one started again; then faults a client can see:
a stream cut mid-answer, an engine's 400, every decoder gone. Prints one JSON object: per phase the requests sent,
failed (a 200 with no text and a stream that ended silently among them), streams cut with an error event, and the
seconds until the front door ejected or re-admitted the member, and what each fault answered.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import secret_files  # beside this file
from load import Load  # beside this file: the harness's bounded load, every body read whole

PORT = 18500
KEY = "failover-check-key"
BASE = "http://127.0.0.1:%d" % PORT
PREFILLS, DECODES = ("18100", "18101"), ("18200", "18201", "18202")


def call(path, body=None, key=KEY, timeout=15):
    """(status, headers, body text) of a request to the front door."""
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(BASE + path, data=None if body is None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return answer.status, dict(answer.headers), answer.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read().decode()
    except OSError as err:
        return "no answer: %s" % type(err).__name__, {}, ""


def states():
    """{member port: state} as the front door sees them (its /members, from its own host)."""
    status, _headers, text = call("/members", key=None)
    if status != 200:
        return {}
    return {m["member"].rpartition(":")[2]: m["state"] for m in json.loads(text)["members"]}


def until(what, predicate, seconds=20.0):
    """Seconds until predicate() held (polled every 0.05 s), None when it did not within seconds."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if predicate():
            return round(time.monotonic() - start, 2)
        time.sleep(0.05)
    print("did not happen within %.0f s: %s" % (seconds, what), file=sys.stderr)
    return None


def engine(script, port):
    return subprocess.Popen([sys.executable, script, port])


def main():
    launcher, upstream, script = sys.argv[1:4]
    engines = {port: engine(script, port) for port in PREFILLS + DECODES}
    secret_files.write("LLMOPS_FRONT_DOOR_KEYS", KEY)
    env = dict(os.environ, LLMOPS_FRONT_DOOR_UPSTREAM=upstream,
               LLMOPS_FRONT_DOOR_PROBE_INTERVAL="0.5", LLMOPS_FRONT_DOOR_FIRST_BYTE_TIMEOUT="3")
    proxy = subprocess.Popen([sys.executable, launcher, "--host", "127.0.0.1", "--port", str(PORT),
                              "--prefiller-hosts", "127.0.0.1", "127.0.0.1", "--prefiller-ports", *PREFILLS,
                              "--decoder-hosts", "127.0.0.1", "127.0.0.1", "127.0.0.1", "--decoder-ports", *DECODES],
                             env=env, stdout=subprocess.DEVNULL, stderr=open("/tmp/front_door.log", "w", encoding="utf-8"))
    seen = {}
    try:
        if until("the front door answering", lambda: call("/healthcheck", key=None)[0] == 200, 60) is None:
            sys.exit("the front door never answered")
        seen["models"] = call("/v1/models", key=KEY)[:3:2]
        with Load(BASE, model="bench", requests=800, seconds=20, workers=4, key=KEY, prompt="load", rate=40,
                  stream_every=2) as load:
            time.sleep(1)
            engines["18201"].kill()
            killed = time.monotonic()
            seen["ejected after kill -9 (s)"] = until("18201 ejected", lambda: states().get("18201") == "ejected")
            time.sleep(1)
            os.kill(engines["18202"].pid, signal.SIGSTOP)
            seen["ejected after SIGSTOP (s)"] = until("18202 ejected", lambda: states().get("18202") == "ejected")
            time.sleep(1)
            os.kill(engines["18202"].pid, signal.SIGCONT)
            seen["serving after SIGCONT (s)"] = until("18202 serving", lambda: states().get("18202") == "serving")
            engines["18201"] = engine(script, "18201")
            seen["serving after a restart (s)"] = until("18201 serving", lambda: states().get("18201") == "serving")
            seen["dead for (s)"] = round(time.monotonic() - killed, 1)
            time.sleep(1)
        seen["load"] = {k: v for k, v in load.report("the decoders' faults").items() if k in ("sent", "failed", "cut", "errors")}
        seen["cut stream"] = call("/v1/completions", {"model": "bench", "prompt": "fault:cut", "max_tokens": 4, "stream": True})[::2]
        seen["recomputed"] = call("/v1/completions", {"model": "bench", "prompt": "fault:recompute", "max_tokens": 4})[::2]
        seen["recomputed stream"] = call("/v1/completions", {"model": "bench", "prompt": "fault:recompute", "max_tokens": 4,
                                                             "stream": True})[::2]
        seen["engine 400"] = call("/v1/completions", {"model": "bench", "prompt": "fault:400", "max_tokens": 4})[::2]
        until("every decoder serving", lambda: set(states().values()) == {"serving"})
        for port in DECODES:
            engines[port].kill()
        until("every decoder ejected", lambda: [states().get(p) for p in DECODES] == ["ejected"] * 3)
        started = time.monotonic()
        status, headers, text = call("/v1/completions", {"model": "bench", "prompt": "none left", "max_tokens": 4})
        seen["no decoder"] = {"status": status, "retry_after": {k.lower(): v for k, v in headers.items()}.get("retry-after"), "body": json.loads(text or "{}"),
                              "seconds": round(time.monotonic() - started, 2)}
        seen["metrics"] = [line for line in call("/metrics", key=None)[2].splitlines()
                           if line.startswith(("llmops_front_door_member_ejections_total", "llmops_front_door_requests_total"))]
    finally:
        for proc in list(engines.values()) + [proxy]:
            try:
                os.kill(proc.pid, signal.SIGCONT)
            except OSError:
                pass
            proc.terminate()
        for proc in list(engines.values()) + [proxy]:
            proc.wait(timeout=20)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
