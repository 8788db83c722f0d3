# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight of the NPU fabric: link, network health, IP and TLS of every planned NPU (hccn_tool), and the
pings between the nodes whose KV or collectives cross the network."""

from __future__ import annotations

import typing as t
from collections.abc import Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import HARDWARE
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.plan._spec_meta import dp_group
from ansible_collections.llmops.inference.plugins.module_utils.preflight._npu import visible_devices
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_rows import numbers, row


def fabric_applies(plan: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> bool:
    """The NPU fabric matters when KV or collectives cross nodes: more than one node, or PD (Ascend only)."""
    if plan.get("hardware") in HARDWARE and not HARDWARE[plan["hardware"]]["ascend"]:
        return False
    return len({s["host"] for s in specs if visible_devices([s])}) > 1 or any(spec_meta.role(s) == "prefill" for s in specs)


def fabric_rows(host: str, fabric: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> list[dict[str, str]]:
    planned = visible_devices(specs)
    if not planned:
        return []
    if not fabric.get("tool"):
        return [row(host, "fabric", "hccn_tool not found", "hccn_tool for NPUs %s" % numbers(planned),
                    "install the Ascend driver (hccn_tool is under /usr/local/Ascend/driver/tools)")]
    rows = []
    for npu in planned:
        seen = (fabric.get("npus") or {}).get(str(npu)) or {}
        if seen.get("link") != "UP":
            rows.append(row(host, "fabric", "NPU %d link %s" % (npu, seen.get("link") or "unknown"), "link UP",
                            "check the NPU's cable and switch port (hccn_tool -i %d -link -g)" % npu))
        if seen.get("health") != "Success":
            rows.append(row(host, "fabric", "NPU %d net health %s" % (npu, seen.get("health") or "unknown"), "net health Success",
                            "check the NPU network (hccn_tool -i %d -net_health -g; /etc/hccn.conf)" % npu))
        if not seen.get("ip"):
            rows.append(row(host, "fabric", "NPU %d has no IP" % npu, "an NPU IP (hccn_tool -i %d -ip -g)" % npu,
                            "configure it (hccn_tool -i %d -ip -s address ... netmask ...)" % npu))
    return rows


def tls_rows(facts_by_host: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> list[dict[str, str]]:
    """The TLS switch must be the same on every planned NPU of every node (vLLM #10224): rows for the odd ones out."""
    switches: dict[tuple[str, int], t.Any] = {}
    for host in sorted({s["host"] for s in specs}):
        fabric = (((facts_by_host.get(host) or {}).get("facts") or {}).get("fabric")) or {}
        for npu in visible_devices([s for s in specs if s["host"] == host]):
            value = ((fabric.get("npus") or {}).get(str(npu)) or {}).get("tls")
            if value is not None:
                switches[(host, npu)] = value
    values = sorted(set(switches.values()))
    if len(values) < 2:
        return []
    common = max(values, key=lambda v: (list(switches.values()).count(v), v))
    return [row(host, "fabric", "NPU %d TLS switch %s" % (npu, value), "TLS switch %s, as on the other NPUs" % common,
                "align it (hccn_tool -i %d -tls -s enable %s) on every node" % (npu, common))
            for (host, npu), value in sorted(switches.items()) if value != common]


def ping_targets(facts_by_host: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> dict[str, list[dict[str, t.Any]]]:
    """{host: [{"npu", "address", "peer"}]}: the first planned NPU of each prefill node pings one NPU of each
    decode node, and the nodes of one DP group ping each other."""
    first_npu: dict[str, int] = {}
    npu_ip: dict[str, str | None] = {}
    for host in {s["host"] for s in specs}:
        planned = visible_devices([s for s in specs if s["host"] == host])
        fabric = (((facts_by_host.get(host) or {}).get("facts") or {}).get("fabric")) or {}
        if planned:
            first_npu[host] = planned[0]
            npu_ip[host] = ((fabric.get("npus") or {}).get(str(planned[0])) or {}).get("ip")
    pairs: set[tuple[str, str]] = set()
    prefill = sorted({s["host"] for s in specs if spec_meta.role(s) == "prefill"})
    decode = sorted({s["host"] for s in specs if spec_meta.role(s) == "decode"})
    pairs |= {(p, d) for p in prefill for d in decode if p != d}
    groups: dict[str, set[str]] = {}
    for spec in specs:
        groups.setdefault(dp_group(spec), set()).add(spec["host"])
    pairs |= {(a, b) for hosts in groups.values() for a in hosts for b in hosts if a != b}
    targets: dict[str, list[dict[str, t.Any]]] = {}
    for source, peer in sorted(pairs):
        if source in first_npu and npu_ip.get(peer):
            targets.setdefault(source, []).append({"npu": first_npu[source], "address": npu_ip[peer], "peer": peer})
    return targets


def ping_rows(pings_by_host: Mapping[str, t.Any]) -> tuple[list[dict[str, str]], list[str]]:
    """A row per failed ping, and the matrix lines (source -> peer: ok / unreachable)."""
    rows: list[dict[str, str]] = []
    matrix: list[str] = []
    for host, pings in sorted(pings_by_host.items()):
        for ping in pings or []:
            matrix.append("%s NPU %d -> %s (%s): %s" % (host, ping["npu"], ping["peer"], ping["address"], "ok" if ping["ok"] else "UNREACHABLE"))
            if not ping["ok"]:
                rows.append(row(host, "fabric", "NPU %d cannot reach %s of %s" % (ping["npu"], ping["address"], ping["peer"]),
                                "every planned peer NPU reachable", "check the NPU network between the nodes (hccn_tool -i %d "
                                "-ping -g address %s; routes in /etc/hccn.conf, switch VLANs)" % (ping["npu"], ping["address"])))
    return rows, matrix
