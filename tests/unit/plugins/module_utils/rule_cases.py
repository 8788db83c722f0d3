# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Seed clusters broken one way for the planner's rule tests, and how their problems are read."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def node(cluster, host):
    return next(n for n in cluster["nodes"] if n["host"] == host)


def problems_of(cluster):
    with pytest.raises(PlanError) as err:
        plan_cluster(cluster)
    return [str(p) for p in err.value.problems]


def single_problem(cluster):
    problems = problems_of(cluster)
    assert len(problems) == 1, problems
    return problems[0]


def cpu_pd(**groups):
    """A CPU 1P1D over NixlConnector on one machine: prefill DP2 per rank, decode DP1."""
    cluster = {
        "name": "cpu_pd", "hardware": "cpu", "connector": "nixl", "network_env": ["VLLM_HOST_IP"],
        "groups": {"prefill": {"dp_size": 2, "tp_size": 1, "kv_port": 5600, "api_port": 8100},
                   "decode": {"dp_size": 1, "tp_size": 1, "launch": "per_node", "kv_port": 5700, "api_port": 8200}},
        "nodes": [{"host": "box", "address": "192.0.2.90", "role": "prefill", "local_ranks": 2},
                  {"host": "box2", "address": "192.0.2.91", "role": "decode", "local_ranks": 1}],
    }
    for role, values in groups.items():
        cluster["groups"][role].update(values)
    return cluster
