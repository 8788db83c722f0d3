# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metrics relay (roles/host_firewall/files/metrics_relay.py), served on loopback in front of an upstream that
answers every path and method (as an engine's API port or the Mooncake master's metrics port does): only GET of a
planned route reaches it, and only its /metrics."""

from __future__ import annotations

import http.client
import json
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roles" / "host_firewall" / "files"))
import metrics_relay as relay  # noqa: E402  pylint: disable=wrong-import-position,import-error


class Upstream(BaseHTTPRequestHandler):
    """Answers everything with what it was asked (method, path, headers), and records it."""

    seen: ClassVar[list[tuple[str, str, dict]]] = []

    def reply(self) -> None:
        Upstream.seen.append((self.command, self.path, dict(self.headers)))
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/get_all_keys")
            self.end_headers()
            return
        body = json.dumps({"method": self.command, "path": self.path}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = reply

    def log_message(self, format, *args) -> None:  # pylint: disable=redefined-builtin
        pass


def serve(server: ThreadingHTTPServer) -> int:
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server.server_address[1]


@pytest.fixture(name="relayed")
def fixture_relayed(tmp_path: Path) -> Iterator[tuple[int, Path, int]]:
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    upstream_port = serve(upstream)
    routes = tmp_path / "routes.json"
    routes.write_text(json.dumps({"/metrics/p0/engine": "http://127.0.0.1:%d/metrics" % upstream_port,
                                  "/metrics/p0/redirected": "http://127.0.0.1:%d/redirect" % upstream_port,
                                  "/metrics/p0/gone": "http://127.0.0.1:1/metrics"}))
    relay.Handler.routes = relay.Routes(str(routes))
    server = relay.BoundedServer(("127.0.0.1", 0), relay.Handler)
    Upstream.seen.clear()
    yield serve(server), routes, upstream_port
    server.shutdown()
    upstream.shutdown()


def ask(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.request(method, path, body=body, headers=headers or {})
    answer = connection.getresponse()
    return answer.status, answer.read()


def test_a_planned_route_relays_the_upstreams_metrics_and_nothing_of_the_request(relayed):
    port, _routes, _upstream = relayed
    status, body = ask(port, "GET", "/metrics/p0/engine?target=/v1/completions",
                       headers={"Authorization": "Bearer x", "Accept": "application/openmetrics-text"})
    assert status == 200 and json.loads(body) == {"method": "GET", "path": "/metrics"}
    method, path, headers = Upstream.seen[-1]
    assert (method, path) == ("GET", "/metrics") and "Authorization" not in headers
    assert headers["Accept"] == "application/openmetrics-text"  # Prometheus's choice of format
    assert ask(port, "GET", "/health") == (200, b"ok\n")


@pytest.mark.parametrize("method, path", [
    ("GET", "/v1/completions"), ("GET", "/get_all_keys"), ("GET", "/metrics"), ("GET", "/metrics/p0"),
    ("GET", "/metrics/p0/engine/../../get_all_keys"), ("GET", "/metrics/p0/engine/"), ("GET", "/metrics/p0/engine%2F"),
    ("GET", "/metrics/p1/engine"), ("GET", "http://127.0.0.1/get_all_keys"),
])
def test_any_other_path_is_404_and_never_reaches_an_upstream(relayed, method, path):
    port, _routes, _upstream = relayed
    assert ask(port, method, path)[0] == 404 and Upstream.seen == []


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"])
def test_any_other_method_is_405_even_on_a_planned_route(relayed, method):
    port, _routes, _upstream = relayed
    assert ask(port, method, "/metrics/p0/engine", body=b'{"prompt": "x"}')[0] == 405 and Upstream.seen == []


def test_an_upstream_that_redirects_or_is_gone_is_a_502(relayed):
    port, _routes, _upstream = relayed
    assert ask(port, "GET", "/metrics/p0/redirected")[0] == 502
    assert [path for _method, path, _headers in Upstream.seen] == ["/redirect"]  # not followed to /get_all_keys
    assert ask(port, "GET", "/metrics/p0/gone")[0] == 502


def test_the_routes_file_is_read_again_when_it_changes(relayed):
    port, routes, upstream = relayed
    assert ask(port, "GET", "/metrics/d0/engine")[0] == 404
    routes.write_text(json.dumps({"/metrics/d0/engine": "http://127.0.0.1:%d/metrics" % upstream}))
    assert ask(port, "GET", "/metrics/d0/engine")[0] == 200
    assert ask(port, "GET", "/metrics/p0/engine")[0] == 404
    routes.write_text("{not json")  # a torn write keeps the last good table
    assert ask(port, "GET", "/metrics/d0/engine")[0] == 200
