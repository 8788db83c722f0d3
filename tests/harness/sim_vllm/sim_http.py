# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated engine's OpenAI API (/health, /v1/models, /v1/completions, /v1/chat/completions, /metrics),
guarded by VLLM_API_KEY as vLLM guards it and by the --middleware classes it names, and the PD side channel a prefill
listens on."""

from __future__ import annotations

import asyncio
import http.server
import importlib
import json
import os
import socket
import threading

from sim_cli import log

# vLLM 0.32's AuthenticationMiddleware: these paths need "Authorization: Bearer <one of the keys>"
# (--api-key, else VLLM_API_KEY); /health and /metrics stay open.
GUARDED_PREFIX = ("/v1", "/v2", "/inference", "/cohere")


def api_tokens(args):
    return [key for key in (args.api_key or [os.environ.get("VLLM_API_KEY")]) if key]


def middlewares(args):
    """vllm serve --middleware: each class imported by its dotted name (from PYTHONPATH, as vLLM imports it)."""
    found = []
    for name in args.middleware or ():
        module, _dot, attribute = name.rpartition(".")
        found.append(getattr(importlib.import_module(module), attribute))
    return found


def middleware_answer(classes, method, path, headers):
    """(status, body) that one of the ASGI middleware classes answered itself, run as is in front of the request as
    vLLM's API server runs it, or None when each let the request through to the app."""
    for middleware in classes:
        reached, sent = [], []

        async def app(scope, receive, send):
            reached.append(scope)  # noqa: B023  used within this iteration only

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)  # noqa: B023  pylint: disable=cell-var-from-loop  # used within this iteration only

        scope = {"type": "http", "method": method, "path": path,
                 "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]}
        asyncio.run(middleware(app)(scope, receive, send))
        if not reached:
            return sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:])
    return None


def http_handler(engine):
    tokens = api_tokens(engine.args)
    guards = middlewares(engine.args)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _refused(self):
            """Answer what a --middleware answered itself, or 401 as vLLM does when a guarded path comes without one of
            the keys."""
            answered = middleware_answer(guards, self.command, self.path.split("?")[0], self.headers) if guards else None
            if answered:
                self.send_response(answered[0])
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answered[1])))
                self.end_headers()
                self.wfile.write(answered[1])
                return True
            if not tokens or not self.path.startswith(GUARDED_PREFIX):
                return False
            scheme, token = (self.headers.get("Authorization") or "").partition(" ")[::2]
            if scheme.lower() == "bearer" and token in tokens:
                return False
            self._send(401, {"error": "Unauthorized"})
            return True

        def log_message(self, fmt, *args):
            log("%s %s" % (self.address_string(), fmt % args))

        def _send(self, code, body, content_type="application/json"):
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self._refused():
                return
            if self.path == "/health":
                self._send(200, "")
            elif self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": engine.name, "object": "model", "owned_by": "vllm", "root": engine.args.model,
                                                            "max_model_len": engine.args.max_model_len}]})
            elif self.path == "/metrics":
                self._send(200, engine.metrics(), "text/plain; version=0.0.4")
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                self._send(400, {"error": {"message": "body is not JSON", "code": 400}})
                return
            if self._refused():
                return
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self._send(404, {"detail": "Not Found"})
                return
            code, answer = engine.complete(body, chat=self.path.endswith("chat/completions"),
                                           stream=self._stream_start if body.get("stream") else None)
            if code == 200 and answer is None:  # streamed, chunk by chunk, as vLLM does
                self.wfile.write(b"data: [DONE]\n\n")
                self.close_connection = True
                return
            self._send(code, answer)

        def _stream_start(self):
            """Server-sent events until the connection closes; returns the function that sends one chunk."""
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()

            def send(chunk):
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()
            return send

    return Handler


def side_channel(port):
    """The Mooncake side channel a decode connects to; accepts and closes connections."""
    server = socket.create_server(("0.0.0.0", port))
    log("Mooncake side channel listening on %d" % port)

    def serve():
        while True:
            conn, _peer = server.accept()
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
