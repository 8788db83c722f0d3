# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's request path: the upstream proxy's two steps (prefill, then decode with the prefill's
kv_transfer_params), over members that are watched, with failover and errors a client can see.

The upstream proxy keeps its lists (its admin API: /instances/add and /remove, which deploy drives) and builds
the prefill request (its build_prefill_request, unchanged). What it lacks, this adds:
- Members are watched (front_door_health.py): each API rank's /health every LLMOPS_FRONT_DOOR_PROBE_INTERVAL
  seconds with the engines' key, and every try's outcome. A member that refuses, resets, times out or keeps
  answering 5xx is ejected; it serves again once /health answers and a pair probe (a one-token prefill, then a
  one-token decode with its kv_transfer_params, as verify sends) through it passes.
- A try that fails before its client got a byte is sent again, at most LLMOPS_FRONT_DOOR_TRIES tries within
  LLMOPS_FRONT_DOOR_DEADLINE seconds. A decoder that cannot be reached gets no second prefill: the same
  kv_transfer_params go to another decoder, which reads the prefill's KV once. A decode 5xx (the pair's KV path
  is suspect) starts again from another prefill: the failed try's KV stays held on its prefill until that
  engine's own abort timeout frees it (vllm-ascend #13240; VLLM_NIXL_ABORT_REQUEST_TIMEOUT for NIXL), at most one
  such block set per try. In-flight tries on a member that is ejected are moved at once (a hung engine).
