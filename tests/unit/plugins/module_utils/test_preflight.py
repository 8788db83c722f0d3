# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's report: every host's facts against its part of the plan, one row per problem naming host, check
and fix; the checks of one host are in test_preflight_host.py, the fabric's in test_preflight_fabric.py."""

from __future__ import annotations

import copy
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
from preflight_cases import ENGINE, good_facts, only, report  # noqa: E402  pylint: disable=wrong-import-position


def test_a_host_with_what_the_plan_needs_passes_and_is_summarised():
    result = report(good_facts())
    assert result["rows"] == []
    assert result["summary"] == ["d0: docker 24.0.7; npu-smi 23.0.6, 2 NPUs; driver 24.1.rc2; memory 60 GiB free of 64 GiB; "
                                 "least free disk 10 GiB under /usr/local/Ascend/driver"]


@pytest.mark.parametrize("change,check,found", [
    (lambda f: f["docker"].update(answers=False, error="Cannot connect"), "container runtime", "docker does not answer: Cannot connect"),
    (lambda f: f["docker"].update(version="19.03.1"), "container runtime", "Docker 19.03.1"),
    (lambda f: f["docker"].update(requests=False), "container runtime", "python requests missing"),
    (lambda f: f["paths"].pop("/dev/davinci1"), "devices", "/dev/davinci1 missing"),
    (lambda f: f["npu"]["devices"]["1"].update(health="Critical"), "devices", "NPU 1 health Critical"),
    (lambda f: f["npu"]["devices"].pop("1"), "devices", "NPU 1 not listed by npu-smi"),
    (lambda f: f.update(npu={"tool": None}), "devices", "npu-smi not found"),
    (lambda f: f["devices"].append({"npu": 1, "pid": 77, "process": "python3", "container": None}), "devices",
     "NPU 1 held by process 77 (python3)"),
    (lambda f: f["npu"]["processes"].append({"npu": 0, "pid": 78, "name": "EngineCore", "memory_mb": 1}), "devices",
     "NPU 0 held by process 78 (EngineCore)"),
    (lambda f: f["paths"].pop("/usr/local/Ascend/driver"), "mount sources", "/usr/local/Ascend/driver missing"),
    (lambda f: f["paths"].pop("/root/.cache/GLM"), "mount sources", "model directory /root/.cache/GLM missing"),
    (lambda f: f["paths"]["/root/.cache/GLM"].update(safetensors=0), "mount sources", "model /root/.cache/GLM has no *.safetensors"),
    (lambda f: f["listeners"].append({"port": 9900, "pid": 5, "process": "nc", "container": None}), "ports",
     "port 9900 held by process 5 (nc)"),
    (lambda f: f["listeners"].append({"port": 9900, "pid": 6, "process": "python3", "container": "old-proxy"}), "ports",
     "port 9900 held by process 6 (python3) in container old-proxy"),
    (lambda f: f.update(nic={"exists": False, "state": None, "addresses": []}), "network", "no NIC eth0"),
    (lambda f: f["nic"].update(state="down"), "network", "NIC eth0 is down"),
    (lambda f: f["nic"].update(addresses=["10.0.0.9"]), "network", "NIC eth0 has 10.0.0.9"),
    (lambda f: f["images"].update({"engine:1": False}), "images", "engine:1 missing; pull failed: not tried"),
    (lambda f: f["versions"].update(cann={"version": "8.3.RC1", "file": "x"}), "versions", "cann 8.3.RC1"),
])
def test_each_fault_is_one_row_naming_host_check_and_fix(change, check, found):
    facts = good_facts()
    change(facts["d0"]["facts"])
    row = only(report(facts))
    assert (row["host"], row["check"], row["found"]) == ("d0", check, found)
    assert row["needed"] and row["fix"]


def test_what_belongs_to_the_plan_is_no_problem():
    facts = good_facts()
    own = {"pid": 9, "process": "python3", "container": "vllm-decode-dp0"}
    facts["d0"]["facts"]["listeners"].append(dict(own, port=9900))  # a re-run: our own container holds its port
    facts["d0"]["facts"]["devices"].append(dict(own, npu=0))
    facts["d0"]["facts"]["listeners"].append({"port": 60050, "pid": 3, "process": "x", "container": None})  # NPU port space
    facts["d0"]["facts"]["npu"]["processes"].append({"npu": 5, "pid": 4, "name": "other", "memory_mb": 1})  # an NPU not planned
    assert report(facts)["rows"] == []


def test_several_faults_on_several_hosts_come_in_one_report_and_unreachable_hosts_too():
    facts = good_facts()
    facts["d0"]["facts"]["nic"]["state"] = "down"
    facts["d0"]["facts"]["paths"].pop("/dev/davinci0")
    facts["d1"] = {"unreachable": True, "msg": "Failed to connect to the host via ssh"}
    specs = [ENGINE, dict(copy.deepcopy(ENGINE), name="vllm-decode-dp1", host="d1")]
    result = report(facts, specs=specs)
    assert [(r["host"], r["check"]) for r in result["rows"]] == [("d0", "devices"), ("d0", "network"), ("d1", "reachable")]
    assert result["table"][0].split() == ["HOST", "CHECK", "FOUND", "NEEDED", "FIX"] and len(result["table"]) == 4


def test_each_hosts_facts_come_from_the_look_where_it_gathered_them_else_from_preflights_gather():
    from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight import facts_of  # pylint: disable=import-outside-toplevel
    looks = {"p0": {"start": ["e"], "preflight": {"memory": {"total": 1}}}, "p1": {"start": []}, "d0": {}, "d1": {}}
    gathered = {"p0": {"skipped": True, "changed": False}, "p1": {"facts": {"memory": {"total": 2}}},
                "d0": {"unreachable": True, "msg": "ssh: no route"}}
    assert facts_of(looks, gathered) == {
        "p0": {"facts": {"memory": {"total": 1}}},  # the look's, not the skipped gather
        "p1": {"facts": {"memory": {"total": 2}}},  # nothing to start there: preflight gathered itself
        "d0": {"unreachable": True, "msg": "ssh: no route"},  # its failure is the report's row
        "d1": {"unreachable": True},  # neither answered
    }


def test_the_host_firewall_needs_nft_on_every_host_and_only_when_it_is_on():
    facts = good_facts()
    facts["d0"]["facts"]["firewall"] = {"nft": None, "loaded": False, "file": False}
    row = only(report(facts, options={"firewall": True}))
    assert (row["host"], row["check"], row["found"]) == ("d0", "host firewall", "nft not installed")
    assert "apt-get install nftables" in row["fix"] and "host_firewall_enabled: false" in row["fix"]
    assert report(facts, options={"firewall": False})["rows"] == []
    facts["d0"]["facts"]["firewall"]["nft"] = "/usr/sbin/nft"
    assert report(facts, options={"firewall": True})["rows"] == []
