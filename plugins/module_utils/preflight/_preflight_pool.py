# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight of HA Mooncake masters: every host reaches their etcd, etcd has a quorum, and what a
failover keeps with the installed Mooncake (a warning: without an oplog the pool's blocks are lost, not the pool)."""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_rows import row


def pool_ha_checks(facts_by_host: dict[str, t.Any], specs: list[LaunchSpec]) -> tuple[list[dict[str, str]], list[str]]:
    """(problem rows, warnings) of the cluster's HA masters; nothing without them.

    An etcd the operator runs must answer every host now, with a quorum. Members the collection deploys are not up
    before the first deploy, and the deploy restarts dead ones: they are only reported (a warning) once one runs."""
    masters = [found for spec in specs if (found := spec_meta.ha(spec)) and found.get("service") == "mooncake_master"]
    if not masters:
        return [], []
    ha = masters[0]
    endpoints, deployed = ha.get("etcd") or [], ha.get("etcd_deployed")
    warnings = []
    if not ha.get("oplog"):
        warnings.append("mooncake_master_version %s keeps no oplog (--enable_oplog, from 0.3.12): after a failover the new "
                        "leader has none of the pool's metadata, so the blocks stored before it are not found again (the "
                        "engines keep serving and store anew; prefix hits from the pool start from zero)" % ha.get("version"))
    rows, healthy = [], set()
    for host in sorted(facts_by_host):
        seen = ((facts_by_host[host] or {}).get("facts") or {}).get("etcd")
        if seen is None:
            continue
        healthy |= {endpoint for endpoint, state in seen.items() if state.get("healthy")}
        if deployed:
            continue
        for endpoint in endpoints:
            if not (seen.get(endpoint) or {}).get("reachable"):
                rows.append(row(host, "etcd", "%s does not answer" % endpoint, "every host reaches the masters' etcd",
                                "start that etcd member or open its client port to this host (mooncake_master_ha.etcd_endpoints)"))
    if deployed:
        # the deploy that follows restarts the dead members: told, not refused
        if healthy and len(healthy) < len(endpoints):
            warnings.append("etcd: %d of %d members healthy (%s not); this deploy restarts the dead ones"
                            % (len(healthy), len(endpoints), ", ".join(sorted(set(endpoints) - healthy))))
    elif endpoints and len(healthy) <= len(endpoints) // 2:
        rows.append(row("-", "etcd quorum", "%d of %d members healthy" % (len(healthy), len(endpoints)),
                        "more than half healthy (%d)" % (len(endpoints) // 2 + 1),
                        "bring your etcd's members back before the masters elect a leader in it"))
    return rows, warnings
