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

from ansible_collections.llmops.inference.plugins.module_utils._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils._rules_kv import connector_problems, pool_problems
from ansible_collections.llmops.inference.plugins.module_utils._rules_ports import span, unique, port_collisions
from ansible_collections.llmops.inference.plugins.module_utils._rules_topology import (
    node_group_problems,
    rank_problems,
    shared_machine_problems,
    visible_devices_problems,
)
from ansible_collections.llmops.inference.plugins.module_utils._rules_ucm import ucm_problems


def structure_problems(cluster):
    problems = []
    problems += node_group_problems(cluster)
    if problems:
        return problems
    problems += rank_problems(cluster)
    problems += shared_machine_problems(cluster)
    problems += connector_problems(cluster)
    problems += pool_problems(cluster)
    problems += ucm_problems(cluster)
    return problems


def plan_problems(cluster, ranks, processes, entries):
    problems = port_collisions(cluster, entries)
    problems += visible_devices_problems(cluster, processes)
    for entry in entries:
        if not 1 <= entry[2] <= entry[3] <= 65535:
            problems.append(Problem(cluster.name, entry[5], "%s uses port %s outside 1-65535" % (entry[4], span(entry)),
                                    "choose a lower base port", host=entry[0]))
    problems += unique(cluster, processes, "engine_id", "engine_id_template")
    problems += unique(cluster, ranks, "lookup_rpc_port", "lookup_rpc_port_base")
    return problems
