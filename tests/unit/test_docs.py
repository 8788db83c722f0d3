# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Each fact of the documentation has one home, and the documented choices are the planner's own."""

from __future__ import annotations

import importlib
import pathlib
import re

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.plan import _plan_model as model
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_host as preflight_host

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODULES = sorted((ROOT / "plugins" / "modules").glob("*.py"))


def _options(role, entry="main"):
    return yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"][entry]["options"]


def _doc(path):
    return yaml.safe_load(re.search(r'DOCUMENTATION = r"""(.*?)"""', path.read_text(), re.S).group(1))


@pytest.mark.parametrize("defaults", sorted(ROOT.glob("roles/*/defaults/main.yml")), ids=lambda p: p.parts[-3])
def test_role_defaults_hold_values_only_their_docs_live_in_the_argument_specs(defaults):
    comments = [line for line in defaults.read_text().splitlines() if line.lstrip().startswith("#")]
    assert comments == ["# Each variable is documented once, in meta/argument_specs.yml (ansible-doc -t role llmops.inference.%s)."
                        % defaults.parts[-3]]


def test_the_documented_choices_are_the_planners_constants():
    hardware, connectors, roles = sorted(model.HARDWARE), sorted(model.CONNECTORS), sorted(model.ROLES)
    assert sorted(_options("vllm_engine", "plan")["vllm_engine_hardware"]["choices"]) == hardware
    assert sorted(_options("ascend_driver")["ascend_driver_hardware"]["choices"]) == hardware
    assert sorted(_options("vllm_engine", "plan")["vllm_engine_connector"]["choices"]) == connectors
    assert sorted(_options("vllm_engine", "node")["vllm_engine_role"]["choices"]) == roles
    assert sorted(_options("cluster")["llmops_kv_pool_backend"]["choices"]) == sorted(("none",) + model.POOL_BACKENDS)
    cluster = " ".join(_doc(ROOT / "plugins" / "modules" / "engine_plan.py")["options"]["cluster"]["description"])
    assert "C(hardware) (%s)" % ", ".join(model.HARDWARE) in cluster
    assert "C(connector) (%s)" % ", ".join(model.CONNECTORS) in cluster
    # the overrides an instance may set, as the module and the inventory variable document them
    assert "overrides - %s)" % ", ".join(model.INSTANCE_KEYS) in cluster
    instances = " ".join(_options("vllm_engine", "plan")["vllm_engine_instances"]["description"])
    assert "Overrides (all optional): %s and image" % ", ".join(model.INSTANCE_KEYS[:-1]) in instances


def test_every_driver_profile_is_made_for_a_hardware_kind_of_the_planner():
    profiles = yaml.safe_load((ROOT / "roles" / "ascend_driver" / "defaults" / "main.yml").read_text())["ascend_driver_profiles"]
    assert {profile["hardware"] for profile in profiles.values()} == set(model.HARDWARE)
    # their NPUs come from the hardware table (llmops.inference.driver_container), so no profile lists one
    assert not [d for profile in profiles.values() for d in profile["devices"] if re.fullmatch(r"/dev/davinci\d+", d)]


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_every_module_takes_its_attributes_from_the_shared_fragment(module):
    doc = _doc(module)
    assert "llmops.inference.attributes" in doc["extends_documentation_fragment"]
    assert all("description" not in attribute for attribute in (doc.get("attributes") or {}).values())


def test_every_filter_is_documented():
    names = set()
    for path in sorted((ROOT / "plugins" / "filter").glob("*.py")):
        module = importlib.import_module("ansible_collections.llmops.inference.plugins.filter.%s" % path.stem)
        names |= set(module.FilterModule().filters())
    documented = {p.stem for p in (ROOT / "plugins" / "filter").glob("*.yml")}
    assert {"inventory_problems", "cluster_view", "launch_rollout", "preflight_report"} <= names
    assert names - documented - {"inventory_problems"} == set()  # inventory_problems.py holds its own DOCUMENTATION
    assert "DOCUMENTATION" in (ROOT / "plugins" / "filter" / "inventory_problems.py").read_text()


def test_a_switch_a_playbook_defaults_in_place_has_the_default_its_argument_spec_documents():
    """The llmops_* switches are -e extra vars, so the playbooks default them where they read them: each such
    default is the documented one; where the playbook passes none, the Python that reads it holds the default."""
    specs = _options("cluster")
    held_in_python = {"llmops_preflight_docker_min": preflight_host.DOCKER_MIN}
    seen = {}
    for path in sorted(ROOT.glob("playbooks/**/*.yml")) + sorted(ROOT.glob("roles/*/tasks/*.yml")):
        for name, value in re.findall(r"\b(llmops_[a-z]\w*) \| default\(([^)]*)\)", path.read_text()):
            seen.setdefault(name, set()).add(value)
    assert seen, "no in-place default found: the pattern no longer matches the playbooks"
    for name, values in seen.items():
        for value in values:
            written = None if value == "none" else yaml.safe_load(value)  # Jinja spells null none
            if name == "llmops_cluster":
                assert written == "llmops_cluster_is_not_set"  # a host pattern that matches nothing
            elif "default" in specs[name]:
                assert held_in_python.get(name, written) == specs[name]["default"], (name, value)
            else:
                assert written in ("", None), (name, value)  # unset means off


def test_the_firewall_rules_directory_the_role_documents_is_the_planners():
    from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall

    defaults = yaml.safe_load((ROOT / "roles" / "host_firewall" / "defaults" / "main.yml").read_text())
    assert defaults["host_firewall_rules_dir"] == _options("host_firewall", "describe")["host_firewall_rules_dir"]["default"]
    assert defaults["host_firewall_rules_dir"] == firewall.RULES_DIR
    assert firewall.rules_file("llmops_pd_a2", "/srv/fw/") == "/srv/fw/llmops_pd_a2.nft"
    assert firewall.rules_file("llmops_pd_a2") == firewall.RULES_DIR + "/llmops_pd_a2.nft"


def test_the_dp_group_defaults_documented_are_the_planners():
    groups = " ".join(_options("vllm_engine", "plan")["vllm_engine_groups"]["description"])
    for key, value in model.GROUP_DEFAULTS.items():
        shown = str(value).lower() if isinstance(value, bool) else str(value)
        assert re.search(r"%s \([^)]*default %s[):]" % (re.escape(key), re.escape(shown)), groups), key
    for key, value in model.HCCL_RANGE_DEFAULTS.items():
        assert "%s int default %s" % (key, value) in groups
