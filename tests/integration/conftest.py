# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs the real playbooks with ansible-playbook; needs `. scripts/env.sh` (scripts/test.sh does it)."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAB = ROOT / "inventories" / "lab"
HERE = pathlib.Path(__file__).resolve().parent
# Points every inventory host at the tripwire connection: reaching one fails the test.
NO_CONNECT = HERE / "no_connect.yml"
sys.path.insert(0, str(HERE.parent))  # tests/seed_text.py, shared with the unit tests
CLUSTERS = ("ucm_a2", "ucm_h100", "single_a5", "single_a3", "dp_a2", "pd_a3", "pd_a2", "pd_pool_a3", "pd_pool_a2", "cpu_dp", "cpu_pd",
            "pd_2p2d_a3", "pd_2p2d_a2")


def run_playbook(playbook, inventory, *extra, check=True):
    """ansible-playbook from the checkout (one playbook, or a list run in one run); returns the
    CompletedProcess (stdout and stderr merged)."""
    playbooks = [playbook] if isinstance(playbook, str) else list(playbook)
    command = ["ansible-playbook", *(str(ROOT / "playbooks" / p) for p in playbooks), "-i", str(inventory), *extra]
    env = dict(os.environ, ANSIBLE_CONNECTION_PLUGINS=str(HERE / "connection_plugins"))
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env, check=False)
    result.output = result.stdout + result.stderr
    if check and result.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s" % (" ".join(command), result.returncode, result.output[-6000:]))
    return result


class Plan:
    def __init__(self, directory, output):
        self.directory = directory
        self.output = output

    def spec(self, host, name):
        return json.loads((self.directory / host / (name + ".json")).read_text())

    def specs(self):
        return {(p.parent.name, p.stem): json.loads(p.read_text()) for p in sorted(self.directory.glob("*/*.json"))}


@pytest.fixture(scope="session")
def lab_plans(tmp_path_factory):
    """Every lab cluster in plan mode, once per test session: {cluster: Plan}."""
    plans = {}
    for cluster in CLUSTERS:
        directory = tmp_path_factory.mktemp("plan-" + cluster)
        result = run_playbook(cluster + ".yml", LAB, "-i", str(NO_CONNECT), "-e", "llmops_plan_dir=%s" % directory)
        assert "TRIPWIRE" not in result.output
        plans[cluster] = Plan(directory, result.output)
    return plans


@pytest.fixture(scope="session")
def pool_nodes():
    """The pd_pool_a2 harness nodes, up once for every test module that deploys on them (the single master's
    recovery, then the masters in HA): the path of their harness inventory."""
    from harness import nodes  # pylint: disable=import-outside-toplevel  # harness imports this module
    inventory = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2"
    nodes(inventory, "up")
    yield inventory
    nodes(inventory, "down")
