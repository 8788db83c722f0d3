# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's /health probe against an engine that ends a connection without answering, in the proxy's image
(httpx), on loopback (tests only).

    python3 front_door_watch_check.py WATCH_DIR

A member whose engine closes the probe's first connection after reading the request (what real vLLM did to a kept
connection: RemoteProtocolError) and answers every later one, and a member with nothing listening. Prints one JSON
object: each member's state after one probe. Bounded: each probe has the watch's own timeout.
"""

from __future__ import annotations

import asyncio
import json
import sys

CLOSING, DEAD = 18311, 18312


async def closing_engine(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, seen: list[int]) -> None:
    """Closes its first connection once the request is read, answers 200 on every later one."""
    seen.append(1)
    await reader.readuntil(b"\r\n\r\n")
    if len(seen) > 1:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
        await writer.drain()
    writer.close()


class Upstream:
    @staticmethod
    def build_server_url(host: str, port: int) -> str:
        return "http://%s:%d" % (host, port)


async def main() -> None:
    sys.path.insert(0, sys.argv[1])
    import front_door_watch  # pylint: disable=import-outside-toplevel,import-error
    import httpx  # pylint: disable=import-outside-toplevel  # the proxy's image has it

    seen: list[int] = []
    server = await asyncio.start_server(lambda r, w: closing_engine(r, w, seen), "127.0.0.1", CLOSING)
    watch = front_door_watch.Watch(Upstream(), front_door_watch.Bounds())
    # the clients start() makes, without its rounds (they read the upstream proxy's lists)
    watch.client = httpx.AsyncClient(timeout=None)
    watch.fresh = httpx.AsyncClient(timeout=None, limits=httpx.Limits(max_keepalive_connections=0))
    watch.members.sync({"prefill": ["127.0.0.1:%d" % CLOSING], "decode": ["127.0.0.1:%d" % DEAD]}, at_start=True)
    members = {m.key: m for m in watch.members.members.values()}
    await watch.health_round(list(members.values()))
    server.close()
    await watch.stop()
    print(json.dumps({"connections to the closing engine": len(seen),
                      **{key: {"state": m.state, "reason": m.reason} for key, m in members.items()}}))


if __name__ == "__main__":
    asyncio.run(main())
