# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the front door reads and writes of OpenAI answers: vLLM's error body, server-sent events one at a time, the
first choice of a chunk and its text, and the client leaving (front_door_router.py uses them)."""

from __future__ import annotations

import json
from typing import Any, Callable

import httpx  # the upstream proxy's own client library, in its image


def error_of(message: str, kind: str, code: Any) -> dict:
    """vLLM's error (ErrorResponse: message, type, param, code), as a body or an error event carries it."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def error_json(status: int, message: str, kind: str) -> bytes:
    """vLLM's error body, its code the HTTP status."""
    return json.dumps(error_of(message, kind, status)).encode()


def sse_events(buffer: bytes) -> tuple[list[bytes], bytes]:
    """Complete server-sent events of buffer (each with its blank line), and what is left."""
    events = []
    while True:
        end = buffer.find(b"\n\n")
        if end < 0:
            return events, buffer
        events.append(buffer[:end + 2])
        buffer = buffer[end + 2:]


def event_data(event: bytes) -> Any:
    """The JSON of an SSE event's data line, "[DONE]", or None for anything else."""
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            data = line[5:].strip()
            if data == b"[DONE]":
                return "[DONE]"
            try:
                return json.loads(data)
            except ValueError:
                return None
    return None


def error_message(data: Any) -> str:
    """The message of an error event or body ({"error": {"message": ...}}), "" for anything else."""
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error or "")


def first_choice(chunk: Any) -> dict:
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return choices[0] if choices and isinstance(choices[0], dict) else {}


def choice_text(choice: dict) -> str:
    delta, message = choice.get("delta") or {}, choice.get("message") or {}
    return delta.get("content") or message.get("content") or choice.get("text") or ""


class Events:
    """The server-sent events of a streamed answer, one at a time (network reads split and join them freely)."""

    def __init__(self, response: httpx.Response) -> None:
        self.chunks = response.aiter_raw()
        self.buffer, self.ready, self.ended = b"", [], False

    async def next(self) -> bytes | None:
        while not self.ready:
            if self.ended:
                return None
            try:
                chunk = await self.chunks.__anext__()
            except StopAsyncIteration:
                self.ended = True
                rest, self.buffer = self.buffer.strip(), b""
                if rest:
                    self.ready.append(rest + b"\n\n")
                continue
            found, self.buffer = sse_events(self.buffer + chunk)
            self.ready.extend(found)
        return self.ready.pop(0)


async def disconnected(receive: Callable) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
