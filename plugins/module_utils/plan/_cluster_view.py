# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The composed plan as the plays after it read it: the cluster's specs and waves, and each host's share of them (its
specs, what other inventory hosts plan on its machine, what preflight looks at there, its firewall rules), worked out
once on the controller when the plan is composed.

plan_cluster.yml hands this one record to every host of the cluster (and the controller's plays): a task of a host then
reads a fact of its own. Reading the composer's facts through hostvars, and filtering every spec of the cluster again,
cost 2-15 ms of the controller's CPU per reference, per task and host (on the start path).
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec, Plan
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_inputs as preflight_inputs
from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members


def host_share(specs: list[LaunchSpec], host: str, machine_of: dict[str, str], created: Iterable[str] = (),
               firewall_rules: dict[str, t.Any] | None = None) -> dict[str, t.Any]:
    """One host's share: its specs in the cluster's order, the names of the specs other inventory hosts plan on its
    machine (two instances on one server: the look does not count them as extra containers), what preflight's gather
    looks at (paths, NPUs, images) and its firewall rules (None when the firewall is off)."""
    mine = [spec for spec in specs if spec["host"] == host]
    machine = machine_of.get(host, host)
    gather = preflight_inputs.gather_inputs(mine, created)
    return {
        "specs": mine,
        "neighbours": [spec["name"] for spec in specs
                       if spec["host"] != host and machine_of.get(spec["host"], spec["host"]) == machine],
        "paths": gather["paths"],
        "npus": gather["npus"],
        "images": list(dict.fromkeys(spec["image"] for spec in mine)),
        "firewall": (firewall_rules or {}).get(host),
    }


def view(specs: list[LaunchSpec], hosts: list[str], plan: Plan, created: Iterable[str] = (), firewall_rules: dict[str, t.Any] | None = None,
         firewall_dir: str | None = None) -> dict[str, t.Any]:
    """{cluster, specs, waves, machines, created_dirs, firewall_table, firewall_file, firewall_rules (by host), front_door, etcd,
    hosts: {host: share}} of a composed plan; every inventory host of the cluster has a share (empty when the plan gives
    it nothing)."""
    machines = plan.get("machines") or {}
    machine_of = {host: machines.get(host) or host for host in hosts}
    for spec in specs:
        machine_of.setdefault(spec["host"], machines.get(spec["host"]) or spec["host"])
    table = firewall.table_name(plan["cluster"])
    return {
        "cluster": plan["cluster"],
        "specs": list(specs),
        "waves": launch.wave_numbers(plan),
        "machines": machines,
        "created_dirs": list(created),
        "firewall_table": table,
        # the rules file preflight looks for and the host firewall writes (or removes, the firewall being off)
        "firewall_file": firewall.rules_file(table, firewall_dir),
        "firewall_rules": dict(firewall_rules or {}),
        "front_door": members.door_of(specs),
        # every host of the cluster reaches the etcd of HA masters (their specs name it)
        "etcd": preflight_inputs.etcd_endpoints(specs),
        "hosts": {host: host_share(specs, host, machine_of, created, firewall_rules) for host in hosts},
    }
