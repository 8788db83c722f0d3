# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engines' guard (roles/vllm_engine/files/llmops_key_guard.py): every route but /health and /metrics needs one of
the keys of its file, read again when the file changes. Real vLLM runs it in the cpu_pd scenario."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "roles" / "vllm_engine" / "files"))

import llmops_key_guard as guard  # noqa: E402  pylint: disable=wrong-import-position


def _ask(keys, path, key=None, kind="http"):
    """(status or close code the client got, whether the engine's app was reached) through the guard of ``keys``."""
    reached, sent = [], []

    async def app(scope, receive, send):
        reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def receive():
        return {"type": "websocket.connect"}

    async def send(message):
        sent.append(message)

    headers = [(b"authorization", b"Bearer " + key.encode())] if key else []
    asyncio.run(guard.EngineGuard(app, keys)({"type": kind, "path": path, "headers": headers}, receive, send))
    return (sent[0].get("status") or sent[0].get("code")), bool(reached)


def _write(path, *keys):
    path.write_text("".join(k + "\n" for k in keys))
    os.utime(path, ns=(0, path.stat().st_mtime_ns + 1_000_000))  # a rewrite within the clock's tick still counts


def test_every_route_but_health_and_metrics_needs_a_key_of_the_file(tmp_path):
    path = tmp_path / "VLLM_API_KEY"
    _write(path, "engine-key-a")
    keys = guard.KeyFile(str(path))
    for route in ("/invocations", "/tokenize", "/docs", "/v1/completions", "//v1/completions", "/health/", "/pooling"):
        assert _ask(keys, route) == (401, False), route
    for route in ("/health", "/metrics"):
        assert _ask(keys, route) == (200, True), route
    assert _ask(keys, "/invocations", "engine-key-a") == (200, True)
    assert _ask(keys, "/invocations", "engine-key-b") == (401, False)
    # a websocket without a key is closed before it is accepted
    assert _ask(keys, "/v1/realtime", kind="websocket") == (1008, False)


def test_a_rotation_takes_both_keys_then_the_new_one_only_without_a_restart(tmp_path):
    path = tmp_path / "VLLM_API_KEY"
    _write(path, "engine-key-a")
    keys = guard.KeyFile(str(path))
    assert _ask(keys, "/invocations", "engine-key-b")[0] == 401
    _write(path, "engine-key-b", "engine-key-a")
    assert [_ask(keys, "/invocations", k)[0] for k in ("engine-key-a", "engine-key-b")] == [200, 200]
    _write(path, "engine-key-b")
    assert [_ask(keys, "/invocations", k)[0] for k in ("engine-key-a", "engine-key-b")] == [401, 200]
    path.unlink()  # no file: nothing passes
    assert _ask(keys, "/invocations", "engine-key-b")[0] == 401
