# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checks of the inventory's variables themselves, before anything is planned."""

from __future__ import annotations

DOCUMENTATION = r"""
---
name: inventory_problems
short_description: The collection's variables a cluster's inventory gets wrong
version_added: 0.1.0
description:
  - "Looks at every variable of the cluster's hosts that looks like the collection's (named after one of its roles,
    C(vllm_engine_*), C(ucm_cache_*), ..., or C(llmops_*)) and returns one message per problem, naming the variable,
    the hosts and the fix. What the collection's own roles and playbooks set on hosts starts with an underscore
    (C(_vllm_engine_plan), C(_llmops_cluster_specs), ...), so it is never taken for an input:"
  - A variable no role or switch of the collection reads (a typo, or a name that sounds right), with
    the closest known name.
  - A removed variable, with what replaced it.
  - A value still holding a placeholder of the vendor guides (C(<YOUR_MODEL_PATH>), C(<PREFILL_NODE0_IP>),
    C(<NETWORK_INTERFACE>)), in the collection's variables or C(ansible_host).
  - A cluster-wide variable set differently on some hosts. The plan is composed once, from the first
    host's view; only the per-node variables of the C(vllm_engine) role's C(node) entry point may differ.
  - The known variables are the options of every role's C(meta/argument_specs.yml), the collection's
    switches (C(llmops_*)) being those of the C(llmops.inference.cluster) role.
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
- name: Check the cluster's variables
  ansible.builtin.assert:
    that: hostvars | llmops.inference.inventory_problems(groups['pd_a2']) | length == 0
"""

RETURN = r"""
_value:
  description: One message per problem, naming the variable, the hosts and the fix.
  type: list
  elements: str
"""

import difflib
import pathlib
import re

import yaml

from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import SECRET_PLACEHOLDER, looks_secret

COLLECTION = pathlib.Path(__file__).resolve().parents[2]
ROLES = COLLECTION / "roles"
# The collection's inputs: each role's variables are prefixed by its name; its switches by llmops_ (role cluster).
PREFIXES = tuple(sorted("%s_" % path.name for path in ROLES.iterdir()
                        if (path / "meta" / "argument_specs.yml").exists() and path.name != "cluster")) + ("llmops_",)
# What the collection's roles and playbooks set on hosts (_<role>_out, _vllm_engine_plan, _llmops_cluster_specs, ...)
# starts with an underscore, which no input does: a later play of the same run never takes it for an inventory variable.

# kubespray's "fail if removed variables are used": old name -> what replaced it.
REMOVED = {
    "vllm_engine_ready_timeout": "container_launch_ready_timeout (seconds to wait for each start wave)",
}


# Names that sound right but are set elsewhere: a part of the unknown name -> where it belongs.
SOUNDS_RIGHT = (
    (("tensor_parallel", "tp_size"), "vllm_engine_groups.<role>.tp_size"),
    (("data_parallel", "dp_size"), "vllm_engine_groups.<role>.dp_size"),
    (("kv_port",), "vllm_engine_groups.<role>.kv_port"),
    (("visible_devices", "devices_list"),
     "nothing: the plan gives each rank its devices (vllm_engine_groups.<role>.tp_size, vllm_engine_local_ranks, "
     "vllm_engine_device_offset)"),
    (("served_model", "max_model_len", "gpu_memory", "max_num_seqs"), "vllm_engine_args (or vllm_engine_role_args) as a vllm serve flag"),
)


# The guides' placeholders: <YOUR_MODEL_PATH>, <PREFILL_NODE0_IP>, <dp_rank>, <port>, ...
PLACEHOLDER = re.compile(r"<[A-Za-z][A-Za-z0-9_]*>")


def _placeholders(value):
    if isinstance(value, str):
        return PLACEHOLDER.findall(value)
    if isinstance(value, dict):
        return [p for key, item in value.items() for p in _placeholders(key) + _placeholders(item)]
    if isinstance(value, (list, tuple)):
        return [p for item in value for p in _placeholders(item)]
    return []


