# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_ready's wait: ports probed every interval, the docker CLI asked every 0.5 s at most."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import container_ready


@pytest.fixture
def docker(tmp_path, monkeypatch):
    """A docker that says every container runs (or the state written to state.txt), logging each call."""
    calls, state = tmp_path / "calls.log", tmp_path / "state.txt"
    state.write_text("running 0")
    tool = tmp_path / "bin" / "docker"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\necho "$1" >> %s\nif [ "$1" = inspect ]; then shift 3; for n; do echo "/$n $(cat %s)"; done; fi\n'
                    'if [ "$1" = logs ]; then echo "its last words"; fi\nexit 0\n' % (calls, state))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % tool.parent)
    return calls, state


@pytest.fixture
def server_ready_after():
    """An HTTP server on the loopback whose /healthcheck answers 503 until the given moment, then 200; it counts GETs."""
    seen = {"gets": 0, "ready_at": float("inf")}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            seen["gets"] += 1
            self.send_response(200 if time.monotonic() >= seen["ready_at"] else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield seen, "http://127.0.0.1:%d/healthcheck" % server.server_address[1]
    server.shutdown()


def wait(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        container_ready.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_a_port_is_probed_each_interval_and_docker_asked_every_half_second(capsys, docker, server_ready_after):
    calls, _state = docker
    seen, url = server_ready_after
    seen["ready_at"] = time.monotonic() + 2.2
    code, result = wait(capsys, containers=[{"name": "proxy", "ready": {"http": url}}], interval=0.1)
    took = time.monotonic() - (seen["ready_at"] - 2.2)
    assert code == 0 and result["pending"] == [] and "proxy" in result["ready"]
    inspects = calls.read_text().split().count("inspect")
    assert seen["gets"] >= 15  # about every 0.1 s for 2.2 s
    assert 3 <= inspects <= int(took / container_ready.DOCKER_EVERY) + 1  # every 0.5 s, not each round


def test_a_container_that_exits_still_fails_the_wait_with_its_log(capsys, docker, server_ready_after):
    _calls, state = docker
    _seen, url = server_ready_after
    state.write_text("exited 1")
    code, result = wait(capsys, containers=[{"name": "proxy", "ready": {"http": url}}], interval=0.1, timeout=30)
    assert code == 1 and "container proxy is exited 1 before it was ready" in result["msg"] and "its last words" in result["msg"]
