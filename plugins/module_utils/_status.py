# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One table of a running cluster: what runs where, ready or not, and how it drifted from the plan."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils._text import aligned

COLUMNS = ("HOST", "CONTAINER", "ROLE", "INSTANCE", "DP RANKS", "STATE", "READY", "STATUS", "RESTARTS", "IMAGE", "DRIFT")


def cluster_status(states_by_host, specs):
    """Rows, a printable table and the list of problems ("degraded") of a cluster.

    ``states_by_host``: {host: container_state's result with details, or {"unreachable": True, "msg": ...}}.
    """
    rows, degraded = [], []
    by_host = {}
    for spec in specs:
        by_host.setdefault(spec["host"], []).append(spec)
    for host in sorted(set(by_host) | set(states_by_host)):
        state = states_by_host.get(host) or {}
        if state.get("unreachable") or state.get("failed") or "status" not in state:
            why = (state.get("msg") or "no answer").splitlines()[0]
            degraded.append("host %s could not be looked at: %s" % (host, why))
            for spec in by_host.get(host, []):
                rows.append(dict(host=host, container=spec["name"], role=spec_meta.role(spec), instance=instance_of(spec),
                                 dp_ranks=spec_meta.dp_ranks(spec),
                                 state="unknown", ready="-", status="-", restarts="-", image=spec["image"], drift="unknown"))
            continue
        containers = state.get("containers") or {}
        for spec in by_host.get(host, []):
            name = spec["name"]
            seen = containers.get(name, {})
            drift = state["status"].get(name, "missing")
            row = dict(host=host, container=name, role=spec_meta.role(spec), instance=instance_of(spec),
                       dp_ranks=spec_meta.dp_ranks(spec),
                       state=seen.get("state", "missing"), ready="yes" if seen.get("ready") else "no",
                       status=seen.get("status", "-"), restarts=str(seen.get("restart_count", "-")),
                       image=seen.get("image", spec["image"]), drift=drift)
            rows.append(row)
            if drift != "ok" or row["ready"] != "yes":
                degraded.append("%s on %s is %s%s" % (name, host, row["state"], "" if drift == "ok" else " (%s)" % drift)
                                if row["state"] != "running" or drift != "ok" else "%s on %s is running but not ready" % (name, host))
        for name in state.get("extra") or []:
            seen = containers.get(name, {})
            rows.append(dict(host=host, container=name, role="-", instance="-", dp_ranks="", state=seen.get("state", "?"), ready="-",
                             status=seen.get("status", "-"), restarts=str(seen.get("restart_count", "-")),
                             image=seen.get("image", "-"), drift="extra"))
            degraded.append("%s on %s belongs to the cluster but to no spec of the plan (teardown removes it)" % (name, host))
    return {"rows": rows, "table": "\n".join(table(rows)), "degraded": degraded}


def instance_of(spec):
    """The engine's instance (its DP group by name), "-" for a service."""
    return spec_meta.instance(spec) or "-"


def table(rows):
    keys = [c.lower().replace(" ", "_") for c in COLUMNS]
    return aligned(COLUMNS, [[row[k] if row[k] != "" else "-" for k in keys] for row in rows])
