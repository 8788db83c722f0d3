# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recovery of a KV-pool cluster (issue 8): the lab's pd_pool_a2 (004 5.4, real mooncake_master) on
four harness nodes. When the master dies, re-running deploy restarts it and then every engine
(a restarted master has lost what they registered, Mooncake #2246), in the deployment's order;
the proxy keeps running."""

from __future__ import annotations

import pytest

from conftest import LAB, ROOT, run_playbook
from harness import containers, nodes, node_docker

INVENTORY = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2"
NODES = {"pd_pool_a2_p0": "llmops-pool-a2-p0", "pd_pool_a2_p1": "llmops-pool-a2-p1",
         "pd_pool_a2_d0": "llmops-pool-a2-d0", "pd_pool_a2_d1": "llmops-pool-a2-d1"}
MASTER_NODE = "llmops-pool-a2-p0"


def deploy():
    return run_playbook("pd_pool_a2.yml", LAB, "-i", str(INVENTORY))


def started():
    """{container: StartedAt} across the nodes (RFC 3339, same precision: comparable as text)."""
    return {name: when for node in NODES.values() for name, (when, _up) in containers(node, "pd_pool_a2").items()}


@pytest.fixture(scope="module")
def cluster():
    nodes(INVENTORY, "up")
    deploy()
    yield
    run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2",
                 "-e", "llmops_confirm_teardown=pd_pool_a2", check=False)
    nodes(INVENTORY, "down")


def test_a_dead_master_is_restarted_first_then_every_engine_after_it(cluster):
    before = started()
    assert "mooncake-master" in before and len(before) == 12
    node_docker(MASTER_NODE, "kill", "mooncake-master")
    result = deploy()
    assert "vllm-ascend-decode-dp3 on pd_pool_a2_d0: restarted after mooncake-master (not running (stopped)): " \
           "engines register with it" in result.output
    after = started()
    engines = [name for name in after if name.startswith("vllm-ascend-")]
    assert all(after[name] != before[name] for name in engines + ["mooncake-master"])
    assert after["pd-proxy"] == before["pd-proxy"]  # the proxy holds no registration
    decode = [after[name] for name in engines if "-decode-" in name]
    prefill = [after[name] for name in engines if "-prefill-" in name]
    # the 5.4 order: master, then decode, then prefill, each wave waited for
    assert after["mooncake-master"] < min(decode) and max(decode) < min(prefill)
    result = run_playbook("verify.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode == 0, result.output[-3000:]
    assert "mooncake-master (pd_pool_a2_p0)" in result.output
