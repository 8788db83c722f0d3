# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The readiness probes (container_ready, container_state), against real sockets on the loopback and a docker stand-in."""

from __future__ import annotations

import http.server
import json
import os
import socket
import sys
import threading

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.operations import _readiness as container_ready

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv


class FakeDocker:
    def __init__(self, logs=""):
        self.text = logs

    def logs(self, _name, _lines=None):
        return self.text


@pytest.fixture
def models_server():
    """An HTTP server on 127.0.0.1 answering /v1/models with the model ids it is given, and the status; it counts GETs."""
    state = {"ids": [], "status": 200, "gets": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            state["gets"] += 1
            body = json.dumps({"data": [{"id": i} for i in state["ids"]]}).encode()
            self.send_response(state["status"])
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield state, "http://127.0.0.1:%d" % server.server_address[1]
    server.shutdown()


def test_models_probe_needs_the_served_name_in_the_answer(models_server):
    state, base = models_server
    spec = argv_meta.with_meta({"name": "e", "host": "h", "ready": {"http": base + "/v1/models"},
                                "command": ["vllm", "serve", "/m", "--served-model-name", "glm"]})
    assert container_ready.probe(FakeDocker(), spec) is False  # up, but not serving the model yet
    state["ids"] = ["glm"]
    assert container_ready.probe(FakeDocker(), spec) is True
    state["status"] = 503
    assert container_ready.probe(FakeDocker(), spec) is False


def test_other_http_probes_need_200(models_server):
    state, base = models_server
    assert container_ready.probe(FakeDocker(), {"name": "p", "ready": {"http": base + "/healthcheck"}}) is True
    state["status"] = 500
    assert container_ready.probe(FakeDocker(), {"name": "p", "ready": {"http": base + "/healthcheck"}}) is False


def test_a_refused_connection_is_not_ready_yet():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nobody listens there
    assert container_ready.probe(FakeDocker(), {"name": "x", "ready": {"http": "http://127.0.0.1:%d/health" % port}}) is False
    assert container_ready.probe(FakeDocker(), {"name": "x", "ready": {"tcp": "127.0.0.1:%d" % port}}) is False


def test_tcp_probe_needs_a_listener():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        target = "127.0.0.1:%d" % listener.getsockname()[1]
        assert container_ready.probe(FakeDocker(), {"name": "x", "ready": {"tcp": target}}) is True


def test_log_probe_searches_the_container_log():
    spec = {"name": "h", "ready": {"log": r"init engine \(profile, create kv cache, warmup model\) took"}}
    assert container_ready.probe(FakeDocker("loading weights\n"), spec) is False
    assert container_ready.probe(FakeDocker("init engine (profile, create kv cache, warmup model) took 12.3 seconds"), spec)
    assert container_ready.probe(FakeDocker(), {"name": "n", "ready": None}) is True  # nothing to probe
