# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of preflight: what it gathers on each host, the facts it reads and its report."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.preflight import _npu as npu
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight as preflight
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_fabric as preflight_fabric
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_inputs as preflight_inputs


def held_devices(facts_by_host, specs):
    """Problems: planned NPUs some process still holds (node_facts results by host)."""
    return npu.held_devices(facts_by_host, specs)


def preflight_gather(specs, created=()):
    """What node_facts looks at for a host's specs: paths (devices, mount sources, model directories) and NPUs."""
    return preflight_inputs.gather_inputs(specs, created or ())


def preflight_facts(looks_by_host, gathered_by_host):
    """{host: node_facts result}: what deploy's look gathered where it did, else what preflight's gather returned."""
    return preflight.facts_of(looks_by_host, gathered_by_host)


def preflight_pings(facts_by_host, specs):
    """{host: pings to send}: prefill nodes to decode nodes, and between the nodes of one DP group."""
    return preflight_fabric.ping_targets(facts_by_host, specs)


def preflight_report(facts_by_host, specs, plan, nodes, pulls_by_host=None, options=None, pings_by_host=None):
    """Preflight rows, table, per-host summary and ping matrix of a cluster (node_facts results by host)."""
    return preflight.preflight(facts_by_host, specs, plan, nodes, pulls_by_host, options, pings_by_host)


def paths_outside_mounts(paths, volumes):
    """The paths that lie under no container-side directory of the volumes (src:dst[:mode])."""
    targets = [volume.split(":")[1].rstrip("/") or "/" for volume in volumes if ":" in volume]

    def mounted(path):
        return any(path == target or path.startswith(target.rstrip("/") + "/") for target in targets)

    return [path for path in paths if path and not mounted(path.rstrip("/"))]


class FilterModule:
    def filters(self):
        return {
            "held_devices": held_devices,
            "preflight_gather": preflight_gather,
            "preflight_facts": preflight_facts,
            "preflight_pings": preflight_pings,
            "preflight_report": preflight_report,
            "paths_outside_mounts": paths_outside_mounts,
        }
