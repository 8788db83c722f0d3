# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight of the NPU fabric: when it applies, each fault a row, TLS alike everywhere, the ping matrix."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_fabric as preflight_fabric

sys.path.insert(0, os.path.dirname(__file__))
from preflight_cases import ENGINE, PD_PLAN, PLAN, PREFILL, fabric, meta, only, pd_facts, pd_report  # noqa: E402  pylint: disable=wrong-import-position


def test_fabric_is_checked_for_pd_and_multi_node_ascend_clusters_only():
    assert preflight_fabric.fabric_applies(PD_PLAN, meta([PREFILL, ENGINE]))
    assert not preflight_fabric.fabric_applies(PLAN, meta([ENGINE]))  # one node, no PD
    assert not preflight_fabric.fabric_applies(dict(PLAN, hardware="h100"), meta([PREFILL, ENGINE]))
    assert pd_report(pd_facts(), {"p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0", "ok": True}]})["rows"] == []


@pytest.mark.parametrize("change,found", [
    (lambda f: f["d0"]["facts"]["fabric"]["npus"]["1"].update(link="DOWN"), "NPU 1 link DOWN"),
    (lambda f: f["d0"]["facts"]["fabric"]["npus"]["0"].update(health="Init"), "NPU 0 net health Init"),
    (lambda f: f["d0"]["facts"]["fabric"]["npus"]["0"].update(ip=None), "NPU 0 has no IP"),
    (lambda f: f["d0"]["facts"].update(fabric={"tool": None}), "hccn_tool not found"),
])
def test_each_fabric_fault_is_a_row(change, found):
    facts = pd_facts()
    change(facts)
    row = only(pd_report(facts))
    assert (row["host"], row["check"], row["found"]) == ("d0", "fabric", found)


def test_tls_must_be_alike_on_every_npu_of_every_node():
    facts = pd_facts()
    facts["d0"]["facts"]["fabric"] = fabric(tls=1, octet=3)  # both of d0's NPUs, against p0's two: a tie goes to 1
    facts["p0"]["facts"]["fabric"]["npus"]["0"]["tls"] = "1"  # now three of four have 1
    row = only(pd_report(facts))
    assert (row["host"], row["found"], row["needed"]) == ("p0", "NPU 1 TLS switch 0", "TLS switch 1, as on the other NPUs")


def test_the_ping_matrix_goes_from_prefill_to_decode_and_within_dp_groups():
    facts = pd_facts()
    assert preflight_fabric.ping_targets(facts, meta([PREFILL, ENGINE])) == {"p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0"}]}
    coordinator = ["--data-parallel-address", "10.0.0.3", "--data-parallel-rpc-port", "1"]
    group = [dict(ENGINE, command=ENGINE["command"] + coordinator),
             dict(PREFILL, name="vllm-decode-dp1", command=ENGINE["command"] + coordinator)]
    assert preflight_fabric.ping_targets(facts, meta(group)) == {"d0": [{"npu": 0, "address": "192.168.1.10", "peer": "p0"}],
                                                                 "p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0"}]}
    result = pd_report(facts, {"p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0", "ok": False}]})
    assert only(result)["found"] == "NPU 0 cannot reach 192.168.3.10 of d0"
    assert result["matrix"] == ["p0 NPU 0 -> d0 (192.168.3.10): UNREACHABLE"]
