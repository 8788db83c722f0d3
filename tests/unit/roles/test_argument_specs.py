# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role variable is documented in meta/argument_specs.yml, with the default it really has."""

from __future__ import annotations

import pathlib

import pytest
import yaml

ROLES = pathlib.Path(__file__).resolve().parents[3] / "roles"
ROLE_NAMES = sorted(p.name for p in ROLES.iterdir() if (p / "defaults" / "main.yml").exists())
TYPES = {"str": str, "path": str, "int": int, "float": float, "bool": bool, "list": list, "dict": dict}


def _load(role):
    defaults = yaml.safe_load((ROLES / role / "defaults" / "main.yml").read_text()) or {}
    specs = yaml.safe_load((ROLES / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]
    return defaults, specs


def test_every_role_is_checked():
    assert ROLE_NAMES == ["ascend_driver", "container_launch", "heal_rulebook", "host_firewall", "memcache_pool",
                          "mooncake_master", "pd_proxy", "ucm_cache", "vllm_engine"]


# What an entry point reads of another role's output (a fact set before it runs): declared where it is read, never
# defaulted. Its producer: vllm_engine's plan entry point, plan_cluster.yml (the nodes' descriptions), ascend_driver.
INPUTS = {"_vllm_engine_plan", "_llmops_nodes", "_ascend_driver_container"}


def _own(options):
    return [name for name in options if name not in INPUTS]


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_defaults_and_entry_points_list_the_same_variables(role):
    defaults, specs = _load(role)
    documented = [name for spec in specs.values() for name in _own(spec["options"])]
    assert set(documented) == set(defaults)
    primary = (specs.get("main") or specs["describe"])["options"]  # a component role has declare and describe
    assert [name for name in primary if name in defaults] == [name for name in defaults if name in primary]
    for entry, spec in specs.items():
        assert set(_own(spec["options"])) <= set(defaults), entry
        assert all(name.startswith(role + "_") for name in _own(spec["options"]))
        assert all("default" not in spec["options"][name] for name in spec["options"] if name in INPUTS), entry


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_every_input_an_entry_point_reads_is_declared_there(role):
    """A task file that reads another role's output names it in its entry point's options (the file of the same name;
    main.yml's includes count as main's)."""
    _defaults, specs = _load(role)
    for entry, spec in specs.items():
        files = [ROLES / role / "tasks" / ("%s.yml" % entry)]
        others = {name for name in INPUTS if not name.startswith("_%s_" % role)}  # not what the role sets itself
        read = {name for path in files if path.exists() for name in others if name in path.read_text()}
        read |= {name for name in others if entry == "describe" and any(
            name in template.read_text() for template in (ROLES / role / "templates").glob("*.j2"))}
        assert read <= set(spec["options"]), (entry, read - set(spec["options"]))


@pytest.mark.parametrize("role", ROLE_NAMES)
def test_documented_defaults_and_types_are_the_real_ones(role):
    defaults, specs = _load(role)
    for entry, spec in specs.items():
        for name, option in spec["options"].items():
            if name in INPUTS:
                continue
            value = defaults[name]
            assert option["description"] and option["description"] != name, (entry, name)
            if "default" in option:
                assert option["default"] == value, (entry, name)
            templated = isinstance(value, str) and "{{" in value
            if value is not None and not templated:
                assert isinstance(value, TYPES[option["type"]]), (entry, name, option["type"])
            if option["type"] == "list" and option.get("elements", "raw") != "raw":
                assert all(isinstance(item, TYPES[option["elements"]]) for item in value), (entry, name)
            if "choices" in option and value is not None:
                assert value in option["choices"], (entry, name)
