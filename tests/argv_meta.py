# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a launch spec's argv, name, environment and rendered files say of it: the parsers the consumers
used before the plan's ``meta`` existed, kept as the tests' oracle. test_lab_plans.py holds
every lab spec's meta equal to what this reads from the rest of the spec; unit tests build the meta of
their hand-made specs with it."""

from __future__ import annotations

import re

ENGINE_NAME = re.compile(r"-(prefill|decode|colocated)(?:-[a-z0-9]+)?(?:-dp\d+)?$")  # role, instance, rank
SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def flag_value(command, flag):
    return command[command.index(flag) + 1] if flag in command and command.index(flag) + 1 < len(command) else None


def size_bytes(text):
    match = SIZE.match(str(text or ""))
    return int(float(match.group(1)) * 1024 ** "bkmgt".index((match.group(2) or "b").lower())) if match else None


def dp_ranks(command):
    ranks = flag_value(command, "--data-parallel-rank") or flag_value(command, "--data-parallel-start-rank")
    local = flag_value(command, "--data-parallel-size-local")
    if ranks is None:
        if local is None:
            return [0] if "--data-parallel-size" in command else []
        ranks = "0"
    return list(range(int(ranks), int(ranks) + int(local or 1)))


def engine_meta(spec):
    """The meta of an engine spec, read back from its argv, name, env and files."""
    command, env = spec.get("command") or [], spec.get("env") or {}
    address, port = flag_value(command, "--data-parallel-address"), flag_value(command, "--data-parallel-rpc-port")
    match = ENGINE_NAME.search(spec["name"])
    headless = "--headless" in command
    base = re.match(r"^(https?://[^/]+)", (spec.get("ready") or {}).get("http") or "")
    api = base.group(1) if base and not headless else None  # an API engine is probed on its own API
    npus = [int(d) for d in re.split(r"[,\s]+", env.get("ASCEND_RT_VISIBLE_DEVICES", "")) if d.isdigit()]
    pool, ucm = None, None
    for path, content in (spec.get("files") or {}).items():
        if path.endswith(".json") and "global_segment_size" in content:
            size = re.search(r'"global_segment_size"\s*:\s*"?([^",}]+)', content).group(1)
            pool = {"backend": "mooncake", "bytes_per_worker": size_bytes(size) or 0}
        found = re.search(r"^ock\.mmc\.local_service\.dram\.size\s*=\s*(\S+)", content, re.M)
        if found:
            pool = {"backend": "memcache", "bytes_per_worker": size_bytes(found.group(1)) or 0}
        if "ucm_connectors" in content:
            backends = re.search(r"storage_backends:\s*['\"]?([^'\"\n]+)", content)
            capacity = re.search(r"posix_capacity_gb:\s*(\d+)", content)
            ucm = {path: int(capacity.group(1)) if capacity else 0 for path in backends.group(1).strip().split(":")}
    model = command[2] if len(command) > 2 else None
    return {
        "kind": "engine", "role": match.group(1) if match else "colocated",  # per_node colocated: the bare name
        "dp_group": "%s:%s" % (address, port) if address and port else None, "dp_ranks": dp_ranks(command),
        "engines_behind": 1 if flag_value(command, "--data-parallel-rank") else int(flag_value(command, "--data-parallel-size") or 1),
        "api_url": api, "metrics_url": api + "/metrics" if api else None, "headless": headless,
        "devices": [int(g) for g in spec.get("gpus") or []] or npus, "npus": npus, "model": model,
        "served_model": flag_value(command, "--served-model-name") or model, "pool": pool, "ucm_storage": ucm,
        "ascend_direct": any('"use_ascend_direct":true' in arg.replace(" ", "") for arg in command),
    }


def service_meta(spec):
    """The meta of a service spec, read back from its readiness probe."""
    url = (spec.get("ready") or {}).get("http") or ""
    base = re.match(r"^(https?://[^/]+)", url)
    if url.endswith("/healthcheck"):
        return {"kind": "proxy", "role": "service", "api_url": base.group(1)}
    command = " ".join(spec.get("command") or [])
    if url.endswith("/metrics"):
        return {"kind": "pool_service", "role": "service", "metrics_url": url,
                "backend": "mooncake" if "mooncake_master" in command else None}
    if "MetaService" in command:
        return {"kind": "pool_service", "role": "service", "backend": "memcache"}
    return {"kind": "service", "role": "service"}


def read_meta(spec):
    return engine_meta(spec) if (spec.get("command") or [])[:2] == ["vllm", "serve"] else service_meta(spec)


def with_meta(spec, **overrides):
    """The spec with the meta its argv, name, env and files say (overrides on top), as a plan would give it."""
    meta = read_meta(spec)
    meta.update(overrides)
    return dict(spec, meta=meta)
