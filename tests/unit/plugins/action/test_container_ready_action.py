# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the wait prints while engines load, and how it tells other hosts that it failed."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.action import container_ready as action

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv


def ranks(command):
    return action.dp_ranks(argv_meta.with_meta({"name": "e", "host": "h", "command": command}))


def test_dp_ranks_of_per_rank_and_per_node_processes():
    assert ranks(["vllm", "serve", "m", "--data-parallel-rank", "5"]) == "5"
    assert ranks(["vllm", "serve", "m", "--data-parallel-start-rank", "4", "--data-parallel-size-local", "4"]) == "4-7"
    assert ranks(["vllm", "serve", "m", "--data-parallel-start-rank", "1", "--data-parallel-size-local", "1"]) == "1"
    assert ranks(["python", "proxy.py"]) == ""


def test_progress_names_what_is_still_loading_with_its_ranks():
    specs = [argv_meta.with_meta(spec) for spec in (
        {"name": "d-dp4", "host": "d1", "command": ["vllm", "serve", "m", "--data-parallel-rank", "4"]},
        {"name": "d-dp5", "host": "d1", "command": ["vllm", "serve", "m", "--data-parallel-rank", "5"]},
        {"name": "meta", "host": "d1", "command": ["python"]})]
    line = action.progress_line("d1", specs, {"d-dp5", "meta"}, 61.7)
    assert line == "d1: 1 of 3 ready after 61 s; still loading: d-dp5 (DP rank 5), meta"


def test_the_first_failure_is_told_and_kept(tmp_path):
    marker = str(tmp_path / "failed")
    assert action.ActionModule._failure_elsewhere(marker) is None
    action.ActionModule._tell_others(marker, "d0", "container x is exited 1 before it was ready; its last log lines:\nboom")
    action.ActionModule._tell_others(marker, "d1", "later failure")
    assert action.ActionModule._failure_elsewhere(marker) == (
        "the wait on host d0 failed: container x is exited 1 before it was ready; its last log lines:")
