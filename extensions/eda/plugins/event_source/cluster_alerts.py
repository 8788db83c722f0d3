# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_alerts: an ansible-rulebook event source for llmops.inference clusters.

Prometheus Alertmanager's webhook (POST to ``path``, its version 4 payload) becomes one event per alert, read
from the labels the collection's scrape targets and alert rules give (monitoring.yml)::

    {"llmops": {"alert", "status", "cluster", "host", "container", "role", "instance", "member",
                "fingerprint", "starts_at"},
     "alert": <the alert as Alertmanager sent it>}

``role`` is the front door member's role for a member alert (LlmopsFrontDoorMemberOut), else the target's.
GET /metrics serves what heal.yml records (the ``*.prom`` files in ``state_dir``: its attempts by result, the groups
it gave up on), for the same Prometheus; GET /health answers 200.

Arguments:
  host: the address to listen on (default 127.0.0.1)
  port: the port (default 9711)
  path: the webhook's path (default /alerts)
  state_dir: heal.yml's records (llmops_heal_state_dir; default /var/lib/llmops/heal)
  clusters: only these clusters' alerts (default: every cluster's)

Example:
  sources:
    - llmops.inference.cluster_alerts:
        port: 9711
"""

from __future__ import annotations

import asyncio
import pathlib
import typing as t

from aiohttp import web

# event key -> the alert label it comes from (monitoring.yml's target labels; the front door's metric labels)
LABELS = {"cluster": "llmops_cluster", "host": "llmops_host", "container": "llmops_container",
          "instance": "llmops_instance", "member": "member"}


def events(payload: dict[str, t.Any], clusters: t.Collection[str] = ()) -> list[dict[str, t.Any]]:
    """One event per alert of Alertmanager's webhook payload that names a cluster (of ``clusters``, when given)."""
    found = []
    for alert in payload.get("alerts") or []:
        labels = alert.get("labels") or {}
        cause = {key: labels[label] for key, label in LABELS.items() if labels.get(label)}
        if "cluster" not in cause or (clusters and cause["cluster"] not in clusters):
            continue
        cause.update(alert=labels.get("alertname", ""), status=alert.get("status", ""),
                     role=labels.get("role") or labels.get("llmops_role", ""),
                     fingerprint=alert.get("fingerprint", ""), starts_at=alert.get("startsAt", ""))
        found.append({"llmops": cause, "alert": alert})
    return found


def metrics_text(state_dir: pathlib.Path) -> str:
    """heal.yml's metrics files, one after another (one per cluster)."""
    return "".join(path.read_text(encoding="utf-8") for path in sorted(state_dir.glob("*.prom")))


async def main(queue: asyncio.Queue[t.Any], args: dict[str, t.Any]) -> None:
    state_dir = pathlib.Path(args.get("state_dir") or "/var/lib/llmops/heal")
    clusters = frozenset(args.get("clusters") or ())

    async def received(request: web.Request) -> web.Response:
        try:
            payload = await request.json()
        except ValueError:
            return web.Response(status=400, text="not JSON")
        for event in events(payload, clusters):
            await queue.put(event)
        return web.Response(status=202)

    async def metrics(_request: web.Request) -> web.Response:
        return web.Response(text=metrics_text(state_dir), content_type="text/plain")

    async def health(_request: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.add_routes([web.post(args.get("path") or "/alerts", received), web.get("/metrics", metrics), web.get("/health", health)])
    runner = web.AppRunner(app, access_log=None)  # Prometheus scrapes /metrics every few seconds
    await runner.setup()
    site = web.TCPSite(runner, args.get("host") or "127.0.0.1", int(args.get("port") or 9711))
    await site.start()
    try:
        await asyncio.Future()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    # by hand, as ansible-rulebook's plugin template does: print each event
    class PrintingQueue(asyncio.Queue):  # type: ignore[type-arg]
        async def put(self, item: t.Any) -> None:
            print(item, flush=True)

    asyncio.run(main(PrintingQueue(), {"port": 9711}))
