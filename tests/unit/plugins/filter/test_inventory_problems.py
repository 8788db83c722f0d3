# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-wide settings must not differ between hosts; per-node settings may."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.filter import inventory_problems as inventory


def test_per_node_settings_come_from_the_node_entry_point():
    host_level = inventory.host_level_settings()
    assert "vllm_engine_role" in host_level and "vllm_engine_nic" in host_level
    assert "vllm_engine_image" not in host_level


def test_a_cluster_setting_set_on_one_host_only_is_named_with_hosts_and_values():
    settings = {
        "p0": {"vllm_engine_image": "img:1", "vllm_engine_role": "prefill", "ansible_host": "a"},
        "p1": {"vllm_engine_image": "img:1", "vllm_engine_role": "prefill"},
        "d0": {"vllm_engine_image": "img:2", "vllm_engine_role": "decode", "mooncake_master_tenant_id": "t"},
    }
    problems = inventory.conflicts(settings, inventory.host_level_settings())
    assert len(problems) == 2
    assert problems[0].startswith("mooncake_master_tenant_id differs between hosts ('<not set>' on p0, p1; 't' on d0)")
    assert problems[1].startswith("vllm_engine_image differs between hosts ('img:1' on p0, p1; 'img:2' on d0). Fix: set it once")
    assert "only these may differ per host: vllm_engine_role" in problems[1]


def test_per_node_settings_and_facts_may_differ():
    hostvars = {"a": {"vllm_engine_rank_start": 0, "_vllm_engine_node": {"host": "a"}, "other_tool_x": 1},
                "b": {"vllm_engine_rank_start": 4, "_vllm_engine_node": {"host": "b"}, "other_tool_x": 2}}
    assert inventory.inventory_problems(hostvars, ["a", "b"]) == []


def _names_set(node):
    """Every fact name a task file sets (set_fact keys, register)."""
    names = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("ansible.builtin.set_fact", "set_fact") and isinstance(value, dict):
                names.update(name for name in value if name != "cacheable")
            elif key == "register" and isinstance(value, str):
                names.add(value)
            else:
                names |= _names_set(value)
    elif isinstance(node, list):
        for item in node:
            names |= _names_set(item)
    return names


def test_what_the_collection_sets_on_hosts_is_in_a_namespace_no_input_uses():
    """A run of two playbooks: the second plan finds what the first set (set_fact, register) in hostvars. Every such
    name starts with an underscore (an output _<role>_*, _llmops_*, or private __*), so none can be taken for, or
    hide, an inventory variable."""
    files = sorted(inventory.ROLES.glob("*/tasks/*.yml")) + sorted((inventory.COLLECTION / "playbooks").glob("**/*.yml"))
    names = set().union(*(_names_set(inventory.load_yaml(path)) for path in files))
    assert {"_pd_proxy_out", "_vllm_engine_plan", "_llmops_cluster_specs", "_vllm_engine_node", "_llmops_verify"} <= names
    assert [name for name in names if not name.startswith("_")] == []
    assert not names & set(inventory.role_variables())
    hostvars = {"p0": {"vllm_engine_image": "img", "_vllm_engine_plan": {"cluster": "c"}, "_llmops_cluster_specs": [],
                       "vllm_engine_imgae": "typo"},
                "d0": {"vllm_engine_image": "img"}}
    problems = inventory.inventory_problems(hostvars, ["p0", "d0"])
    assert len(problems) == 2 and all(problem.startswith("vllm_engine_imgae ") for problem in problems), problems


def test_the_checked_prefixes_are_the_roles_names():
    roles = sorted(p.name for p in inventory.ROLES.iterdir() if p.name != "cluster")
    assert tuple("%s_" % name for name in roles) + ("llmops_",) == inventory.PREFIXES


def test_unknown_variables_are_named_with_the_closest_known_one():
    known = set(inventory.role_variables())
    settings = {"p0": {"vllm_engine_tensor_parallel_size": 8, "vllm_engine_imgae": "x", "vllm_engine_image": "y"},
                "d0": {"vllm_engine_tensor_parallel_size": 8, "llmops_plan_dir": "/tmp/p", "zz_other": 1,
                       "mooncake_master_tenant": "t", "pd_proxy_whatever_else": 1}}
    assert inventory.unknown_variables(settings, known) == [
        "mooncake_master_tenant is no variable of the collection (set on d0). Fix: did you mean mooncake_master_tenant_id? "
        "Otherwise remove it.",
        "pd_proxy_whatever_else is no variable of the collection (set on d0). Fix: remove it; the collection's variables are "
        "listed by ansible-doc -t role llmops.inference.<role>.",
        "vllm_engine_imgae is no variable of the collection (set on p0). Fix: did you mean vllm_engine_image? Otherwise remove it.",
        "vllm_engine_tensor_parallel_size is no variable of the collection (set on p0, d0). Fix: set "
        "vllm_engine_groups.<role>.tp_size instead.",
    ]


def test_removed_variables_say_what_replaced_them():
    (problem,) = inventory.unknown_variables({"p0": {"vllm_engine_ready_timeout": 60}}, set(inventory.role_variables()))
    assert problem == ("vllm_engine_ready_timeout was removed (set on p0). "
                       "Fix: use container_launch_ready_timeout (seconds to wait for each start wave).")


def test_every_role_variable_is_known():
    known = inventory.role_variables()
    assert "container_launch_ready_timeout" in known and "vllm_engine_nic" in known and "mooncake_master_tenant_id" in known
    assert {"llmops_cluster", "llmops_plan_dir", "llmops_purge", "llmops_kv_pool_backend"} <= set(known)  # the cluster role


def test_guide_placeholders_left_in_values_are_named():
    settings = {"p0": {"vllm_engine_model": "/models/<YOUR_MODEL_PATH>", "ansible_host": "<PREFILL_NODE0_IP>",
                       "vllm_engine_env": {"A": ["<NETWORK_INTERFACE>"]}, "vllm_engine_args": {"chat": "<|im_start|>"}},
                "d0": {"vllm_engine_model": "/models/<YOUR_MODEL_PATH>", "ansible_host": "192.0.2.5"}}
    assert inventory.placeholders_left(settings) == [
        "ansible_host still holds the guide's placeholder <PREFILL_NODE0_IP> (on p0). Fix: replace it with this cluster's real value.",
        "vllm_engine_env still holds the guide's placeholder <NETWORK_INTERFACE> (on p0). Fix: replace it with this cluster's real value.",
        "vllm_engine_model still holds the guide's placeholder <YOUR_MODEL_PATH> (on p0, d0). Fix: replace it with this cluster's "
        "real value.",
    ]


def test_differing_secrets_are_named_without_their_values():
    settings = {"p0": {"vllm_engine_secret_env": {"HF_TOKEN": "s3cr3t-a"}, "vllm_engine_env": {"MY_API_KEY": "k1", "A": "1"}},
                "d0": {"vllm_engine_secret_env": {"HF_TOKEN": "s3cr3t-b"}, "vllm_engine_env": {"MY_API_KEY": "k2", "A": "1"}}}
    problems = " ".join(inventory.conflicts(settings, inventory.host_level_settings()))
    assert "vllm_engine_secret_env differs between hosts ('<secret>' on p0; '<secret>' on d0)" in problems
    assert "{'MY_API_KEY': '<secret>', 'A': '1'} on p0" in problems
    assert "s3cr3t" not in problems and "k1" not in problems and "k2" not in problems
