# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An engine that answers at once, for measuring and checking what stands in front of engines (tests only).

    python3 instant_engine.py PORT [DELAY]

Listens on 127.0.0.1:PORT: GET /health answers 200, any other GET (e.g. /v1/models) lists the model "bench";
POST (/v1/completions) answers a completion with the kv_transfer_params a prefill would give, so the PD proxy
takes it for both roles, after DELAY seconds (0 by default: at once); with "stream": true it streams one chunk
per token, the last with its finish_reason, then [DONE]. Faults a test asks for by the prompt:
  "fault:400"   HTTP 400 with vLLM's error body (a prompt past the context)
  "fault:cut"   a stream that stops after its first token, without a finish reason (a decoder dying mid-answer)
  ending in "fault:recompute"   a decode that gives up after one token (" r0") with stop_reason "recomputed", as
                vllm-ascend's recompute scheduler does; the prompt sent again with that token appended is answered
No key, standard library only.
"""

from __future__ import annotations

import http.server
import json
import sys
import time

DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, body, status=200):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self._send({"object": "list", "data": [{"id": "bench"}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        time.sleep(DELAY)
        prompt = str(body.get("prompt", ""))
        if "fault:400" in prompt:
            self._send({"error": {"message": "This model's maximum context length is 512 tokens.", "type": "BadRequestError",
                                  "param": None, "code": 400}}, 400)
            return
        tokens = int(body.get("max_tokens") or 16)
        if prompt.endswith("fault:recompute") and body.get("kv_transfer_params", {}).get("do_remote_prefill"):
            self._recomputed(bool(body.get("stream")))
            return
        if body.get("stream"):
            self._stream(tokens, cut="fault:cut" in prompt)
            return
        self._send({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": "ok", "finish_reason": "length"}],
                    "kv_transfer_params": {"do_remote_prefill": True, "remote_engine_id": "e", "remote_block_ids": [0],
                                           "remote_host": "127.0.0.1", "remote_port": 1}})

    def _recomputed(self, stream):
        choice = {"index": 0, "text": " r0", "finish_reason": "stop", "stop_reason": "recomputed"}
        if not stream:
            self._send({"id": "x", "object": "text_completion", "choices": [choice], "usage": {"completion_tokens": 1}})
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(b"data: " + json.dumps({"id": "x", "object": "text_completion", "choices": [choice]}).encode() + b"\n\n")
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def _stream(self, tokens, cut):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for index in range(tokens):
            last = index == tokens - 1
            chunk = {"id": "x", "object": "text_completion", "model": "bench",
                     "choices": [{"index": 0, "text": " t%d" % index, "finish_reason": "length" if last else None}]}
            self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
            self.wfile.flush()
            if cut:
                self.close_connection = True
                return
        self.wfile.write(b"data: [DONE]\n\n")
        self.close_connection = True

    def handle(self):
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):  # a client that left (the front door moved the request)
            pass

    def log_message(self, *_args):
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
