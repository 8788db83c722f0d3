# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""status.yml's report: rows, table and what makes a cluster degraded."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils._container_state import parse_inspect
from ansible_collections.llmops.inference.plugins.module_utils._status import cluster_status

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv

SPECS = [argv_meta.with_meta(spec) for spec in [
    {"name": "vllm-decode-dp0", "host": "d0", "image": "img:1", "command": ["vllm", "serve", "/m", "--data-parallel-rank", "0"]},
    {"name": "vllm-decode-dp1", "host": "d0", "image": "img:1", "command": ["vllm", "serve", "/m", "--data-parallel-rank", "1"]},
    {"name": "vllm", "host": "p0", "image": "img:1",
     "command": ["vllm", "serve", "/m", "--data-parallel-size-local", "2", "--data-parallel-start-rank", "0"]},
    {"name": "pd-proxy", "host": "p0", "image": "img:1", "command": ["python", "proxy.py"]},
]]


def _up(image="img:1", ready=True):
    return {"state": "running", "status": "Up 2 hours", "restart_count": 0, "image": image, "ready": ready}


def test_a_healthy_cluster_has_no_problem_and_one_row_per_container():
    states = {"d0": {"status": {"vllm-decode-dp0": "ok", "vllm-decode-dp1": "ok"}, "extra": [],
                     "containers": {"vllm-decode-dp0": _up(), "vllm-decode-dp1": _up()}},
              "p0": {"status": {"vllm": "ok", "pd-proxy": "ok"}, "extra": [], "containers": {"vllm": _up(), "pd-proxy": _up()}}}
    report = cluster_status(states, SPECS)
    assert report["degraded"] == []
    assert [(r["container"], r["role"], r["dp_ranks"]) for r in report["rows"]] == [
        ("vllm-decode-dp0", "decode", "0"), ("vllm-decode-dp1", "decode", "1"), ("vllm", "colocated", "0-1"), ("pd-proxy", "service", "")]
    lines = report["table"].splitlines()
    assert lines[0].split() == ["HOST", "CONTAINER", "ROLE", "INSTANCE", "DP", "RANKS", "STATE", "READY", "STATUS", "RESTARTS", "IMAGE",
                                "DRIFT"]
    assert lines[4].split()[:7] == ["p0", "pd-proxy", "service", "-", "-", "running", "yes"]


def test_every_kind_of_trouble_is_named():
    states = {"d0": {"status": {"vllm-decode-dp0": "stopped", "vllm-decode-dp1": "changed"}, "extra": ["vllm-decode-old"],
                     "containers": {"vllm-decode-dp0": dict(_up(), state="exited", status="Exited (137) 1 minute ago"),
                                    "vllm-decode-dp1": _up(image="img:0"), "vllm-decode-old": _up()}},
              "p0": {"unreachable": True, "msg": "Failed to connect to the host via ssh: timed out\nmore"}}
    report = cluster_status(states, SPECS)
    assert report["degraded"] == [
        "vllm-decode-dp0 on d0 is exited (stopped)",
        "vllm-decode-dp1 on d0 is running (changed)",
        "vllm-decode-old on d0 belongs to the cluster but to no spec of the plan (teardown removes it)",
        "host p0 could not be looked at: Failed to connect to the host via ssh: timed out",
    ]
    drift = {r["container"]: (r["drift"], r["image"]) for r in report["rows"]}
    assert drift["vllm-decode-dp1"] == ("changed", "img:0") and drift["vllm"] == ("unknown", "img:1")


def test_a_running_container_that_does_not_answer_is_degraded():
    states = {"d0": {"status": {"vllm-decode-dp0": "ok", "vllm-decode-dp1": "ok"}, "extra": [],
                     "containers": {"vllm-decode-dp0": _up(ready=False), "vllm-decode-dp1": _up()}}}
    assert cluster_status(states, SPECS[:2])["degraded"] == ["vllm-decode-dp0 on d0 is running but not ready"]


def test_parse_inspect():
    text = "/vllm-decode-dp0\t2026-11-30T06:00:00.1Z\t2\tllmops-engine:test\n"
    expected = {"started_at": "2026-11-30T06:00:00.1Z", "restart_count": 2, "image": "llmops-engine:test"}
    assert parse_inspect(text) == {"vllm-decode-dp0": expected}
