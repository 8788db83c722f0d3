# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that compose a cluster's plan into launch specs and each host's share of it (plan_cluster.yml)."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

from ansible_collections.llmops.inference.plugins.module_utils.plan import _cluster_view as cluster_view_of
from ansible_collections.llmops.inference.plugins.module_utils.plan import _driver as driver
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _restart_policy as restart_policy
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.services import _front_door as front_door
from ansible_collections.llmops.inference.plugins.module_utils.services import _metrics_relay as metrics_relay

display = Display()


def engine_launch_specs(plan, engine):
    """Launch specs of every engine process of the plan (secret values masked)."""
    plain = dict(engine.get("env") or {})
    for values in (engine.get("role_env") or {}).values():
        plain.update(values or {})
    stray = sorted(name for name in plain if launch.looks_secret(name) and name not in (engine.get("secret_env") or {}))
    if stray:
        display.warning("cluster %s: %s in vllm_engine_env / vllm_engine_role_env look secret: their values are masked like "
                        "vllm_engine_secret_env's, where they belong (move them there)." % (plan["cluster"], ", ".join(stray)))
    try:
        return launch.engine_specs(plan, engine)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def launch_spec(fields):
    """A launch spec with every contract key, from the fields a role sets."""
    return launch.new_spec(**fields)


def launch_waves(plan):
    """{role, 'pool' or 'proxy': wave}: a KV pool service first, then the engines' waves, the proxy last."""
    return launch.engine_waves(plan)


def launch_wave_numbers(plan):
    """The waves a deployment has, in start order (every host walks through each)."""
    return launch.wave_numbers(plan)


def pd_proxy_front_door(settings, endpoints, sources, cluster):
    """The PD proxy's spec fields for its front door (command, env, secret_env, volumes, files, ready, meta)."""
    try:
        return front_door.proxy_fields(settings, endpoints, sources, cluster)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def launch_plan_table(specs):
    return "\n".join(launch.plan_table(specs))


def plan_address(plan, host):
    """The address the plan gives host (services address each other through it)."""
    for process in plan["processes"]:
        if process["host"] == host:
            return process["address"]
    raise ValueError("host %s runs no engine in cluster %s" % (host, plan["cluster"]))


def inventory_host(value, nodes):
    """The inventory host a service setting names: a host, or the address of one (else unchanged,
    for the planner to refuse with the hosts there are)."""
    hosts = [node["host"] for node in nodes]
    if value in hosts:
        return value
    return next((node["host"] for node in nodes if node["address"] == value), value)


def driver_container(profile, overrides=None, extra_devices=None, extra_volumes=None):
    """An ascend_driver profile as the engine container's devices and mounts (its hardware's NPUs first)."""
    return driver.container(profile, overrides, extra_devices, extra_volumes)


def ucm_storage_meta(config):
    """{storage backend path: posix_capacity_gb} of a UCM config, for the engines' meta."""
    return spec_meta.ucm_storage_of_config(config)


# What makes a cluster have each component role: the inventory's settings the composition passes. The composition
# includes only those this names, only for speed: an absent component's include, argument check and task would be
# rounds of every run (the start path).
COMPONENT_TESTS = {
    "ucm_cache": lambda settings: settings["connector"] == "ucm",
    "mooncake_master": lambda settings: settings["kv_pool"] == "mooncake",
    "memcache_pool": lambda settings: settings["kv_pool"] == "memcache",
    "pd_proxy": lambda settings: "prefill" in (settings["groups"] or {}),
    "host_firewall": lambda settings: bool(settings["firewall"]),
}


def cluster_components(roles, connector="none", kv_pool="none", groups=None, firewall=False):
    """The component roles of ``roles`` the cluster has, in that order: ucm_cache when the engines use UCMConnector,
    mooncake_master or memcache_pool for the KV pool's backend, pd_proxy when it has prefill engines (a PD cluster),
    host_firewall when enabled. A role not known here fails: a new component says here what makes a cluster have it."""
    unknown = [role for role in roles if role not in COMPONENT_TESTS]
    if unknown:
        raise AnsibleFilterError("cluster_components: no rule for component role(s) %s; known: %s"
                                 % (", ".join(unknown), ", ".join(COMPONENT_TESTS)))
    settings = {"connector": connector or "none", "kv_pool": kv_pool or "none", "groups": groups, "firewall": firewall}
    return [role for role in roles if COMPONENT_TESTS[role](settings)]


def component_parts(outputs, key):
    """What the cluster's components gave under one key (planner, service, engine_addon, launch_specs, created_dirs, relay),
    from their outputs (_<role>_out) in the components' order; components without it are left out."""
    return [part[key] for part in outputs or [] if (part or {}).get(key) is not None]


def cluster_specs(component_specs, engine_specs, relays=None, restart_alone=True):
    """Every launch spec of the cluster: the components' that start no later than the first engines (pool services),
    the engines in the plan's order, then the components' that start after them (the proxy), and last the metrics relay
    (``relays``: its settings, from host_firewall), which serves the /metrics of all of them. Each carries its restart
    policy (_restart_policy; none at all unless ``restart_alone``)."""
    first = min((spec["wave"] for spec in engine_specs), default=0)
    ordered = sorted(component_specs, key=lambda spec: spec["wave"])
    specs = [s for s in ordered if s["wave"] <= first] + list(engine_specs) + [s for s in ordered if s["wave"] > first]
    specs += [launch.new_spec(**metrics_relay.spec_fields(relay, specs)) for relay in relays or ()]
    return restart_policy.with_policies(specs, restart_alone)


def cluster_view(specs, hosts, plan, created=(), firewall_rules=None, firewall_dir=None):
    """The composed plan as the later plays read it: the cluster's specs, waves and front door, and each host's share."""
    return cluster_view_of.view(specs, hosts, plan, created or (), firewall_rules, firewall_dir)


class FilterModule:
    def filters(self):
        return {
            "engine_launch_specs": engine_launch_specs,
            "launch_spec": launch_spec,
            "launch_waves": launch_waves,
            "launch_wave_numbers": launch_wave_numbers,
            "pd_proxy_front_door": pd_proxy_front_door,
            "launch_plan_table": launch_plan_table,
            "plan_address": plan_address,
            "inventory_host": inventory_host,
            "driver_container": driver_container,
            "ucm_storage_meta": ucm_storage_meta,
            "cluster_components": cluster_components,
            "component_parts": component_parts,
            "cluster_specs": cluster_specs,
            "cluster_view": cluster_view,
        }
