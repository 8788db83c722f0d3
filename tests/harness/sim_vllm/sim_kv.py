# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated engine's KV blocks and where it finds them again: its own prefix cache, the UCM storage
directory (kept across restarts) and the KV pool (through the real Mooncake store client)."""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import threading

from sim_cli import die, log

SIZE_UNITS = {"": 1, "B": 1, "KB": 1 << 10, "MB": 1 << 20, "GB": 1 << 30, "TB": 1 << 40}


SIM_SEGMENT_CAP = 64 << 20  # the simulated engine's blocks are a few bytes: it mounts at most this much of its segment


def size_bytes(text):
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?B?)\s*", str(text).upper())
    if not match:
        die("mooncake.json: global_segment_size %r is not a size" % text)
    unit = match.group(2)
    return int(match.group(1)) * SIZE_UNITS[unit if unit in ("", "B") or unit.endswith("B") else unit + "B"]


class MooncakePool:
    """The KV pool through the real Mooncake store (the client of the mooncake wheel): a block one engine
    puts is found by every other engine that asks the same master. The store runs over TCP here: the
    seeds' protocol (ascend) needs NPUs; the master, its allocation and lookups are the real ones."""

    def __init__(self, config_path, host_ip, rpc_port, model):
        from mooncake.store import MooncakeDistributedStore  # pylint: disable=import-outside-toplevel
        config = json.loads(pathlib.Path(config_path).read_text())
        segment = min(size_bytes(config.get("global_segment_size", 0)), SIM_SEGMENT_CAP)
        self.store, self.prefix = MooncakeDistributedStore(), hashlib.sha256(model.encode()).hexdigest()[:12]
        # rpc_port: the engine's planned lookup_rpc_port, unique per engine, so engines sharing a host never clash
        code = self.store.setup("%s:%d" % (host_ip, rpc_port), config["metadata_server"], segment, 16 << 20, "tcp", "",
                                config["master_server_address"])
        if code != 0:
            die("Mooncake store: setup against master %s failed (%d)" % (config["master_server_address"], code))
        log("Mooncake store client of master %s (segment %d bytes, protocol tcp for %s)"
            % (config["master_server_address"], segment, config.get("protocol")))

    def has(self, key):
        found = self.store.is_exist(self.prefix + key)
        if found < 0:
            log("Mooncake store: is_exist %s failed (%d)" % (key[:12], found))
        return found == 1

    def put(self, key):
        code = self.store.put(self.prefix + key, key.encode())
        if code != 0:  # -706 (already there: another engine put it) is fine; say the rest
            log("Mooncake store: put %s answered %d" % (key[:12], code))


class EnginePool:
    """A pool this simulator cannot reach (Memcache's client needs the Ascend driver, even over host_tcp):
    blocks are kept for this engine alone, so no hit on another engine is ever claimed."""

    def __init__(self, backend):
        self.keys = set()
        log("KV pool %s: its client needs an NPU; blocks are kept per engine (not shared)" % backend)

    def has(self, key):
        return key in self.keys

    def put(self, key):
        self.keys.add(key)


class Blocks:
    """Prefix blocks: the engine's own prefix cache (memory), then, like vLLM's scheduler, the KV
    connector's store for the blocks beyond the local hits: the UCM storage directory (shared by the
    engines of a host, kept across restarts), or the KV pool (MooncakePool / EnginePool)."""

    def __init__(self, block_size, directory=None, pool=None):
        self.block_size, self.directory, self.seen = block_size, directory, set()
        self.pool = pool
        self.lock = threading.Lock()

    def _external(self, key):
        return (self.directory / key).exists() if self.directory else self.pool.has(key)

    def lookup_and_store(self, prompt):
        """(prompt tokens, local hit tokens, tokens asked of the connector, connector hit tokens)."""
        tokens = prompt.split()
        digest, keys = hashlib.sha256(), []
        for index in range(len(tokens) // self.block_size):
            digest.update(" ".join(tokens[index * self.block_size:(index + 1) * self.block_size]).encode())
            keys.append(digest.hexdigest())
        external = self.directory is not None or self.pool is not None
        with self.lock:
            local = next((i for i, key in enumerate(keys) if key not in self.seen), len(keys))
            remote = 0
            if external:
                remote = next((i for i, key in enumerate(keys[local:]) if not self._external(key)), len(keys) - local)
            for key in keys:
                self.seen.add(key)
                if self.directory:
                    (self.directory / key).touch()
                elif self.pool is not None:
                    self.pool.put(key)
        asked = len(tokens) - local * self.block_size if external else 0
        return len(tokens), local * self.block_size, asked, remote * self.block_size


def kv_pool(kv, host_ip, model):
    """The pool a producer (or a consumer told to load or put) uses; None without one."""
    pool = (kv or {}).get("pool")
    if not pool or not (kv["role"] != "kv_consumer" or pool["consumer_is_to_load"] or pool["consumer_is_to_put"]):
        return None
    if pool["backend"] == "mooncake":
        return MooncakePool(os.environ["MOONCAKE_CONFIG_PATH"], host_ip, pool["lookup_rpc_port"], model)
    return EnginePool(pool["backend"])
