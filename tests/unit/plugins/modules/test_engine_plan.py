# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The engine_plan module: returns the plan unchanged in check mode, fails with every problem."""

from __future__ import annotations

import json
import os
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import engine_plan

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position


def _run(capsys, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        engine_plan.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("check_mode", [False, True])
def test_returns_the_plan_without_change(capsys, check_mode):
    code, result = _run(capsys, {"cluster": seeds.pd_a2(), "_ansible_check_mode": check_mode})
    assert code == 0
    assert result["changed"] is False
    assert [e["port"] for e in result["plan"]["proxy"]["decode"]] == [9900, 9901, 9902, 9903] * 2


def test_fails_with_every_problem(capsys):
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["kv_role"] = "kv_producer"
    cluster["groups"]["prefill"]["kv_port"] = 25000
    code, result = _run(capsys, {"cluster": cluster})
    assert code == 1
    assert result["msg"].startswith("The cluster plan breaks 2 rule(s):\n")
    assert len(result["problems"]) == 2


def test_malformed_input_is_a_failure_not_a_traceback(capsys):
    cluster = seeds.pd_a2()
    cluster["groups"]["decode"]["tp_size"] = "two"
    code, result = _run(capsys, {"cluster": cluster})
    assert code == 1
    assert "vllm_engine_groups.decode: tp_size must be int" in result["msg"]
