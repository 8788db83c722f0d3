# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the front door refuses of a client before any byte reaches the proxy or an engine (front_door.py uses it).

- A body past MAX_BODY bytes gets 413 (its Content-Length, or the bytes as they come), one slower than READ_TIMEOUT
  seconds to arrive gets 408: a client cannot hold the proxy's memory or its connections.
- Fields that are the proxy's own (PROXY_FIELDS) are dropped from a completion's body: ``kv_transfer_params`` tells a
  decode engine which host to read KV from (MooncakeConnectorV2's remote host and port), so a client that set it could
  point an engine at a host of its own choosing.
- An address that sent GUESSES_ALLOWED wrong or missing keys within GUESS_WINDOW seconds gets 429 with Retry-After on
  every request until the window has passed (as fail2ban blocks an address; answering a right key then would tell a
  guesser when it had found one).
- TLS_CIPHERS: TLS 1.2 suites with forward secrecy and AEAD only (TLS 1.3's are all AEAD; Python's server contexts
  refuse anything older than 1.2).
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

PROXY_FIELDS = ("kv_transfer_params",)
MAX_BODY = 32 * 1024 * 1024  # a 128k-token prompt is about 1 MB of text; images in a chat body take more
READ_TIMEOUT = 30.0
GUESSES_ALLOWED = 20
GUESS_WINDOW = 60.0
TLS_CIPHERS = "ECDHE+AESGCM:ECDHE+CHACHA20"
# connections and requests one worker holds at once; past it uvicorn answers 503 at once (a flood of connections
# cannot exhaust the proxy's memory or file descriptors)
MAX_CONCURRENCY = 4096
MAX_CONCURRENCY_ENV = "LLMOPS_FRONT_DOOR_MAX_CONCURRENCY"
MAX_BODY_ENV = "LLMOPS_FRONT_DOOR_MAX_BODY"
READ_TIMEOUT_ENV = "LLMOPS_FRONT_DOOR_READ_TIMEOUT"

Receive = Callable[[], Awaitable[dict]]


class Refused(Exception):
    """A request the front door answers itself: status, message, OpenAI error type, code."""

    def __init__(self, status: int, message: str, kind: str, code: str) -> None:
        super().__init__(message)
        self.status, self.message, self.kind, self.code = status, message, kind, code


def limits(env: dict[str, str] | None = None) -> tuple[int, float]:
    """(the body bound in bytes, the read deadline in seconds), from the environment or the defaults."""
    env = dict(os.environ) if env is None else env
    return int(env.get(MAX_BODY_ENV) or MAX_BODY), float(env.get(READ_TIMEOUT_ENV) or READ_TIMEOUT)


def concurrency(env: dict[str, str] | None = None) -> int:
    """Connections and requests one worker holds at once, from the environment or the default."""
    env = dict(os.environ) if env is None else env
    return int(env.get(MAX_CONCURRENCY_ENV) or MAX_CONCURRENCY)


def declared_length(headers: Any) -> int | None:
    """The request's Content-Length (ASGI headers), None when it gives none or one that is no number."""
    for name, value in headers or ():
        if name.lower() == b"content-length":
            text = value.decode("latin-1").strip()
            return int(text) if text.isdigit() else None
    return None


def too_large(bound: int) -> Refused:
    return Refused(413, "the request body is larger than the front door's bound of %d bytes" % bound,
                   "invalid_request_error", "request_too_large")


async def read_body(receive: Receive, bound: int, deadline: float) -> bytes | None:
    """The request's whole body, None when the client left first; Refused (413, 408) past the bounds."""
    chunks, size, more = [], 0, True
    ends = time.monotonic() + deadline
    while more:
        try:
            message = await asyncio.wait_for(receive(), max(0.0, ends - time.monotonic()))
        except asyncio.TimeoutError:
            raise Refused(408, "the request body did not arrive within %g s" % deadline, "invalid_request_error",
                          "request_timeout") from None
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > bound:
            raise too_large(bound)
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def bounded(receive: Receive, bound: int) -> Receive:
    """receive for a body passed on as it comes: past bound bytes the app sees the client gone."""
    size = 0

    async def limited() -> dict:
        nonlocal size
        message = await receive()
        size += len(message.get("body", b""))
        return {"type": "http.disconnect"} if size > bound else message

    return limited


def without_proxy_fields(body: bytes) -> bytes:
    """A completion's body without the proxy's own fields (as it was when it has none, or is not a JSON object)."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return body
    if not isinstance(data, dict) or not any(field in data for field in PROXY_FIELDS):
        return body
    return json.dumps({name: value for name, value in data.items() if name not in PROXY_FIELDS}).encode()


class Guesses:
    """Wrong or missing keys per client address within a sliding window."""

    def __init__(self, allowed: int = GUESSES_ALLOWED, window: float = GUESS_WINDOW,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.allowed, self.window, self.clock = allowed, window, clock
        self.seen: dict[str, collections.deque[float]] = {}

    def _recent(self, address: str) -> collections.deque[float]:
        times = self.seen.get(address, collections.deque())
        while times and times[0] <= self.clock() - self.window:
            times.popleft()
        if times:
            self.seen[address] = times
        else:
            self.seen.pop(address, None)
        return times

    def blocked_for(self, address: str) -> float:
        """Seconds the address stays refused (0: not refused)."""
        times = self._recent(address)
        if len(times) < self.allowed:
            return 0.0
        return max(1.0, times[-self.allowed] + self.window - self.clock())  # when fewer than allowed are left

    def wrong(self, address: str) -> None:
        if len(self.seen) > 100000:  # bounded however many addresses guess: the oldest go first
            for stale in list(self.seen)[:1000]:
                self.seen.pop(stale, None)
        times = self._recent(address)
        times.append(self.clock())
        self.seen[address] = times
