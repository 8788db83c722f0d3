# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""status.yml's report: rows, table and what makes a cluster degraded."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import parse_inspect
from ansible_collections.llmops.inference.plugins.module_utils.operations._status import cluster_status

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
                                "DRIFT", "DOOR"]
    assert lines[4].split()[:7] == ["p0", "pd-proxy", "service", "-", "-", "running", "yes"]


def test_each_api_rank_shows_its_state_at_the_front_door_and_one_out_of_rotation_is_degraded():
    door = {"name": "pd-proxy", "host": "p0", "image": "img:1", "meta": {"kind": "proxy", "failover": True}}
    engines = [{"name": "vllm-decode-dp%d" % rank, "host": "d0", "image": "img:1",
                "meta": {"kind": "engine", "role": "decode", "front_door": "192.0.2.43:990%d" % rank}} for rank in (0, 1)]
    states = {"d0": {"status": {"vllm-decode-dp0": "ok", "vllm-decode-dp1": "ok"}, "extra": [],
                     "containers": {"vllm-decode-dp0": _up(), "vllm-decode-dp1": _up()}},
              "p0": {"status": {"pd-proxy": "ok"}, "extra": [], "containers": {"pd-proxy": dict(_up(), front_door={
                  "192.0.2.43:9900": "serving", "192.0.2.43:9901": "ejected"})}}}
    report = cluster_status(states, engines + [door])
    doors = {r["container"]: r["door"] for r in report["rows"]}
    assert doors == {"vllm-decode-dp0": "serving", "vllm-decode-dp1": "ejected", "pd-proxy": "-"}
    assert report["degraded"] == ["vllm-decode-dp1 on d0: the front door has its member 192.0.2.43:9901 ejected"]
    assert report["table"].splitlines()[2].split()[-1] == "ejected"


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


HA_SPECS = [dict(name=name, host=host, image="img:1", command=[], meta={"kind": kind, "ha": {"service": service}})
            for name, host, kind, service in [("mooncake-etcd", h, "pool_store", "etcd") for h in ("p0", "p1", "d0")]
            + [("mooncake-master", h, "pool_service", "mooncake_master") for h in ("p0", "p1")]]


def _ha_states(master_roles, etcd_roles):
    states = {}
    for spec in HA_SPECS:
        roles = master_roles if spec["name"] == "mooncake-master" else etcd_roles
        role = roles.get(spec["host"])
        state = states.setdefault(spec["host"], {"status": {}, "extra": [], "containers": {}})
        state["status"][spec["name"]] = "ok" if role else "stopped"
        if role:
            state["containers"][spec["name"]] = dict(_up(), ha_role=role)
    return states


def test_ha_masters_and_etcd_members_say_their_role_and_what_a_failure_would_stop():
    healthy = cluster_status(_ha_states({"p0": "leader", "p1": "standby"}, {"p0": "leader", "p1": "follower", "d0": "follower"}), HA_SPECS)
    assert healthy["degraded"] == []
    assert sorted((r["host"], r["role"]) for r in healthy["rows"] if r["container"] == "mooncake-master") == [
        ("p0", "master leader"), ("p1", "master standby")]
    failed_over = cluster_status(_ha_states({"p1": "leader"}, {"p0": "leader", "p1": "follower"}), HA_SPECS)
    assert "no standby Mooncake master (mooncake-master on p0 down, mooncake-master on p1 leader)" in failed_over["degraded"][-2]
    assert failed_over["degraded"][-1].startswith("etcd member down: mooncake-etcd on d0 (2 of 3 answer")
    leaderless = cluster_status(_ha_states({"p0": "warmup", "p1": "standby"}, {"p0": "leader"}), HA_SPECS)
    assert any(p.startswith("no Mooncake master leads and serves") for p in leaderless["degraded"])
    assert leaderless["degraded"][-1] == "etcd has no quorum: 1 of 3 members answer"
