# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rules the seeds state, checked before any host is touched.

``structure_problems`` needs only the description; ``plan_problems`` needs the computed
ranks (ports, ids). Each returns a list of Problem, empty when the cluster is sound. The rules
themselves: topology (_rules_topology), KV connectors and pools (_rules_kv), UCM (_rules_ucm), ports
and ids (_rules_ports).
"""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import BoundPort, Process, Rank
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_kv import connector_problems, pool_problems
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_ports import port_collisions, span, unique
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_topology import (
    node_group_problems,
    rank_problems,
    shared_machine_problems,
    visible_devices_problems,
)
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_ucm import ucm_problems


def structure_problems(cluster: Cluster) -> list[Problem]:
    problems: list[Problem] = []
    problems += node_group_problems(cluster)
    if problems:
        return problems
    problems += rank_problems(cluster)
    problems += shared_machine_problems(cluster)
    problems += connector_problems(cluster)
    problems += pool_problems(cluster)
    problems += ucm_problems(cluster)
    return problems


def plan_problems(cluster: Cluster, ranks: list[Rank], processes: list[Process], entries: list[BoundPort]) -> list[Problem]:
    problems = port_collisions(cluster, entries)
    problems += visible_devices_problems(cluster, processes)
    for host, entry in entries:
        if not 1 <= entry["low"] <= entry["high"] <= 65535:
            problems.append(Problem(cluster.name, entry["variable"], "%s uses port %s outside 1-65535" % (entry["owner"], span(entry)),
                                    "choose a lower base port", host=host))
    engine_ids = [(p["engine_id"], p["instance"], p["dp_ranks"][0], p["host"]) for p in processes]
    problems += unique(cluster, engine_ids, "engine_id", "engine_id_template")
    lookup_ports = [(r["lookup_rpc_port"], r["instance"], r["dp_rank"], r["host"]) for r in ranks]
    problems += unique(cluster, lookup_ports, "lookup_rpc_port", "lookup_rpc_port_base")
    return problems
