# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An engine that answers at once, for measuring and checking what stands in front of engines (tests only).

    python3 instant_engine.py PORT [DELAY]

Listens on 127.0.0.1:PORT: GET (e.g. /v1/models) lists the model "bench"; POST (/v1/completions) answers a
one-token completion with the kv_transfer_params a prefill would give, so the PD proxy takes it for
both roles, after DELAY seconds (0 by default: at once). No key, standard library only.
"""

from __future__ import annotations

import http.server
import json
import sys
import time

DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _send(self, body):
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._send({"object": "list", "data": [{"id": "bench"}]})

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(DELAY)
        self._send({"id": "x", "object": "text_completion", "choices": [{"index": 0, "text": "ok", "finish_reason": "length"}],
                    "kv_transfer_params": {"do_remote_prefill": True, "remote_engine_id": "e", "remote_block_ids": [0],
                                           "remote_host": "127.0.0.1", "remote_port": 1}})

    def log_message(self, *_args):
        pass


if __name__ == "__main__":
    http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
