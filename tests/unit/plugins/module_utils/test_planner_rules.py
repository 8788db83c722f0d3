# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner's input: malformed or unknown keys refused with the closest known one, and every problem of a
cluster reported at once. The rules themselves: test_rules_topology, _ports, _kv, _ucm (one test per rule)."""

from __future__ import annotations

import pytest
import seed_clusters as seeds
from rule_cases import node, problems_of

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import InputError
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def test_every_problem_is_reported_at_once():
    cluster = seeds.pd_pool_a2()
    cluster["groups"]["decode"]["kv_role"] = "kv_both"
    node(cluster, "pd_a2_p1")["pythonhashseed"] = "7"
    cluster["pool"]["segment_sizes"]["prefill"] = "8.5GB"
    assert len(problems_of(cluster)) == 3


@pytest.mark.parametrize("mutate,text", [
    (lambda c: c["groups"]["decode"].update(dp_size="8"), "vllm_engine_groups.decode: dp_size must be int"),
    (lambda c: c["groups"]["decode"].update(launch="per_pod"), "launch must be one of per_rank, per_node"),
    (lambda c: c.update(hardware="a1"), "vllm_engine_hardware must be one of a2, a3, a5, h100"),
    (lambda c: c["nodes"][0].update(headless="no"), "host pd_a2_p0: headless must be bool"),
    (lambda c: c["groups"]["prefill"].update(api_port=True), "api_port must be int, got True"),
])
def test_malformed_input(mutate, text):
    cluster = seeds.pd_a2()
    mutate(cluster)
    with pytest.raises(InputError, match=None) as err:
        plan_cluster(cluster)
    assert text in str(err.value)


def test_unknown_keys_are_named_with_the_closest_known_one_all_at_once():
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["tp_szie"] = 2
    cluster["groups"]["decode"]["hccl_port_range"]["strid"] = 10
    cluster["groups"]["decoder"] = {"dp_size": 1, "tp_size": 1}
    cluster["mooncake_extra_config"]["use_ascend_drect"] = True
    cluster["mooncake_extra_config"]["a_newer_connector_option"] = 1  # open schema: not a misspelling, kept
    with pytest.raises(PlanError) as err:
        plan_cluster(cluster)
    lines = str(err.value).splitlines()
    assert any(line.startswith("cluster pd_a2: vllm_engine_groups.decode.tp_szie: unknown key (known: dp_size, tp_size,")
               and line.endswith("Fix: rename it to tp_size.") for line in lines)
    assert any(line.startswith("cluster pd_a2: vllm_engine_groups.decode.hccl_port_range.strid: unknown key (known: base, "
                               "stride, size). Fix: rename it to stride.") for line in lines)
    assert any(line.startswith("cluster pd_a2: vllm_engine_groups.decoder: unknown key (known: prefill, decode, colocated). "
                               "Fix: rename it to decode.") for line in lines)
    assert any("vllm_engine_mooncake_extra_config.use_ascend_drect" in line and line.endswith("rename it to use_ascend_direct.")
               for line in lines)
    assert not any("a_newer_connector_option" in line for line in lines)
