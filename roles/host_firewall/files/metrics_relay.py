# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The monitoring networks' one way in: GET /metrics of the cluster's services, and nothing else.

    python metrics_relay.py --port P --routes ROUTES.json [--host 0.0.0.0]

The ports that serve /metrics serve more: an engine's API port its completions, /tokenize and /docs; the Mooncake
master's metrics port its key queries; etcd's client port the whole store. A firewall sees ports, not requests, so
the host firewall keeps those ports to the cluster's hosts and gives the monitoring networks this relay's port alone.
It answers ``GET /metrics/<host>/<container>`` for exactly the routes of ROUTES.json ({path: upstream /metrics URL},
written from the plan and read again when it changes, so a cluster that grows needs no restart) and ``GET /health``;
any other path is 404, any other method 405. Nothing of the request reaches the upstream but the path the plan wrote
and the Accept header (Prometheus's choice of text format): no query string, no other header, no body. Upstream
answers are bounded in size and time; redirects and proxies are not followed. Python's standard library only: it runs
in whatever image the cluster's services use.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM_TIMEOUT = 10.0  # seconds; Prometheus's own scrape timeout is 10 s by default
CLIENT_TIMEOUT = 10.0  # a client that sends its request slower than this is cut
MAX_BYTES = 32 << 20  # an upstream /metrics larger than this is refused (vLLM's is well under 1 MiB)
MAX_CONNECTIONS = 64  # connections served at once (a thread each); more are closed unanswered
HEALTH = "/health"


class Routes:
    """The routes file, read again when its modification time or size changes."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()
        self.stamp: tuple[int, int] | None = None
        self.table: dict[str, str] = {}

    def get(self, path: str) -> str | None:
        with self.lock:
            try:
                status = os.stat(self.path)
                stamp = (status.st_mtime_ns, status.st_size)
                if stamp != self.stamp:
                    with open(self.path, encoding="utf-8") as text:
                        self.table = {str(k): str(v) for k, v in json.load(text).items()}
                    self.stamp = stamp
            except (OSError, ValueError) as err:  # keep the last good table; a missing first one serves nothing
                sys.stderr.write("metrics relay: routes %s unreadable (%s)\n" % (self.path, err))
            return self.table.get(path)


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # pylint: disable=too-many-arguments
        return None


OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirects())


def fetch(url: str, accept: str | None) -> tuple[int, str, bytes]:
    """(status, content type, body) of the upstream's /metrics; 502 or 504 when it cannot be had."""
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with OPENER.open(request, timeout=UPSTREAM_TIMEOUT) as answer:
            body = answer.read(MAX_BYTES + 1)
            if len(body) > MAX_BYTES:
                return 502, "text/plain", b"upstream /metrics larger than the relay's bound\n"
            return 200, answer.headers.get("Content-Type", "text/plain"), body
    except urllib.error.HTTPError as err:
        return 502, "text/plain", ("upstream answered HTTP %d\n" % err.code).encode()
    except TimeoutError:
        return 504, "text/plain", b"upstream did not answer in time\n"
    except (urllib.error.URLError, OSError) as err:
        return 502, "text/plain", ("upstream unreachable: %s\n" % getattr(err, "reason", err)).encode()


class Handler(BaseHTTPRequestHandler):
    routes: Routes
    timeout = CLIENT_TIMEOUT
    server_version = "llmops-metrics-relay"
    sys_version = ""

    def do_GET(self) -> None:  # pylint: disable=invalid-name
        path = self.path.split("?", 1)[0]
        if path == HEALTH:
            self.answer(200, "text/plain", b"ok\n")
            return
        upstream = self.routes.get(path)
        if upstream is None:
            self.answer(404, "text/plain", b"not a metrics route of this cluster\n")
            return
        self.answer(*fetch(upstream, self.headers.get("Accept")))

    def refuse_method(self) -> None:
        self.answer(405, "text/plain", b"GET only\n", allow=True)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = do_TRACE = do_CONNECT = refuse_method

    def answer(self, status: int, content_type: str, body: bytes, allow: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        if allow:
            self.send_header("Allow", "GET")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format, *args) -> None:  # pylint: disable=redefined-builtin
        pass  # each scrape would be a line; refusals are counted by the answers the clients get

    def log_request(self, code="-", size="-") -> None:
        if str(code) != "200":
            sys.stderr.write("metrics relay: %s %r from %s: %s\n" % (self.command, self.path[:200], self.client_address[0], code))


class BoundedServer(ThreadingHTTPServer):
    """A thread per connection, at most MAX_CONNECTIONS of them."""

    daemon_threads = True
    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--routes", required=True)
    args = parser.parse_args(argv)
    Handler.routes = Routes(args.routes)
    server = BoundedServer((args.host, args.port), Handler)
    sys.stderr.write("metrics relay: serving %s:%d, routes from %s\n" % (args.host, args.port, args.routes))
    server.serve_forever()


if __name__ == "__main__":
    main()
