# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's launcher around the real vllm-ascend proxy, in the harness's engine image with no network
but its loopback: TLS with a certificate made here, two workers, the manager's authkey file its owner's alone
(tests/harness/front_door_launcher_check.py runs inside); failover through a killed, a hung and a restarted decoder
under load, and the answers of faults (tests/harness/front_door_failover_check.py). Needs Docker and the harness
images."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT
from harness import make_certificate  # importing it puts tests/harness on the path

# isort: split
from front_door_files import copy_launcher  # tests/harness

UPSTREAM = ROOT / ".build" / "harness" / "engine-context" / "load_balance_proxy_server_example.py"


def door_files(tmp_path):
    return copy_launcher(tmp_path / "door")


def test_tls_workers_the_manager_file_and_the_members(tmp_path):
    make_certificate(tmp_path, "127.0.0.1")
    run = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", "%s:/door:ro" % door_files(tmp_path),
         "-v", "%s:/up:ro" % UPSTREAM.parent, "-v", "%s:/harness:ro" % (ROOT / "tests" / "harness"), "-v", "%s:/tls:ro" % tmp_path,
         "--entrypoint", "python3", "llmops-engine:test", "/harness/front_door_launcher_check.py", "/door/front_door.py",
         "/up/" + UPSTREAM.name, "/tls/tls.crt", "/tls/tls.key", "/tls/ca.crt", "/harness/instant_engine.py"],
        capture_output=True, text=True, timeout=240, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout)
    print(json.dumps(seen, indent=1))
    assert seen["healthcheck over https"] == 200
    assert seen["completion over https with the key"] == 200
    assert seen["completion over https without a key"] == 401
    assert str(seen["healthcheck over plain http"]).startswith("no answer")  # HTTPS only
    assert str(seen["https checked against the system's store only"]).startswith("no answer")  # our CA, not a public one
    assert str(seen["a TLS 1.1 client"]).startswith("no answer")  # TLS 1.2 and newer only
    assert str(seen["a TLS 1.2 client offering CBC suites only"]).startswith("no answer")  # AEAD suites only
    assert seen["a TLS 1.2 client offering AEAD suites"] == 200
    assert seen["manager file mode"] == "0o600"  # the upstream writes its authkey there with default permissions
    assert seen["decode members at start"] == ["127.0.0.1:18200", "127.0.0.1:18201"]  # the members file's, not the argv's
    # the router counts the requests in flight, not upstream: its remove drops the member at once, the request on it
    # ends normally, and the add lists it again at once (the router serves it once its pair probe passed)
    assert seen["remove while in flight"] == "remove decode instances: ['127.0.0.1:18201']."
    assert seen["request in flight answered"] == 200
    assert seen["listed after"] == ["127.0.0.1:18200", "127.0.0.1:18201"]
    # the client key file is read again when deploy rewrites it: a key added or retired without a restart
    assert seen["the new key once the file lists it"] == 200
    assert seen["the retired key once the file lists it no more"] == 401
    assert seen["the first key once the file lists it again"] == 200
    # concurrency is bounded (LLMOPS_FRONT_DOOR_MAX_CONCURRENCY): past it, 503 at once rather than a queue without end
    assert seen["a request past 3 connections"] == 503 and seen["a request once they closed"] == 200


def test_failover_keeps_every_request_through_a_kill_a_hang_and_a_restart_and_faults_get_explicit_answers(tmp_path):
    """Two prefill and three decode instant engines behind the launcher, a bounded load (non-streaming and streaming,
    every body checked), then faults (tests/harness/front_door_failover_check.py runs inside)."""
    run = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", "%s:/door:ro" % door_files(tmp_path),
         "-v", "%s:/up:ro" % UPSTREAM.parent, "-v", "%s:/harness:ro" % (ROOT / "tests" / "harness"),
         "--entrypoint", "python3", "llmops-engine:test", "/harness/front_door_failover_check.py", "/door/front_door.py",
         "/up/" + UPSTREAM.name, "/harness/instant_engine.py"],
        capture_output=True, text=True, timeout=240, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout)
    load = seen["load"]
    print("under load, decode 18201 killed (-9), 18202 stopped (SIGSTOP) then continued, 18201 started again: "
          "%d requests sent (every other one streamed), %d failed (an empty 200 or a silent stream among them), %d streams "
          "cut with an error event; ejected %s s after the kill, %s s after the SIGSTOP; serving again "
          "%s s after SIGCONT, %s s after the restart" % (
              load["sent"], load["failed"], load["cut"], seen["ejected after kill -9 (s)"],
              seen["ejected after SIGSTOP (s)"], seen["serving after SIGCONT (s)"], seen["serving after a restart (s)"]))
    assert load["failed"] == 0 and load["sent"] > 50, load
    assert seen["ejected after kill -9 (s)"] is not None and seen["ejected after SIGSTOP (s)"] is not None
    assert seen["serving after SIGCONT (s)"] is not None and seen["serving after a restart (s)"] is not None
    assert seen["models"] == [200, json.dumps({"object": "list", "data": [{"id": "bench"}]})]
    status, stream = seen["cut stream"]
    events = [line[len("data: "):] for line in stream.splitlines() if line.startswith("data: ")]
    assert status == 200 and json.loads(events[0])["choices"][0]["text"] == " t0"  # a token went out before the cut
    assert json.loads(events[-3])["choices"][0]["finish_reason"] == "error"
    assert json.loads(events[-2])["error"]["code"] == 502 and events[-1] == "[DONE]"
    # vllm-ascend's recompute: the decode's " r0" and then the second pair's answer, as one answer (upstream's merge);
    # streamed, the recomputed chunk itself is not relayed (as upstream), the second pair's tokens are
    status, body = seen["recomputed"]
    assert status == 200 and json.loads(body)["choices"][0]["text"] == " r0ok"
    status, stream = seen["recomputed stream"]
    texts = [json.loads(line[6:])["choices"][0]["text"] for line in stream.splitlines()
             if line.startswith("data: {") and json.loads(line[6:]).get("choices")]
    assert status == 200 and texts[0] == " t0" and "r0" not in "".join(texts) and stream.endswith("data: [DONE]\n\n")
    status, body = seen["engine 400"]
    assert status == 400 and json.loads(body)["error"]["message"] == "This model's maximum context length is 512 tokens."
    none_left = seen["no decoder"]
    assert none_left["status"] == 503 and none_left["retry_after"] == "1" and none_left["seconds"] < 1
    assert none_left["body"]["error"]["type"] == "ServiceUnavailableError"
    assert 'llmops_front_door_requests_total{outcome="stream_cut"} 1' in seen["metrics"]


def test_a_health_probe_whose_kept_connection_ends_unanswered_asks_again_on_a_new_one(tmp_path):
    """An engine that ends the probe's connection without answering (what real vLLM did: RemoteProtocolError, and a
    serving prefill was ejected at once) stays serving once a new connection answers; nothing listening still ejects
    (tests/harness/front_door_watch_check.py runs inside)."""
    run = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", "%s:/door:ro" % door_files(tmp_path),
         "-v", "%s:/harness:ro" % (ROOT / "tests" / "harness"), "--entrypoint", "python3", "llmops-engine:test",
         "/harness/front_door_watch_check.py", "/door"], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout)
    print(json.dumps(seen, indent=1))
    assert seen["connections to the closing engine"] == 2  # the kept one it ended, then a new one
    assert seen["127.0.0.1:18311"]["state"] == "serving"
    assert seen["127.0.0.1:18312"]["state"] == "ejected" and "ConnectError" in seen["127.0.0.1:18312"]["reason"]
