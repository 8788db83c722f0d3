# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: every host's facts (node_facts) against what that host's part of the plan needs.

Pure functions, run on the controller: the inputs (_preflight_inputs), one host's checks (_preflight_host),
the fabric across hosts (_preflight_fabric), as problem rows and a table (_preflight_rows)."""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec, Plan
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_fabric import fabric_applies, ping_rows, tls_rows
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_host import check_host
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_inputs import pull_outcomes
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_pool import pool_ha_checks
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_rows import row, table


def facts_of(looks_by_host: dict[str, t.Any], gathered_by_host: dict[str, t.Any]) -> dict[str, dict[str, t.Any]]:
    """Each host's facts as node_facts returns them ({"facts": ...}), or what failed: those deploy's look gathered in its
    one call to the host (a host with a container to start), else the result of preflight's own gather, else no
    answer."""
    found: dict[str, dict[str, t.Any]] = {}
    for host in set(looks_by_host) | set(gathered_by_host):
        look, gathered = looks_by_host.get(host) or {}, gathered_by_host.get(host) or {}
        if isinstance(look.get("preflight"), dict):
            found[host] = {"facts": look["preflight"]}
        elif gathered and not gathered.get("skipped"):
            found[host] = gathered
        else:
            found[host] = {"unreachable": True}
    return found


def preflight(facts_by_host: dict[str, t.Any], specs: list[LaunchSpec], plan: Plan, nodes: list[dict[str, t.Any]],
              pulls_by_host: dict[str, t.Any] | None = None, options: dict[str, t.Any] | None = None,
              pings_by_host: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
    """{"rows": problem rows of every host, "table": printable, "summary": lines, "matrix": ping lines, "warnings": what
    the operator should know but need not fix (what a failover of HA masters keeps)}."""
    rows, lines = [], []
    options = dict(options or {}, fabric=fabric_applies(plan, specs))
    by_host: dict[str, list[LaunchSpec]] = {}
    for spec in specs:
        by_host.setdefault(spec["host"], []).append(spec)
    node_by_host = {node["host"]: node for node in nodes}
    for host in sorted(set(by_host) | set(facts_by_host)):
        result = facts_by_host.get(host) or {}
        if result.get("unreachable") or result.get("failed") or "facts" not in result:
            rows.append(row(host, "reachable", (result.get("msg") or "no answer").splitlines()[0], "an answering host",
                            "check SSH access and that Python 3 runs on it"))
            continue
        host_rows, line = check_host(host, result["facts"], by_host.get(host, []), plan, node_by_host.get(host),
                                     pull_outcomes((pulls_by_host or {}).get(host)), options)
        rows += host_rows
        lines.append(line)
    matrix: list[str] = []
    if options["fabric"]:
        rows += tls_rows(facts_by_host, specs)
        ping_problems, matrix = ping_rows(pings_by_host or {})
        rows += ping_problems
    pool_rows, warnings = pool_ha_checks(facts_by_host, specs)
    rows += pool_rows
    return {"rows": rows, "table": table(rows), "summary": lines, "matrix": matrix, "warnings": warnings}
