# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-wide settings must not differ between hosts; per-node settings may."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.filter import cluster_setting_conflicts as inventory


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
    settings = {"a": {"vllm_engine_rank_start": 0, "vllm_engine_node": {"host": "a"}, "other_tool_x": 1},
                "b": {"vllm_engine_rank_start": 4, "vllm_engine_node": {"host": "b"}, "other_tool_x": 2}}
    assert inventory.conflicts(settings, inventory.host_level_settings()) == []
