# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What `npu-smi info` says about a host's NPUs, and who still holds the ones a plan uses."""

from __future__ import annotations

import re
import typing as t
from collections.abc import Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

# Where the Ascend driver puts npu-smi and hccn_tool when they are not on the PATH.
TOOL_PATHS = ["/usr/local/sbin", "/usr/local/bin", "/usr/local/Ascend/driver/tools"]
VERSION = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")


def parse_npu_smi_info(text: str | None) -> dict[str, t.Any]:
    """{"version", "devices": {npu: {"name", "health"}}, "processes": [{"npu", "pid", "name", "memory_mb"}]}.

    Reads the table of `npu-smi info` (Atlas A2/A3 layout): the device rows (NPU id and name, health),
    then, below the "Process id" header, one row per process using an NPU.
    """
    version: str | None = None
    devices: dict[int, dict[str, str]] = {}
    processes: list[dict[str, t.Any]] = []
    in_processes = False
    for line in (text or "").splitlines():
        match = VERSION.search(line)
        if match:
            version = match.group(2)
            continue
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if "Process id" in line:
            in_processes = True
            continue
        if in_processes and len(cells) >= 4:
            npu = re.match(r"^(\d+)\s+\d+$", cells[0])
            if npu and cells[1].isdigit():
                memory = re.match(r"^(\d+)", cells[3])
                processes.append({"npu": int(npu.group(1)), "pid": int(cells[1]), "name": cells[2],
                                  "memory_mb": int(memory.group(1)) if memory else None})
        elif not in_processes and len(cells) >= 2:
            device = re.match(r"^(\d+)\s+(\S.*)$", cells[0])
            if device and cells[1] and not cells[1][0].isdigit():
                devices[int(device.group(1))] = {"name": device.group(2).strip(), "health": cells[1]}
    return {"version": version, "devices": devices, "processes": processes}


def visible_devices(specs: Sequence[LaunchSpec]) -> list[int]:
    """The NPU numbers a host's containers are given (ASCEND_RT_VISIBLE_DEVICES: the plan's meta)."""
    return sorted({npu for spec in specs for npu in spec_meta.npus(spec)})


def held_devices(facts_by_host: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> list[str]:
    """Problems: a planned NPU that some process still holds (after stop, a leftover EngineCore keeps NPU memory,
    vLLM #9888). ``facts_by_host``: {host: node_facts result}; hosts without npu-smi are not judged."""
    problems = []
    for host in sorted({spec["host"] for spec in specs}):
        npu = ((facts_by_host.get(host) or {}).get("facts") or {}).get("npu") or {}
        if not npu.get("tool"):
            continue
        planned = set(visible_devices([s for s in specs if s["host"] == host]))
        for process in npu.get("processes") or []:
            if process["npu"] in planned:
                problems.append("host %s: NPU %d is still held by process %d (%s, %s MB) although the cluster is stopped; "
                                "a leftover engine process keeps NPU memory (vLLM #9888). Fix: stop it (kill %d) before the "
                                "next deploy." % (host, process["npu"], process["pid"], process["name"], process["memory_mb"],
                                                  process["pid"]))
    return problems


# hccn_tool queries per NPU (the guides' fabric checks) and how each answer is read.
HCCN_QUERIES = (("link", ["-link", "-g"]), ("health", ["-net_health", "-g"]), ("ip", ["-ip", "-g"]), ("tls", ["-tls", "-g"]))


def parse_hccn(what: str, text: str | None) -> str | None:
    """The value of one hccn_tool answer: link UP/DOWN, net health Success/..., the NPU's IP, the TLS switch (0/1)."""
    patterns = {"link": r"link status:\s*(\S+)", "health": r"net health status:\s*(\S+)",
                "ip": r"ipaddr:\s*(\d+\.\d+\.\d+\.\d+)", "tls": r"tls switch\s*\[?\s*(\d+)"}
    match = re.search(patterns[what], text or "", re.IGNORECASE)
    return match.group(1) if match else None


def parse_ping(text: str | None) -> bool:
    """True when `hccn_tool -ping` got every packet back."""
    match = re.search(r"(\d+) packets transmitted, (\d+) received", text or "")
    return match is not None and int(match.group(1)) > 0 and match.group(1) == match.group(2)
