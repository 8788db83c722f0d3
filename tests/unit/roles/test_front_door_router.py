# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's tries (roles/pd_proxy/files/front_door_router.py) over engines that httpx's MockTransport plays:
which KV a retried decode gets, and which member a try goes to when every one was tried."""

from __future__ import annotations

import asyncio
import json
import sys
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
    unless ``faults`` has an exception type queued for it (raised as httpx raises it, on that one try)."""

    def __init__(self, faults: dict[str, list[type[httpx.TransportError]]]) -> None:
        self.faults, self.prefills, self.decodes = faults, 0, []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        member = "%s:%d" % (request.url.host, request.url.port)
        queued = self.faults.get(member) or []
        if queued:
            raise queued.pop(0)("played fault", request=request)
        if member == PREFILL:
            self.prefills += 1
            return httpx.Response(200, json={"choices": [{"text": "x"}], "kv_transfer_params": {"remote_block_ids": [self.prefills]}})
        kv = json.loads(request.content).get("kv_transfer_params")
        self.decodes.append((member, kv))
        return httpx.Response(200, json={"choices": [{"text": "answered", "finish_reason": "length"}]})


def complete(engines: Engines, serving: tuple[str, ...] = (DECODE_A, DECODE_B)) -> tuple[int, dict]:
    """One non-streamed completion through a router whose members all serve but those left out of ``serving``."""
    async def run() -> tuple[int, dict]:
        door = router.Router(Upstream(), watch.Bounds(tries=3, deadline=30.0))
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
        await door.completions(scope, receive, send, json.dumps({"prompt": "hi", "max_tokens": 4}).encode())
        await door.client.aclose()
        assert not any(engines.faults.values()), "a played fault was never met: %s" % engines.faults
        return sent[0]["status"], json.loads(b"".join(m.get("body", b"") for m in sent[1:]))

    return asyncio.run(run())


def faults(**queued: list[type[httpx.TransportError]]) -> Engines:
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
