# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's tries (roles/pd_proxy/files/front_door_router.py) over engines that httpx's MockTransport plays:
which KV a retried decode gets, and which member a try goes to when every one was tried."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roles" / "pd_proxy" / "files"))
import front_door_router as router  # noqa: E402  pylint: disable=wrong-import-position,import-error
import front_door_watch as watch  # noqa: E402  pylint: disable=wrong-import-position,import-error

PREFILL, DECODE_A, DECODE_B = "10.0.0.1:8100", "10.0.0.2:8200", "10.0.0.2:8300"


class Upstream:
    """What the router takes of the upstream proxy: its prefill request and its URLs."""

    @staticmethod
    def build_prefill_request(body: dict) -> dict:
        return dict(body, max_tokens=1, kv_transfer_params={"do_remote_decode": True})

    @staticmethod
    def build_server_url(host: str, port: int) -> str:
        return "http://%s:%d" % (host, port)


class Engines:
    """The members' answers: each prefill gives KV blocks of its own number; a decode answers with the KV it got,
    unless ``faults`` has a fault queued for it, met on that one try: an exception type (raised as httpx raises
    it), "error_event" (a stream that is vLLM's error event after its 200, as on a failed KV load) or "stall" (a
    stream that sends one event, then nothing)."""

    def __init__(self, faults: dict[str, list]) -> None:
        self.faults, self.prefills, self.decodes = faults, 0, []

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        member = "%s:%d" % (request.url.host, request.url.port)
        queued = self.faults.get(member) or []
        fault = queued.pop(0) if queued else None
        if isinstance(fault, type):
            raise fault("played fault", request=request)
        if member == PREFILL:
            self.prefills += 1
            return httpx.Response(200, json={"choices": [{"text": "x"}], "kv_transfer_params": {"remote_block_ids": [self.prefills]}})
        body = json.loads(request.content)
        kv = body.get("kv_transfer_params")
        if fault == "error_event":
            error = {"error": {"message": "Internal server error", "type": "InternalServerError", "param": None, "code": 500}}
            return httpx.Response(200, content=streamed(sse(error, "[DONE]")), headers={"content-type": "text/event-stream"})
        self.decodes.append((member, kv))
        if fault == "stall":
            return httpx.Response(200, content=streamed(sse({"choices": [{"text": "ans"}]}), stall=True),
                                  headers={"content-type": "text/event-stream"})
        if body.get("stream"):
            events = sse({"choices": [{"text": "answered"}]}, {"choices": [{"text": "", "finish_reason": "length"}]}, "[DONE]")
            return httpx.Response(200, content=streamed(events), headers={"content-type": "text/event-stream"})
        return httpx.Response(200, json={"choices": [{"text": "answered", "finish_reason": "length"}]})


def sse(*events: object) -> bytes:
    return b"".join(b"data: " + (e.encode() if isinstance(e, str) else json.dumps(e).encode()) + b"\n\n" for e in events)


async def streamed(body: bytes, stall: bool = False) -> AsyncIterator[bytes]:
    """A stream body (MockTransport streams only an iterator); with ``stall``, nothing more for longer than a test
    waits."""
    yield body
    if stall:
        await asyncio.sleep(60)


def complete(engines: Engines, serving: tuple[str, ...] = (DECODE_A, DECODE_B), stream: bool = False,
             first_byte: float = 120.0) -> tuple[int, object]:
    """One completion through a router whose members all serve but those left out of ``serving``: the status and
    the JSON body, or the list of a stream's events."""
    async def run() -> tuple[int, object]:
        door = router.Router(Upstream(), watch.Bounds(tries=3, deadline=30.0, first_byte=first_byte))
        door.members.sync({"prefill": [PREFILL], "decode": [DECODE_A, DECODE_B]}, at_start=True)
        for member in door.members.of("decode"):
            member.picked = 0 if member.key == DECODE_B else 1  # b's turn first (ties go to the one picked longest ago)
            if member.key not in serving:
                door.members.eject(member, "left out by the test")
        door.client = door.fresh = httpx.AsyncClient(transport=httpx.MockTransport(engines))
        sent: list[dict] = []
        never: asyncio.Event = asyncio.Event()

        async def receive() -> dict:
            await never.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        scope = {"path": "/v1/completions"}
        await door.completions(scope, receive, send, json.dumps({"prompt": "hi", "max_tokens": 4, "stream": stream}).encode())
        await door.client.aclose()
        assert not any(engines.faults.values()), "a played fault was never met: %s" % engines.faults
        body = b"".join(m.get("body", b"") for m in sent[1:])
        if stream:
            return sent[0]["status"], [json.loads(e[5:]) if e[5:].strip() != b"[DONE]" else "[DONE]" for e in body.split(b"\n\n") if e]
        return sent[0]["status"], json.loads(body)

    return asyncio.run(run())