def placeholders_left(settings_by_host):
    """One message per variable whose value still holds a guide placeholder."""
    found = {}
    for host, settings in settings_by_host.items():
        for name, value in settings.items():
            left = _placeholders(value)
            if left:
                found.setdefault((name, tuple(sorted(set(left)))), []).append(host)
    return ["%s still holds the guide's placeholder %s (on %s). Fix: replace it with this cluster's real value."
            % (name, ", ".join(left), ", ".join(hosts)) for (name, left), hosts in sorted(found.items())]


def role_variables():
    """{variable: entry points} over every role's argument specs: the operator's variables, not what an entry point
    reads of another role's output (a name with a leading underscore, which the collection sets)."""
    found = {}
    for spec_file in sorted(ROLES.glob("*/meta/argument_specs.yml")):
        specs = load_yaml(spec_file)["argument_specs"]
        for entry, spec in specs.items():
            for name in spec.get("options") or {}:
                if not name.startswith("_"):
                    found.setdefault(name, []).append("%s:%s" % (spec_file.parents[1].name, entry))
    return found


def host_level_settings():
    spec_file = ROLES / "vllm_engine" / "meta" / "argument_specs.yml"
    specs = load_yaml(spec_file)["argument_specs"]
    return tuple(specs["node"]["options"])


def load_yaml(path):
    """A file of the collection, with libyaml's parser where PyYAML has it (every plan reads about 40)."""
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # nosec: safe loaders only


def _masked(name, value):
    """Secret values never reach a message: the secret variable whole, secret-looking keys of a dict."""
    if name == "vllm_engine_secret_env" or looks_secret(name):
        return SECRET_PLACEHOLDER
    if isinstance(value, dict):
        return {key: _masked(str(key), item) for key, item in value.items()}
    return value


def _show(value):
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def unknown_variables(settings_by_host, known):
    problems = []
    hosts_by_name = {}
    for host, settings in settings_by_host.items():
        for name in settings:
            hosts_by_name.setdefault(name, []).append(host)
    for name, hosts in sorted(hosts_by_name.items()):
        if not name.startswith(PREFIXES) or name in known:
            continue
        where = "set on %s" % ", ".join(hosts)
        if name in REMOVED:
            problems.append("%s was removed (%s). Fix: use %s." % (name, where, REMOVED[name]))
            continue
        belongs = [place for parts, place in SOUNDS_RIGHT if any(part in name for part in parts)]
        close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
        if belongs:
            fix = "set %s instead" % belongs[0]
        elif close:
            fix = "did you mean %s? Otherwise remove it" % close[0]
        else:
            fix = "remove it; the collection's variables are listed by ansible-doc -t role llmops.inference.<role>"
        problems.append("%s is no variable of the collection (%s). Fix: %s." % (name, where, fix))
    return problems


def conflicts(settings_by_host, host_level):
    """settings_by_host: {host: {variable: value}} of the collection's variables the inventory sets."""
    problems = []
    names = sorted({name for settings in settings_by_host.values() for name in settings})
    for name in names:
        if name in host_level or not name.startswith(PREFIXES):
            continue
        hosts_by_value = {}
        for host, settings in settings_by_host.items():
            key = repr(settings.get(name, "<not set>"))
            shown = _masked(name, settings[name]) if name in settings else "<not set>"
            hosts_by_value.setdefault(key, (shown, []))[1].append(host)
        if len(hosts_by_value) > 1:
            parts = ["%s on %s" % (_show(value), ", ".join(hosts)) for value, hosts in hosts_by_value.values()]
            problems.append("%s differs between hosts (%s). Fix: set it once for the cluster (its group_vars), not per host; "
                            "only these may differ per host: %s." % (name, "; ".join(parts), ", ".join(host_level)))
    return problems


def inventory_problems(hostvars, hosts):
    settings = {}
    for host in hosts:
        values = hostvars[host]
        settings[host] = {name: values[name] for name in list(values.keys())
                          if name.startswith(PREFIXES) or name == "ansible_host"}
    known = set(role_variables())
    ours = {host: {k: v for k, v in found.items() if k != "ansible_host"} for host, found in settings.items()}
    return (unknown_variables(ours, known) + placeholders_left(settings)
            + conflicts(ours, host_level_settings()))


class FilterModule:
    def filters(self):
        return {"inventory_problems": inventory_problems}
