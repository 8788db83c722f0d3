# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Data parallel for real: the process holding DP rank 0 listens on the DP address and RPC port, the others
connect; nobody serves until all ranks joined."""

from __future__ import annotations

import json
import socket
import time

from sim_cli import die, log


class DataParallelGroup:
    """Rank 0 gathers every rank over TCP; the group is ready when ranks 0..dp_size-1 all joined."""

    def __init__(self, size, ranks, address, port):
        self.size, self.ranks, self.address, self.port = size, ranks, address, port

    def join(self):
        if self.size == 1:
            return
        if 0 in self.ranks:
            self._lead()
        else:
            self._follow()

    def _lead(self):
        server = socket.create_server((self.address, self.port), reuse_port=False)
        log("DP coordinator listening on %s:%d for %d ranks" % (self.address, self.port, self.size))
        joined, peers = set(self.ranks), []
        while len(joined) < self.size:
            conn, peer = server.accept()
            ranks = json.loads(conn.makefile().readline())["ranks"]
            clash = joined.intersection(ranks)
            if clash:
                conn.sendall(b'{"error": "ranks %s joined twice"}\n' % str(sorted(clash)).encode())
                die("DP ranks %s joined twice (from %s)" % (sorted(clash), peer[0]))
            joined.update(ranks)
            peers.append(conn)
            log("DP ranks %s joined from %s (%d/%d)" % (ranks, peer[0], len(joined), self.size))
        for conn in peers:
            conn.sendall(b'{"ready": true}\n')
        self._keep(server, peers)

    def _follow(self):
        # Like vLLM's ZMQ sockets, a follower reconnects until the coordinator answers: a connection
        # reset while the coordinator starts (or restarts) is not an answer. ZMQ retries every 100 ms
        # (ZMQ_RECONNECT_IVL's default), so a rank joins a coordinator that just came up at once.
        attempts = 0
        while True:
            try:
                conn = socket.create_connection((self.address, self.port), timeout=5)
                conn.settimeout(None)
                conn.sendall((json.dumps({"ranks": self.ranks}) + "\n").encode())
                line = conn.makefile().readline()
            except OSError:
                if attempts % 50 == 0:  # one line every 5 s of waiting
                    log("waiting for the DP coordinator at %s:%d" % (self.address, self.port))
                attempts += 1
                time.sleep(0.1)
                continue
            if line:
                break
            log("the DP coordinator at %s:%d closed the connection; joining again" % (self.address, self.port))
            conn.close()
            time.sleep(1)
        answer = json.loads(line)
        if not answer.get("ready"):
            die("DP coordinator refused ranks %s: %s" % (self.ranks, answer))
        self._keep(None, [conn])

    @staticmethod
    def _keep(server, conns):
        DataParallelGroup.held = (server, conns)  # keep sockets open for the life of the process
