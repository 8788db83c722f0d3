# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keys read from a file, and the guard of an engine's every route.

vLLM's own key check (``--api-key``, else ``VLLM_API_KEY``: its AuthenticationMiddleware) guards paths under /v1,
/v2, /inference and /cohere only, so ``/invocations`` serves completions, and ``/tokenize`` or ``/docs`` answer, to
anyone who reaches the port; and it reads the key from argv or the environment, both of which ``docker inspect``
shows. ``EngineGuard``, which ``vllm serve --middleware llmops_key_guard.EngineGuard`` adds to the API server, asks
for one of the keys of ``KEYS_FILE`` (one per line: during a rotation the new key and the one it replaces) on every
HTTP path but ``/health`` (readiness) and ``/metrics`` (Prometheus), and closes a websocket that brings none. The
file is read again whenever it changes, so a rewritten file takes effect without a restart; a missing or empty file
lets nothing through. ``LLMOPS_ENGINE_KEYS_FILE`` names another file (the tests' simulator, run as a process).

The front door (pd_proxy) imports ``bearer``, ``key_matches`` and ``KeyFile`` from here for its own keys.
"""

from __future__ import annotations

import hmac
import json
import os
from typing import Any, Awaitable, Callable

# Where the deploy mounts a container's secret files (read-only; 0400 files in a 0700 directory on the host).
SECRETS_DIR = "/run/llmops/secrets"
KEYS_FILE = SECRETS_DIR + "/VLLM_API_KEY"
OPEN_PATHS = frozenset({"/health", "/metrics"})

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]


def bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    """The token of the request's ``Authorization: Bearer`` header (ASGI headers), else None."""
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _space, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


def key_matches(token: str | None, keys: tuple[str, ...]) -> bool:
    """Whether token is one of keys; every key is compared, in constant time."""
    if token is None:
        return False
    given = token.encode()
    found = False
    for key in keys:
        found |= hmac.compare_digest(given, key.encode())
    return found


class KeyFile:
    """The keys of a one-per-line file, read again when the file changes (its inode, size or time)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._keys: tuple[str, ...] = ()

    def exists(self) -> bool:
        return os.path.isfile(self.path)

    def keys(self) -> tuple[str, ...]:
        """The file's keys now; none when it is missing (whatever it guards then lets nothing through)."""
        try:
            found = os.stat(self.path)
        except OSError:
            self._seen, self._keys = None, ()
            return ()
        seen = (found.st_ino, found.st_size, found.st_mtime_ns)
        if seen != self._seen:
            with open(self.path, encoding="utf-8") as text:
                self._keys = tuple(line.strip() for line in text if line.strip())
            self._seen = seen
        return self._keys

    def first(self) -> str | None:
        """The first key (the one to send), or None."""
        keys = self.keys()
        return keys[0] if keys else None


class EngineGuard:
    """ASGI middleware of vLLM's API server (``--middleware``, which adds it without arguments)."""

    def __init__(self, app: Callable[..., Awaitable[None]], keys: KeyFile | None = None) -> None:
        self.app = app
        self.keys = keys or KeyFile(os.environ.get("LLMOPS_ENGINE_KEYS_FILE", KEYS_FILE))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or (scope["type"] == "http" and scope.get("path") in OPEN_PATHS):
            return await self.app(scope, receive, send)
        if key_matches(bearer(scope.get("headers") or []), self.keys.keys()):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":  # closed before it is accepted: the client sees HTTP 403
            await receive()
            return await send({"type": "websocket.close", "code": 1008})
        # vLLM's own answer to a request without its key
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
        return await send({"type": "http.response.body", "body": json.dumps({"error": "Unauthorized"}).encode()})
