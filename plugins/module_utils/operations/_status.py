# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One table of a running cluster: what runs where, ready or not, and how it drifted from the plan."""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils._text import aligned
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

COLUMNS = ("HOST", "CONTAINER", "ROLE", "INSTANCE", "DP RANKS", "STATE", "READY", "STATUS", "RESTARTS", "IMAGE", "DRIFT",
           "DOOR")


def cluster_status(states_by_host: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> dict[str, t.Any]:
    """Rows, a printable table and the list of problems ("degraded") of a cluster.

    ``states_by_host``: {host: container_state's result with details, or {"unreachable": True, "msg": ...}}.
    """
    rows: list[dict[str, str]] = []
    degraded: list[str] = []
    ha_seen: list[tuple[str, str, str]] = []
    door = door_view(states_by_host, specs)
    by_host: dict[str, list[LaunchSpec]] = {}
    for spec in specs:
        by_host.setdefault(spec["host"], []).append(spec)
    for host in sorted(set(by_host) | set(states_by_host)):
        state = states_by_host.get(host) or {}
        if state.get("unreachable") or state.get("failed") or "status" not in state:
            why = (state.get("msg") or "no answer").splitlines()[0]
            degraded.append("host %s could not be looked at: %s" % (host, why))
            for spec in by_host.get(host, []):
                ha_seen += ha_of(spec, {}, host)
                rows.append(dict(host=host, container=spec["name"], role=role_of(spec, {}), instance=instance_of(spec),
                                 dp_ranks=spec_meta.dp_ranks(spec),
                                 state="unknown", ready="-", status="-", restarts="-", image=spec["image"], drift="unknown"))
            continue
        containers = state.get("containers") or {}
        for spec in by_host.get(host, []):
            name = spec["name"]
            seen = containers.get(name, {})
            drift = state["status"].get(name, "missing")
            ha_seen += ha_of(spec, seen, host)
            row = dict(host=host, container=name, role=role_of(spec, seen), instance=instance_of(spec),
                       dp_ranks=spec_meta.dp_ranks(spec),
                       state=seen.get("state", "missing"), ready="yes" if seen.get("ready") else "no",
                       status=seen.get("status", "-"), restarts=str(seen.get("restart_count", "-")),
                       image=seen.get("image", spec["image"]), drift=drift)
            member = (spec_meta.front_door(spec) or ("", ""))[1]
            row["door"] = door.get(member, "-") if member and door is not None else "-"
            rows.append(row)
            if drift != "ok" or row["ready"] != "yes":
                degraded.append("%s on %s is %s%s" % (name, host, row["state"], "" if drift == "ok" else " (%s)" % drift)
                                if row["state"] != "running" or drift != "ok" else "%s on %s is running but not ready" % (name, host))
            elif row["door"] not in ("serving", "-"):  # it runs and answers, yet takes no request
                degraded.append("%s on %s: the front door has its member %s %s" % (name, host, member, row["door"]))
        for name in state.get("extra") or []:
            seen = containers.get(name, {})
            rows.append(dict(host=host, container=name, role="-", instance="-", dp_ranks="", state=seen.get("state", "?"), ready="-",
                             status=seen.get("status", "-"), restarts=str(seen.get("restart_count", "-")),
                             image=seen.get("image", "-"), drift="extra"))
            degraded.append("%s on %s belongs to the cluster but to no spec of the plan (teardown removes it)" % (name, host))
    degraded += ha_problems(ha_seen)
    return {"rows": rows, "table": "\n".join(table(rows)), "degraded": degraded}


def door_view(states_by_host: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> dict[str, str] | None:
    """{member: state} the front door's look read from its /metrics (failover on), else None."""
    for spec in specs:
        if spec_meta.kind(spec) == "proxy":
            seen = ((states_by_host.get(spec["host"]) or {}).get("containers") or {}).get(spec["name"]) or {}
            door: dict[str, str] | None = seen.get("front_door")
            return door
    return None


HA_NAMES = {"mooncake_master": "master", "etcd": "etcd"}


def role_of(spec: LaunchSpec, seen: Mapping[str, t.Any]) -> str:
    """An engine's role; a service in HA says what it is now (master leader / standby, etcd leader / follower, or
    down); any other service: service."""
    ha = spec_meta.ha(spec)
    if ha:
        service = str(ha.get("service"))
        return "%s %s" % (HA_NAMES.get(service, service), seen.get("ha_role") or "down")
    return spec_meta.role(spec)


def ha_of(spec: LaunchSpec, seen: Mapping[str, t.Any], host: str) -> list[tuple[str, str, str]]:
    """[(service, its role now, "container on host")] of a service in HA, [] for anything else."""
    ha = spec_meta.ha(spec)
    return [(str(ha.get("service")), seen.get("ha_role") or "down", "%s on %s" % (spec["name"], host))] if ha else []


def ha_problems(ha_seen: Iterable[tuple[str, str, str]]) -> list[str]:
    """Mooncake masters in HA with no leader serving, or no standby to take over; etcd without a quorum."""
    roles: dict[str, list[tuple[str, str]]] = {}
    for service, role, where in ha_seen:
        roles.setdefault(service, []).append((role, where))
    problems = []
    masters = roles.get("mooncake_master") or []
    if masters and not any(role == "leader" for role, _where in masters):
        problems.append("no Mooncake master leads and serves (%s): the KV pool is down" % ", ".join(
            "%s %s" % (where, role) for role, where in masters))
    elif masters and not any(role == "standby" for role, _where in masters):
        problems.append("no standby Mooncake master (%s): a failure of the leader would stop the KV pool" % ", ".join(
            "%s %s" % (where, role) for role, where in masters))
    members = roles.get("etcd") or []
    up = [where for role, where in members if role != "down"]
    if members and len(up) <= len(members) // 2:
        problems.append("etcd has no quorum: %d of %d members answer" % (len(up), len(members)))
    elif members and len(up) < len(members):
        problems.append("etcd member down: %s (%d of %d answer; one more loss stops the masters' election)"
                        % (", ".join(where for role, where in members if role == "down"), len(up), len(members)))
    return problems


def instance_of(spec: LaunchSpec) -> str:
    """The engine's instance (its DP group by name), "-" for a service."""
    return spec_meta.instance(spec) or "-"


def table(rows: Iterable[Mapping[str, str]]) -> list[str]:
    keys = [c.lower().replace(" ", "_") for c in COLUMNS]
    return aligned(COLUMNS, [[row.get(k, "-") if row.get(k, "-") != "" else "-" for k in keys] for row in rows])