- No empty 200 (vllm-ascend #13140): a non-streaming answer is read whole and checked before it is sent; one that
  cannot be served is a 502 (504 past the deadline) with an OpenAI-style JSON error naming the cause; a role with
  no serving member is a fast 503 with Retry-After. A stream that loses its decoder after tokens went out ends with
  a chunk whose finish_reason is "error", an SSE error event and [DONE]. An engine's own 4xx keeps its status and
  body (vllm-ascend #12170 turned a prefill 400 into a bare 500).
- vllm-ascend's recompute scheduler (a decode answering stop_reason "recomputed") is followed as upstream does:
  the prompt plus what was generated goes to a new pair, and the client sees one answer.
- GET /v1/models answers what a serving member serves; GET /metrics has the members' state for Prometheus.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import httpx  # the upstream proxy's own client library, in its image

from front_door_health import EJECTED, ROLES, SERVING, Member, Members

logger = logging.getLogger("front_door")
CONNECT_TIMEOUT = 2.0  # a member's port that takes longer to accept is as good as dead
HEALTH_TIMEOUT = 2.0  # vLLM answers /health from its API server's event loop: late on a saturated host, not dead
PROBE_PROMPT = "The llmops front door checks that this prefill and this decode pass KV to each other."
Send = Callable[[dict], Awaitable[None]]


@dataclass(frozen=True)
class Bounds:
    interval: float = 1.0  # seconds between two /health rounds
    first_byte: float = 120.0  # a prefill's answer, a streamed decode's first event
    tries: int = 3  # per request, prefill and decode tries together
    deadline: float = 600.0  # a request's whole life, retries included
    admit_wait: float = 30.0  # what an /instances/add waits for its members' pair probes

    @classmethod
    def from_env(cls, env: dict[str, str]) -> "Bounds":
        names = {"interval": "PROBE_INTERVAL", "first_byte": "FIRST_BYTE_TIMEOUT", "tries": "TRIES", "deadline": "DEADLINE"}
        given = {f: env.get("LLMOPS_FRONT_DOOR_" + name) for f, name in names.items()}
        return cls(**{f: (int(v) if f == "tries" else float(v)) for f, v in given.items() if v})


class Ejected(Exception):
    """The member a try waited on was ejected meanwhile (the prober or another request found it dead)."""


@dataclass
class Request:
    """One client request as it goes through tries."""
    api: str
    body: dict
    length: int
    deadline: float
    stream: bool = False
    chat: bool = False
    origin_prompt: Any = ""
    origin_max_tokens: int = 16
    generated: str = ""
    completion_tokens: int = 0
    recomputes: int = 0
    committed: bool = False  # the response's start went to the client: errors are stream events from now on
    last: dict = field(default_factory=dict)  # id, object, created, model of the last chunk sent
    tried: dict = field(default_factory=lambda: {role: set() for role in ROLES})
    cause: str = ""
    holding: Member | None = None  # the prefill whose KV the request holds until a decoder takes it

    @classmethod
    def of(cls, api: str, body: dict, length: int, deadline: float) -> "Request":
        chat = "messages" in body
        prompt = body.get("prompt", "")
        if chat:  # upstream's recompute continues the first message (its handle_completions_impl)
            messages = body.get("messages") or [{}]
            prompt = messages[0].get("content", "") if isinstance(messages[0], dict) else ""
        return cls(api, body, length, deadline, stream=bool(body.get("stream")), chat=chat, origin_prompt=prompt,
                   origin_max_tokens=int(body.get("max_tokens") or 16))


def error_json(status: int, message: str, kind: str) -> bytes:
    """vLLM's error body (ErrorResponse: message, type, param, code)."""
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": status}}).encode()


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


def first_choice(chunk: Any) -> dict:
    choices = chunk.get("choices") if isinstance(chunk, dict) else None
    return choices[0] if choices and isinstance(choices[0], dict) else {}


def choice_text(choice: dict) -> str:
    delta, message = choice.get("delta") or {}, choice.get("message") or {}
    return delta.get("content") or message.get("content") or choice.get("text") or ""


class Router:
    """The request path and the member watch of one worker process."""

    def __init__(self, upstream: Any, bounds: Bounds, key: str | None = None) -> None:
        self.upstream, self.bounds, self.key = upstream, bounds, key
        self.members = Members()
        self.client: httpx.AsyncClient | None = None
        self.tasks: list[asyncio.Task] = []
        self.probing: dict[tuple[str, str], asyncio.Task] = {}
        self.checking: dict[tuple[str, str], asyncio.Task] = {}  # each member's /health probe in flight
        self.gone: dict[tuple[str, str], asyncio.Event] = {}
        self.model: str | None = None
        self.synced = False

    # --- lifetime -----------------------------------------------------------------------------------------------
    async def start(self) -> None:
        limits = httpx.Limits(max_connections=100000, max_keepalive_connections=100000)  # as upstream's clients
        self.client = httpx.AsyncClient(timeout=None, limits=limits)
        self.tasks.append(asyncio.ensure_future(self._watch()))

    async def stop(self) -> None:
        for task in self.tasks + list(self.probing.values()) + list(self.checking.values()):
            task.cancel()
        if self.client is not None:
            await self.client.aclose()

    def url(self, member: Member, path: str) -> str:
        host, _sep, port = member.key.rpartition(":")
        return self.upstream.build_server_url(host.strip("[]"), int(port)) + path

    def headers(self, request_id: str | None = None) -> dict[str, str]:
        found = {"Authorization": "Bearer %s" % self.key} if self.key else {}
        if request_id:
            found["X-Request-Id"] = request_id
        return found

    # --- the watch ----------------------------------------------------------------------------------------------
    def sync(self) -> None:
        """The upstream proxy's lists are the members (deploy changes them through its admin API)."""
        snapshot = self.upstream.get_runtime().scheduler.get_snapshot()
        listed = {role: ["%s:%s" % (s["host"], s["port"]) for s in snapshot["%s_instances" % role]] for role in ROLES}
        self.members.sync(listed, at_start=not self.synced)
        self.synced = True
        self._signal()

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            started = loop.time()
            try:
                self.sync()
                self.probe_health()
                self.probe_pairs()
            except Exception as err:  # pylint: disable=broad-except  # the watch must outlive any one round
                logger.warning("front door: member watch round failed: %s", err)
            self._log()
            await asyncio.sleep(max(0.0, self.bounds.interval - (loop.time() - started)))

    def probe_health(self) -> None:
        """A /health probe of every member that has none in flight: one hung member delays no other's."""
        for key, member in self.members.members.items():
            if key not in self.checking or self.checking[key].done():
                self.checking[key] = asyncio.ensure_future(self._health(member))

    async def health_round(self, members: list[Member]) -> None:
        await asyncio.gather(*(self._health(m) for m in members))

    async def _health(self, member: Member) -> None:
        assert self.client is not None
        try:
            answer = await self.client.get(self.url(member, "/health"), headers=self.headers(), timeout=HEALTH_TIMEOUT)
        except httpx.TimeoutException:
            self.members.missed(member, "no answer within %.1f s" % HEALTH_TIMEOUT, refused=False)
            self._signal()
            return
        except httpx.TransportError as err:
            self.members.missed(member, "%s: %s" % (type(err).__name__, err), refused=True)
            self._signal()
            return
        if answer.status_code == 200:
            self.members.answered(member)
        else:
            self.members.missed(member, "HTTP %d" % answer.status_code, refused=True)
        self._signal()

    def probe_pairs(self) -> None:
        for prefill, decode in self.members.to_probe():
            pair = (prefill.key, decode.key)
            if pair not in self.probing or self.probing[pair].done():
                self.probing[pair] = asyncio.ensure_future(self._pair_probe(prefill, decode))

    async def _pair_probe(self, prefill: Member, decode: Member) -> bool:
        """A one-token prefill, then a one-token decode with its kv_transfer_params: the KV path of this pair."""
        assert self.client is not None
        why = ""
        try:
            model = await self._model(prefill)
            body = self.upstream.build_prefill_request({"model": model, "prompt": PROBE_PROMPT, "max_tokens": 1})
            first = await self.client.post(self.url(prefill, "/v1/completions"), json=body, headers=self.headers(),
                                           timeout=self.bounds.first_byte)
            if first.status_code != 200:
                why = "prefill answered %d" % first.status_code
            else:
                kv = first.json().get("kv_transfer_params")
                second = await self.client.post(self.url(decode, "/v1/completions"), headers=self.headers(),
                                                json={"model": model, "prompt": PROBE_PROMPT, "max_tokens": 1,
                                                      "kv_transfer_params": kv}, timeout=self.bounds.first_byte)
                if second.status_code != 200 or not first_choice(second.json()):
                    why = "decode answered %d%s" % (second.status_code, "" if second.status_code != 200 else " with no choice")
        except (httpx.HTTPError, ValueError, KeyError) as err:
            why = "%s: %s" % (type(err).__name__, err)
        self.members.probed(prefill, decode, not why, why)
        self._log()
        return not why

    async def _model(self, member: Member) -> str:
        if self.model is None:
            assert self.client is not None
            answer = await self.client.get(self.url(member, "/v1/models"), headers=self.headers(), timeout=HEALTH_TIMEOUT * 5)
            self.model = answer.json()["data"][0]["id"]
        return self.model

    async def admit(self, role: str, keys: list[str]) -> None:
        """What an /instances/add waits for: the members added are probed now and serve once a pair probe passes
        (bounded by Bounds.admit_wait; a member still on probation after it keeps being probed by the watch)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + self.bounds.admit_wait
        self.sync()
        while loop.time() < end:
            waiting = [m for m in (self.members.get(role, k) for k in keys) if m and m.state != SERVING]
            if not waiting:
                return
            await self.health_round(waiting)
            self.probe_pairs()
            await asyncio.sleep(0.05)

    def _signal(self) -> None:
        """Wake the tries waiting on members that are ejected now; give members back in service a new event."""
        for key, member in self.members.members.items():
            event = self.gone.get(key)
            if member.state == EJECTED:
                if event is None:
                    self.gone[key] = event = asyncio.Event()
                event.set()
            elif event is not None and event.is_set():
                self.gone[key] = asyncio.Event()

    def _event(self, member: Member) -> asyncio.Event:
        return self.gone.setdefault((member.role, member.key), asyncio.Event())

    def _log(self) -> None:
        for line in self.members.events:
            logger.warning("front door: %s", line)
        self.members.events.clear()

    async def _unless_ejected(self, member: Member, work: Awaitable[Any], bound: float) -> Any:
        """work's result; Ejected when member is ejected first, asyncio.TimeoutError past bound seconds."""
        event = self._event(member)
        task = asyncio.ensure_future(work)
        waiter = asyncio.ensure_future(event.wait())
        try:
            done, _pending = await asyncio.wait({task, waiter}, timeout=bound, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiter.cancel()
        if task in done:
            return task.result()
        task.cancel()
        if waiter in done:
            raise Ejected(member.reason)
        raise asyncio.TimeoutError()

    # --- the request path ---------------------------------------------------------------------------------------
    async def completions(self, scope: dict, receive: Callable, send: Send, body: bytes) -> None:
        api = scope["path"][len("/v1"):]
        try:
            data = json.loads(body or b"{}")
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except ValueError as err:
            await self.answer(send, 400, error_json(400, "the body is not a JSON object: %s" % err, "BadRequestError"))
            return
        request = Request.of(api, data, len(body), time.monotonic() + self.bounds.deadline)
        serving = asyncio.ensure_future(self.serve(request, send))
        gone = asyncio.ensure_future(disconnected(receive))
        done, _pending = await asyncio.wait({serving, gone}, return_when=asyncio.FIRST_COMPLETED)
        if serving in done:
            gone.cancel()
            serving.result()
            return
        serving.cancel()  # the client left: closing the engine's connection makes vLLM abort the request
        self.members.count("client_left")

    async def serve(self, request: Request, send: Send) -> None:
        """Tries pairs until one answers, the tries are spent or the deadline passed."""
        tries = 0
        while tries < self.bounds.tries and time.monotonic() < request.deadline:
            idle = next((role for role in ROLES if not self.members.serving(role)), None)
            if idle:  # before a prefill holds KV that no decoder would take
                await self.unavailable_or_give_up(request, send, idle, tries)
                return
            untried = [d.key for d in self.members.serving("decode") if d.key not in request.tried["decode"]]
            prefill = self.members.pick("prefill", exclude=request.tried["prefill"], decoders_left=untried)
            if prefill is None:
                request.cause = request.cause or "no prefill member with a proven pair to a decode member left to try"
                await self.unavailable_or_give_up(request, send, "prefill", tries)
                return
            tries += 1
            request_id = str(uuid.uuid4())
            try:
                kv = await self.prefill(prefill, request, request_id, send)
                if kv is None and not request.cause:
                    return  # the engine's own client error went to the client
                if kv is None:
                    continue  # another prefill
                outcome, tries = await self.decoders(prefill, kv, request, request_id, send, tries)
            finally:
                self.release_prefill(request)
            if outcome == "done":
                return
            if outcome == "recomputed":  # not a failure: upstream's recompute flow, bounded all the same
                tries -= 1
                request.recomputes += 1
                if request.recomputes > 16:
                    request.cause = "the decode asked for a recompute 16 times"
                    break
        await self.give_up(request, send, tries)

    async def decoders(self, prefill: Member, kv: dict, request: Request, request_id: str, send: Send,
                       tries: int) -> tuple[str, int]:
        """The prefill's KV to one decoder, and to another when that one cannot be reached before its first byte (the
        KV is still held for the request: it is read once, by whichever decoder gets it). ("done", tries) once the
        request is answered, ("pair", tries) for another prefill, ("recomputed", tries)."""
        while True:
            decode = self.members.pick("decode", exclude=request.tried["decode"], prefill=prefill.key)
            if decode is None:
                if self.members.serving("decode"):
                    return "pair", tries  # no proven pair with this prefill left, or all tried
                await self.unavailable_or_give_up(request, send, "decode", tries)
                return "done", tries
            outcome = await self.decode(prefill, decode, kv, request, request_id, send)
            if outcome != "decoder" or tries >= self.bounds.tries or time.monotonic() >= request.deadline:
                return outcome, tries
            tries += 1

    async def prefill(self, member: Member, request: Request, request_id: str, send: Send) -> dict | None:
        """The prefill's kv_transfer_params ({} when it gives none); None when the try failed (request.cause says
        why; the member is out of this request's choices) or when its client error went to the client (no cause)."""
        assert self.client is not None
        body = self.upstream.build_prefill_request(request.body)
        member.load += request.length
        request.holding, request.cause = member, ""
        try:
            answer = await self._unless_ejected(member, self.client.post(
                self.url(member, "/v1" + request.api), json=body, headers=self.headers(request_id),
                timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT)), min(self.bounds.first_byte, self.left(request)))
            status = answer.status_code
            if 400 <= status < 500:
                await self.engine_error(request, send, status, answer.content, answer.headers.get("content-type"))
                return None
            data = answer.json() if status == 200 else None
            if status != 200 or not isinstance(data, dict):
                raise ValueError("answered %d %s" % (status, answer.content[:200].decode(errors="replace")))
        except (Ejected, asyncio.TimeoutError, httpx.TransportError, ValueError) as err:
            request.cause = "prefill %s: %s" % (member.key, describe(err, self.bounds.first_byte))
            self.members.failed(member, request.cause, five_xx=isinstance(err, ValueError))
            request.tried["prefill"].add(member.key)
            self._signal()
            return None
        self.members.succeeded(member)
        return data.get("kv_transfer_params") or {}

    def release_prefill(self, request: Request) -> None:
        """The prefill's share of the balance ends when a decoder took its KV, or when the try ended."""
        if request.holding is not None:
            request.holding.load = max(0.0, request.holding.load - request.length)
            request.holding = None

    def left(self, request: Request) -> float:
        return max(0.01, request.deadline - time.monotonic())

    async def decode(self, prefill: Member, member: Member, kv: dict, request: Request, request_id: str, send: Send) -> str:
        """One decode try: "done" (answered, or a stream ended with an error after its start), "decoder" (this
        decoder failed before a byte: another one may take the same KV), "pair" (a 5xx: another prefill),
        "recomputed"."""
        assert self.client is not None
        body = dict(request.body, kv_transfer_params=kv) if kv else dict(request.body)
        bound = min(self.bounds.first_byte, self.left(request)) if request.stream else self.left(request)
        member.load += request.length
        try:
            opened = await self._unless_ejected(member, self._open(member, body, request, request_id), bound)
        except (Ejected, asyncio.TimeoutError, httpx.TransportError) as err:
            member.load -= request.length
            request.cause = "decode %s: %s" % (member.key, describe(err, bound))
            self.members.failed(member, request.cause)
            request.tried["decode"].add(member.key)
            self._signal()
            return "decoder"
        self.release_prefill(request)  # the decoder has the prefill's KV now (upstream releases it there too)
        try:
            return await self._decoded(prefill, member, opened, request, send)
        finally:
            member.load -= request.length

    async def _open(self, member: Member, body: dict, request: Request, request_id: str) -> tuple:
        """("status", code, body, content type) of an error answer, ("json", data) of a whole answer, or
        ("stream", response, events, first event) of a stream whose first event came."""
        assert self.client is not None
        call = self.client.build_request("POST", self.url(member, "/v1" + request.api), json=body,
                                         headers=self.headers(request_id), timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT))
        response = await self.client.send(call, stream=True)
        try:
            if response.status_code == 200 and request.stream:
                reader = Events(response)
                return ("stream", response, reader, await reader.next())
            content = await response.aread()
        except BaseException:  # a failure, a timeout or an ejection (cancelled): the connection goes, not the stream
            await response.aclose()
            raise
        await response.aclose()
        if response.status_code != 200:
            return ("status", response.status_code, content, response.headers.get("content-type"))
        try:
            return ("json", json.loads(content))
        except ValueError:
            return ("json", None)

    async def _decoded(self, prefill: Member, member: Member, opened: tuple, request: Request, send: Send) -> str:
        pair = (prefill.key, member.key)
        if opened[0] == "status":
            _kind, status, content, content_type = opened
            if status >= 500:
                request.cause = "decode %s answered %d: %s" % (member.key, status, content[:200].decode(errors="replace"))
                self.members.failed(member, request.cause, five_xx=True, pair=pair)
                request.tried["decode"].add(member.key)
                return "pair"
            await self.engine_error(request, send, status, content, content_type)
            return "done"
        if opened[0] == "json":
            return await self._whole(member, pair, opened[1], request, send)
        _kind, response, reader, first = opened
        try:
            return await self._relay(member, pair, reader, first, request, send)
        finally:
            await response.aclose()

    async def _whole(self, member: Member, pair: tuple[str, str], data: Any, request: Request, send: Send) -> str:
        choice = first_choice(data)
        if not choice:
            request.cause = "decode %s answered 200 with no choice" % member.key
            self.members.failed(member, request.cause, five_xx=True, pair=pair)
            request.tried["decode"].add(member.key)
            return "pair"
        self.members.succeeded(member)
        if choice.get("stop_reason") == "recomputed":
            self.recompute(request, choice_text(choice), int((data.get("usage") or {}).get("completion_tokens") or 0))
            return "recomputed"
        if request.recomputes:  # one answer: what the earlier pairs generated, then this one's (upstream does the same)
            text = request.generated + choice_text(choice)
            if request.chat:
                choice.setdefault("message", {})["content"] = text
            else:
                choice["text"] = text
        self.members.count("ok")
        await self.answer(send, 200, json.dumps(data).encode())
        return "done"

    async def _relay(self, member: Member, pair: tuple[str, str], reader: "Events", event: bytes | None, request: Request,
                     send: Send) -> str:
        """Relays a decoder's stream event by event; one that ends without a finish reason ends the client's stream
        with an error ("done" either way: nothing of it can be sent again)."""
        if event is None:  # not a byte of an answer: as good as a failed try
            request.cause = "decode %s ended its stream before its first event" % member.key
            self.members.failed(member, request.cause, five_xx=True, pair=pair)
            request.tried["decode"].add(member.key)
            return "pair"
        self.members.succeeded(member)
        finished, cause = False, ""
        try:
            while event is not None:
                data = event_data(event)
                choice = first_choice(data)
                if choice.get("stop_reason") == "recomputed":  # upstream counts this chunk's token too
                    self.recompute(request, choice_text(choice), 1)
                    return "recomputed"
                if choice:
                    request.generated += choice_text(choice)
                    request.completion_tokens += 1
                    finished = finished or bool(choice.get("finish_reason"))
                if isinstance(data, dict):
                    request.last = {k: data[k] for k in ("id", "object", "created", "model") if k in data}
                if data == "[DONE]" and not finished:
                    break
                await self.start_stream(request, send)
                await send({"type": "http.response.body", "body": event, "more_body": True})
                event = await reader.next()
        except httpx.HTTPError as err:
            cause = "%s: %s" % (type(err).__name__, err)
        if finished:
            self.members.count("ok")
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return "done"
        request.cause = "decode %s: the stream ended without a finish reason%s" % (member.key, ": " + cause if cause else "")
        self.members.failed(member, request.cause)
        self._signal()
        await self.stream_error(request, send, request.cause)
        return "done"

    def recompute(self, request: Request, text: str, tokens: int) -> None:
        """vllm-ascend's recompute (upstream's handle_completions_impl): the prompt and what was generated go to a new
        pair, for the tokens still owed (``tokens``: what this answer adds to the count, as upstream counts)."""
        request.generated += text
        request.completion_tokens += tokens
        body = dict(request.body)
        if request.chat:
            messages = [dict(m) for m in body.get("messages") or [{}]]
            messages[0]["content"] = request.origin_prompt + request.generated
            body["messages"] = messages
        else:
            body["prompt"] = request.origin_prompt + request.generated
        body["max_tokens"] = request.origin_max_tokens - request.completion_tokens + request.recomputes + 1
        request.body = body
        request.tried = {role: set() for role in ROLES}

    # --- answers ------------------------------------------------------------------------------------------------
    async def answer(self, send: Send, status: int, body: bytes, content_type: str = "application/json",
                     headers: list | None = None) -> None:
        start = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())] + (headers or [])
        await send({"type": "http.response.start", "status": status, "headers": start})
        await send({"type": "http.response.body", "body": body})

    async def start_stream(self, request: Request, send: Send) -> None:
        if not request.committed:
            request.committed = True
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"text/event-stream; charset=utf-8")]})

    async def stream_error(self, request: Request, send: Send, message: str, status: int = 502) -> None:
        """The end of a stream that lost its decoder: a last chunk with finish_reason "error", an error event, [DONE]."""
        self.members.count("stream_cut")
        choice = {"index": 0, "finish_reason": "error"}
        choice.update({"delta": {}} if request.chat else {"text": ""})
        last = dict(request.last, choices=[choice])
        error = {"error": {"message": message, "type": "BadGatewayError", "param": None, "code": status}}
        body = b"".join(b"data: " + json.dumps(part).encode() + b"\n\n" for part in (last, error)) + b"data: [DONE]\n\n"
        await self.start_stream(request, send)
        await send({"type": "http.response.body", "body": body, "more_body": False})

    async def engine_error(self, request: Request, send: Send, status: int, content: bytes, content_type: str | None) -> None:
        """An engine's own 4xx (a bad request, an unknown model, a prompt past the context): its status and body."""
        self.members.count("client_error")
        if request.committed:
            await self.stream_error(request, send, content.decode(errors="replace")[:500], status)
            return
        await self.answer(send, status, content, content_type or "application/json")

    async def unavailable_or_give_up(self, request: Request, send: Send, role: str, tries: int) -> None:
        if self.members.serving(role):  # members serve, but this request tried them all
            await self.give_up(request, send, tries)
            return
        retry = max(1, math.ceil(self.bounds.interval))
        message = "no %s member of the cluster is serving (the front door probes them every %s s)" % (role, self.bounds.interval)
        self.members.count("unavailable")
        if request.committed:
            await self.stream_error(request, send, message, 503)
            return
        await self.answer(send, 503, error_json(503, message, "ServiceUnavailableError"),
                          headers=[(b"retry-after", str(retry).encode())])

    async def give_up(self, request: Request, send: Send, tries: int) -> None:
        late = time.monotonic() >= request.deadline
        status = 504 if late else 502
        what = "no answer within the request's deadline" if late else "could not be served"
        message = "%s after %d tries%s" % (what, tries, ": " + request.cause if request.cause else "")
        self.members.count("failed")
        if request.committed:
            await self.stream_error(request, send, message, status)
            return
        await self.answer(send, status, error_json(status, message, "GatewayTimeoutError" if late else "BadGatewayError"))

    async def models(self, send: Send) -> None:
        """GET /v1/models: what a serving member serves (every member serves the same model)."""
        assert self.client is not None
        for member in self.members.serving("prefill") + self.members.serving("decode"):
            try:
                answer = await self.client.get(self.url(member, "/v1/models"), headers=self.headers(), timeout=HEALTH_TIMEOUT * 5)
            except httpx.HTTPError:
                continue
            if answer.status_code == 200:
                await self.answer(send, 200, answer.content)
                return
        await self.answer(send, 503, error_json(503, "no member of the cluster is serving", "ServiceUnavailableError"),
                          headers=[(b"retry-after", str(max(1, math.ceil(self.bounds.interval))).encode())])

    async def metrics(self, send: Send) -> None:
        await self.answer(send, 200, self.members.metrics().encode(), "text/plain; version=0.0.4")

    async def view(self, send: Send) -> None:
        await self.answer(send, 200, json.dumps(self.members.view()).encode())


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


def describe(err: BaseException, bound: float) -> str:
    if isinstance(err, Ejected):
        return "ejected while the try waited (%s)" % err
    if isinstance(err, asyncio.TimeoutError):
        return "no answer within %.1f s" % bound
    return "%s: %s" % (type(err).__name__, err or "")


def from_env(upstream: Any) -> Router | None:
    """The router of this worker, unless LLMOPS_FRONT_DOOR_FAILOVER is 0 (the upstream proxy's own request path)."""
    if os.environ.get("LLMOPS_FRONT_DOOR_FAILOVER", "1") == "0":
        return None
    return Router(upstream, Bounds.from_env(dict(os.environ)), key=os.environ.get("OPENAI_API_KEY") or None)
