# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's request path: the upstream proxy's two steps (prefill, then decode with the prefill's
kv_transfer_params), over members that are watched, with failover and errors a client can see.

The upstream proxy keeps its lists (its admin API: /instances/add and /remove, which deploy drives) and builds
the prefill request (its build_prefill_request, unchanged). What it lacks, this adds:
- Members are watched (front_door_watch.py, the table in front_door_health.py): each API rank's /health every
  LLMOPS_FRONT_DOOR_PROBE_INTERVAL seconds with the engines' key, and every try's outcome. A member that refuses, resets, times out or keeps
  answering 5xx is ejected; it serves again once /health answers and a pair probe (a one-token prefill, then a
  one-token decode with its kv_transfer_params, as verify sends) through it passes.
- A try that fails before its client got a byte is sent again, at most LLMOPS_FRONT_DOOR_TRIES tries within
  LLMOPS_FRONT_DOOR_DEADLINE seconds, to a member this request has not tried yet, else to one it tried that still
  serves (its try was only late: a refused or reset member is ejected, a 5xx makes its pair stale), as Envoy's
  previous_hosts retry predicate gives up after its attempts. A decoder that never got the request (its connect
  failed) gets no second prefill: the same kv_transfer_params go to another decoder, which reads the prefill's KV
  once. A decoder that may have got it (the connection broke or timed out after the request went out) may have
  read that KV already, and the prefill frees it once read: the request starts again from a prefill, so that no
  decoder reads blocks the prefill gave to another request. So does a decode 5xx (the pair's KV path is suspect).
  Such a try's KV stays held on its prefill until that engine's own abort timeout frees it (vllm-ascend #13240;
  VLLM_NIXL_ABORT_REQUEST_TIMEOUT for NIXL), at most one such block set per try. In-flight tries on a member that
  is ejected are moved at once (a hung engine).
- No empty 200 (vllm-ascend #13140): a non-streaming answer is read whole and checked before it is sent; one that
  cannot be served is a 502 (504 past the deadline) with an OpenAI-style JSON error naming the cause; a role with
  no serving member is a fast 503 with Retry-After. A stream that loses its decoder after tokens went out ends with
  a chunk whose finish_reason is "error", an SSE error event and [DONE]. An engine's own 4xx keeps its status and
  body (vllm-ascend #12170 turned a prefill 400 into a bare 500).
- vllm-ascend's recompute scheduler (a decode answering stop_reason "recomputed") is followed as upstream does:
  the prompt plus what was generated goes to a new pair, and the client sees one answer.
- GET /v1/models answers what a serving member serves; GET /metrics has the members' state for Prometheus.
What it reads and writes of the answers themselves (SSE events, error bodies) is front_door_stream.py.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import httpx  # the upstream proxy's own client library, in its image

from front_door_guard import PROXY_FIELDS
from front_door_health import ROLES, Member
from front_door_stream import Events, choice_text, disconnected, error_json, error_message, error_of, event_data, first_choice
from front_door_watch import CONNECT_TIMEOUT, HEALTH_TIMEOUT, Bounds, Ejected, Send, Watch, logger


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


class Router(Watch):
    """The request path of one worker process, over the members its watch keeps."""

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
        for name in PROXY_FIELDS:  # the proxy's own, never a client's (front_door_guard), dropped from the one parse
            data.pop(name, None)
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
            decoders = [d.key for d in self.members.serving("decode")]
            untried = [key for key in decoders if key not in request.tried["decode"]] or decoders
            prefill = (self.members.pick("prefill", exclude=request.tried["prefill"], decoders_left=untried)
                       or self.members.pick("prefill", decoders_left=untried))
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
        """The prefill's KV to one decoder, and to another when that one could not be reached (the KV is still held
        for the request: it is read once, by whichever decoder gets it). ("done", tries) once the request is
        answered, ("pair", tries) for another prefill, ("recomputed", tries)."""
        while True:
            decode = (self.members.pick("decode", exclude=request.tried["decode"], prefill=prefill.key)
                      or self.members.pick("decode", prefill=prefill.key))
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
            call = self.client.build_request("POST", self.url(member, "/v1" + request.api), json=body,
                                             headers=self.headers(request_id), timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT))
            answer = await self._unless_ejected(member, self.send_once_more(call), min(self.bounds.first_byte, self.left(request)))
            status = answer.status_code
            if 400 <= status < 500:
                await self.engine_error(request, send, status, answer.content, answer.headers.get("content-type"))
                return None
            data = answer.json() if status == 200 else None
            if status != 200 or not isinstance(data, dict):
                raise ValueError("answered %d %s" % (status, answer.content[:200].decode(errors="replace")))
        except (Ejected, asyncio.TimeoutError, httpx.TransportError, ValueError) as err:
            request.cause = "prefill %s: %s" % (member.key, describe(err, self.bounds.first_byte))
            self.members.failed(member, request.cause, five_xx=isinstance(err, ValueError), late=late(err))
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
        decoder never got the request: another one may take the same KV), "pair" (a 5xx, or a try that broke after
        the request went out: another prefill), "recomputed"."""
        assert self.client is not None
        body = dict(request.body, kv_transfer_params=kv) if kv else dict(request.body)
        bound = min(self.bounds.first_byte, self.left(request)) if request.stream else self.left(request)
        member.load += request.length
        try:  # the load ends with the try, however it ends (a client that leaves cancels it)
            try:
                opened = await self._unless_ejected(member, self._open(member, body, request, request_id), bound)
            except (Ejected, asyncio.TimeoutError, httpx.TransportError) as err:
                request.cause = "decode %s: %s" % (member.key, describe(err, bound))
                self.members.failed(member, request.cause, late=late(err))
                request.tried["decode"].add(member.key)
                self._signal()
                return "decoder" if never_sent(err) else "pair"
            self.release_prefill(request)  # the decoder has the prefill's KV now (upstream releases it there too)
            return await self._decoded(prefill, member, opened, request, send)
        finally:
            member.load -= request.length

    async def _open(self, member: Member, body: dict, request: Request, request_id: str) -> tuple:
        """("status", code, body, content type) of an error answer, ("json", data) of a whole answer, or
        ("stream", response, events, first event) of a stream whose first event came."""
        assert self.client is not None
        call = self.client.build_request("POST", self.url(member, "/v1" + request.api), json=body,
                                         headers=self.headers(request_id), timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT))
        response = await self.send_once_more(call, stream=True)
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
        """Relays a decoder's stream event by event; one that ends without a finish reason, or whose next event does
        not come within the first-byte bound, ends the client's stream with an error ("done" either way: nothing of
        it can be sent again). A stream whose first event is no answer goes to a new pair, as a 5xx does."""
        if event is None or not first_choice(event_data(event)):  # not a byte of an answer: as good as a failed try
            request.cause = "decode %s %s" % (member.key, no_answer(event))
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
                # a decoder that hangs mid-stream is cut (Envoy's stream idle timeout); an ejection alone does not
                # cut a stream that still flows (a /health probe late on a loaded host)
                event = await asyncio.wait_for(reader.next(), self.bounds.first_byte)
        except httpx.HTTPError as err:
            cause = "%s: %s" % (type(err).__name__, err)
        except asyncio.TimeoutError as err:
            cause = describe(err, self.bounds.first_byte)
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
        error = error_of(message, "BadGatewayError", status)
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
        logger.warning("front door: a request answered %d: %s", status, message)  # the operator's one trace of it
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


def never_sent(err: BaseException) -> bool:
    """A try whose connection never opened: the engine cannot have got the request (nor read a prefill's KV for it)."""
    return isinstance(err, (httpx.ConnectError, httpx.ConnectTimeout))


def late(err: BaseException) -> bool:
    """A try that timed out (connect or first byte): slowness, not a refusal."""
    return isinstance(err, (asyncio.TimeoutError, httpx.TimeoutException))


def no_answer(event: bytes | None) -> str:
    """Why a stream's first event is no answer: none came, or the engine's error event (vLLM streams its 500 as one
    after its 200, e.g. a KV load that failed on the decoder's first NIXL handshake), or something else."""
    if event is None:
        return "ended its stream before its first event"
    message = error_message(event_data(event))
    if message:
        return "answered its stream with an error before any text: %s" % message
    return "began its stream with no answer: %s" % event[:200].decode(errors="replace").strip()


def describe(err: BaseException, bound: float) -> str:
    if isinstance(err, Ejected):
        return "ejected while the try waited (%s)" % err
    if isinstance(err, asyncio.TimeoutError):
        return "no answer within %.1f s" % bound
    return "%s: %s" % (type(err).__name__, err or "")


def from_env(upstream: Any, key: Callable[[], str | None]) -> Router | None:
    """The router of this worker, unless LLMOPS_FRONT_DOOR_FAILOVER is 0 (the upstream proxy's own request path);
    ``key`` gives the engines' key now (its file is read again when it changes)."""
    if os.environ.get("LLMOPS_FRONT_DOOR_FAILOVER", "1") == "0":
        return None
    return Router(upstream, Bounds.from_env(dict(os.environ)), key=key)
