# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's member watch: every member's /health and the pair probes that put members back in service.

Each API rank the upstream proxy lists (a member) is probed on /health every Bounds.interval seconds with the engines'
key, each on its own so that one hung member delays no other's; what a probe or a try sees goes to the member table
(front_door_health.py). A member on probation serves again once a pair probe through it passes: a one-token prefill
(the upstream's build_prefill_request), then a one-token decode with its kv_transfer_params, as verify sends to each
pair. Tries waiting on a member that is ejected meanwhile are woken (Ejected), so a hung engine holds no request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import httpx  # the upstream proxy's own client library, in its image

from front_door_health import EJECTED, ROLES, SERVING, Member, Members
from front_door_stream import first_choice

logger = logging.getLogger("front_door")
CONNECT_TIMEOUT = 2.0  # a member's port that takes longer to accept is as good as dead
KEEPALIVE = 2.0  # seconds an idle connection to a member is kept: below vLLM's own 5 s (VLLM_HTTP_TIMEOUT_KEEP_ALIVE)
HEALTH_TIMEOUT = 2.0  # vLLM answers /health from its API server's event loop: late on a saturated host, not dead
PROBE_PROMPT = "The llmops front door checks that this prefill and this decode pass KV to each other."
Send = Callable[[dict], Awaitable[None]]


@dataclass(frozen=True)
class Bounds:
    interval: float = 1.0  # seconds between two /health rounds
    first_byte: float = 120.0  # a prefill's answer, a streamed decode's first event and each next one
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


class Watch:
    """The members of one worker process, watched; the request path (front_door_router.Router) builds on it."""

    def __init__(self, upstream: Any, bounds: Bounds, key: Callable[[], str | None] = lambda: None) -> None:
        self.upstream, self.bounds, self.key = upstream, bounds, key  # key: the engines' key now
        self.members = Members()
        self.client: httpx.AsyncClient | None = None
        self.fresh: httpx.AsyncClient | None = None  # keeps no connection: a probe's second try
        self.tasks: list[asyncio.Task] = []
        self.probing: dict[tuple[str, str], asyncio.Task] = {}
        self.checking: dict[tuple[str, str], asyncio.Task] = {}  # each member's /health probe in flight
        self.gone: dict[tuple[str, str], asyncio.Event] = {}
        self.model: str | None = None
        self.synced = False

    # --- lifetime -----------------------------------------------------------------------------------------------
    async def start(self) -> None:
        # as upstream's clients, but an idle connection is dropped before the engine drops it: vLLM closes one after
        # VLLM_HTTP_TIMEOUT_KEEP_ALIVE (5 s), httpx kept it 5 s too, and a request sent as the engine closed it failed
        # with RemoteProtocolError (every member's probe at once, on real vLLM: all ejected, then 503)
        limits = httpx.Limits(max_connections=100000, max_keepalive_connections=100000, keepalive_expiry=KEEPALIVE)
        self.client = httpx.AsyncClient(timeout=None, limits=limits)
        self.fresh = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_keepalive_connections=0))
        self.tasks.append(asyncio.ensure_future(self._watch()))

    async def stop(self) -> None:
        for task in self.tasks + list(self.probing.values()) + list(self.checking.values()):
            task.cancel()
        for client in (self.client, self.fresh):
            if client is not None:
                await client.aclose()

    def url(self, member: Member, path: str) -> str:
        host, _sep, port = member.key.rpartition(":")
        return self.upstream.build_server_url(host.strip("[]"), int(port)) + path

    def headers(self, request_id: str | None = None) -> dict[str, str]:
        key = self.key()
        found = {"Authorization": "Bearer %s" % key} if key else {}
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

    async def send_once_more(self, request: httpx.Request, stream: bool = False,
                             retry_on: tuple[type[Exception], ...] = (httpx.RemoteProtocolError,)) -> httpx.Response:
        """Sends a request to a member, once more on a new connection when the kept one ended before any answer: the
        engine may close an idle connection as it is reused, or after an answer it could not keep the connection open
        for (seen on real vLLM: RemoteProtocolError, which ejected a serving prefill); a dead engine refuses the second
        try too, and then the first error is raised: the engine may have got the request before it died (the router
        must not take such a try for one that never reached it). A /health probe, which changes nothing, also
        retries a reset (``retry_on``)."""
        assert self.client is not None and self.fresh is not None
        try:
            return await self.client.send(request, stream=stream)
        except retry_on as first:
            try:
                return await self.fresh.send(request, stream=stream)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                raise first from None

    async def _get_health(self, member: Member) -> httpx.Response:
        assert self.client is not None
        probe = self.client.build_request("GET", self.url(member, "/health"), headers=self.headers(), timeout=HEALTH_TIMEOUT)
        return await self.send_once_more(probe, retry_on=(httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError))

    async def _health(self, member: Member) -> None:
        try:
            answer = await self._get_health(member)
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

    async def metrics(self, send: Send) -> None:
        await self.answer(send, 200, self.members.metrics().encode(), "text/plain; version=0.0.4")

    async def view(self, send: Send) -> None:
        await self.answer(send, 200, json.dumps(self.members.view()).encode())

    async def answer(self, send: Send, status: int, body: bytes, content_type: str = "application/json",
                     headers: list | None = None) -> None:
        start = [(b"content-type", content_type.encode()), (b"content-length", str(len(body)).encode())] + (headers or [])
        await send({"type": "http.response.start", "status": status, "headers": start})
        await send({"type": "http.response.body", "body": body})
