# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that check an inventory before anything is planned."""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: cluster_setting_conflicts
short_description: Cluster-wide settings that differ between the hosts of a cluster
version_added: 0.2.0
description:
  - The plan is composed once, from the first host's view of the cluster-wide settings. A
    collection variable (C(vllm_engine_*), C(ucm_cache_*), C(memcache_pool_*), C(mooncake_master_*),
    C(pd_proxy_*), C(ascend_driver_*), C(container_launch_*), C(llmops_*)) that the inventory sets
    differently on some hosts would be silently ignored there; this lists each one.
  - Only the per-node settings of the C(vllm_engine) role's C(node) entry point may differ per host.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts of the cluster.
    type: list
    elements: str
    required: true
"""

EXAMPLES = r"""
- name: Check cluster-wide settings are the same on every host
  ansible.builtin.assert:
    that: hostvars | llmops.inference.cluster_setting_conflicts(groups['pd_a2']) | length == 0
"""

RETURN = r"""
_value:
  description: One message per setting that differs, naming the hosts, the values and the fix.
  type: list
  elements: str
"""

import pathlib

import yaml

PREFIXES = ("vllm_engine_", "ucm_cache_", "memcache_pool_", "mooncake_master_", "pd_proxy_", "ascend_driver_",
            "container_launch_", "llmops_")
# Where the per-node settings are documented: the vllm_engine role's `node` entry point.
NODE_SPEC = pathlib.Path(__file__).resolve().parents[2] / "roles" / "vllm_engine" / "meta" / "argument_specs.yml"
# Facts the playbooks set on each host (different by design).
PER_HOST_FACTS = ("vllm_engine_node",)


def host_level_settings():
    specs = yaml.safe_load(NODE_SPEC.read_text(encoding="utf-8"))["argument_specs"]
    return tuple(specs["node"]["options"])


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def conflicts(settings_by_host, host_level):
    """settings_by_host: {host: {variable: value}} of the collection's variables the inventory sets."""
    problems = []
    names = sorted({name for settings in settings_by_host.values() for name in settings})
    for name in names:
        if name in host_level or name in PER_HOST_FACTS or not name.startswith(PREFIXES):
            continue
        hosts_by_value = {}
        for host, settings in settings_by_host.items():
            key = repr(settings.get(name, "<not set>"))
            hosts_by_value.setdefault(key, (settings.get(name, "<not set>"), []))[1].append(host)
        if len(hosts_by_value) > 1:
            parts = ["%s on %s" % (_show(value), ", ".join(hosts)) for value, hosts in hosts_by_value.values()]
            problems.append("%s differs between hosts (%s). Fix: set it once for the cluster (its group_vars), not per host; "
                            "only these may differ per host: %s." % (name, "; ".join(parts), ", ".join(host_level)))
    return problems


def cluster_setting_conflicts(hostvars, hosts):
    settings = {}
    for host in hosts:
        values = hostvars[host]
        settings[host] = {name: values[name] for name in list(values.keys()) if name.startswith(PREFIXES)}
    return conflicts(settings, host_level_settings())


class FilterModule:
    def filters(self):
        return {"cluster_setting_conflicts": cluster_setting_conflicts}