def faults(**queued: list) -> Engines:
    return Engines({{"a": DECODE_A, "b": DECODE_B}[name]: list(kinds) for name, kinds in queued.items()})


def test_a_decoder_that_never_got_the_request_gives_its_kv_to_another_with_no_second_prefill():
    engines = faults(b=[httpx.ConnectError])  # refused: no connection opened
    status, _body = complete(engines)
    assert status == 200 and engines.prefills == 1
    assert engines.decodes == [(DECODE_A, {"remote_block_ids": [1]})]


def test_a_decoder_that_may_have_read_the_kv_sends_the_request_to_a_new_prefill():
    # the connection broke after the request went out: that decoder may have read blocks the prefill then freed
    engines = faults(b=[httpx.ReadError])
    status, _body = complete(engines)
    assert status == 200 and engines.prefills == 2
    assert engines.decodes == [(DECODE_A, {"remote_block_ids": [2]})]


def test_a_decoder_that_died_after_its_kept_connection_broke_is_not_taken_for_one_never_reached():
    engines = faults(b=[httpx.RemoteProtocolError, httpx.ConnectError])  # the kept connection, then a refused new one
    status, _body = complete(engines)
    assert status == 200 and engines.prefills == 2
    assert engines.decodes == [(DECODE_A, {"remote_block_ids": [2]})]


def test_the_last_serving_decoder_that_was_only_late_is_tried_again_while_tries_are_left():
    # decoder b is out; a's connect timed out once (a saturated host): with tries left, a gets the same KV again
    engines = faults(a=[httpx.ConnectTimeout])
    status, _body = complete(engines, serving=(DECODE_A,))
    assert status == 200 and engines.prefills == 1
    assert engines.decodes == [(DECODE_A, {"remote_block_ids": [1]})]


def test_tries_are_bounded_when_the_last_decoder_stays_late():
    engines = faults(a=[httpx.ConnectTimeout] * 3)
    status, body = complete(engines, serving=(DECODE_A,))
    assert status == 502 and "after 3 tries" in body["error"]["message"] and engines.prefills == 1
    assert not engines.decodes


def test_a_stream_whose_decoder_answers_an_error_before_any_text_goes_to_a_new_pair():
    # vLLM streams a failed KV load (its first NIXL handshake timed out) as an error event after its 200
    engines = faults(b=["error_event"])
    status, events = complete(engines, stream=True)
    assert status == 200 and engines.prefills == 2
    assert engines.decodes == [(DECODE_A, {"remote_block_ids": [2]})]
    assert events == [{"choices": [{"text": "answered"}]}, {"choices": [{"text": "", "finish_reason": "length"}]}, "[DONE]"]


def test_a_stream_whose_decoder_goes_silent_is_cut_with_an_error_after_the_first_byte_bound():
    engines = faults(b=["stall"])
    started = time.monotonic()
    status, events = complete(engines, stream=True, first_byte=0.3)
    assert status == 200 and time.monotonic() - started < 10
    assert events[0] == {"choices": [{"text": "ans"}]} and events[-1] == "[DONE]"
    assert events[1]["choices"][0]["finish_reason"] == "error"
    assert "no answer within 0.3 s" in events[2]["error"]["message"]
