# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's checks of one host: images, versions, runtime, memory, GPUs, ephemeral ports."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _node_facts as node_facts
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_host as preflight_host

sys.path.insert(0, os.path.dirname(__file__))
from preflight_cases import ENGINE, PLAN, good_facts, meta, only, report  # noqa: E402  pylint: disable=wrong-import-position


def test_a_pulled_image_passes_and_a_failed_pull_says_why():
    facts = good_facts()
    facts["d0"]["facts"]["images"]["engine:1"] = False
    pulled = {"d0": {"results": [{"item": "engine:1", "image": {"Id": "sha256:1"}}]}}
    assert report(facts, pulls=pulled)["rows"] == []
    refused = {"d0": {"results": [{"item": "engine:1", "failed": False, "msg": "Error pulling image engine:1 - 500 Server Error"}]}}
    assert only(report(facts, pulls=refused))["found"] == "engine:1 missing; pull failed: Error pulling image engine:1 - 500 Server Error"


def test_known_bad_versions_follow_the_table_and_its_condition():
    facts = good_facts()
    facts["d0"]["facts"]["versions"]["cann"] = {"version": "8.2.RC1", "file": "x"}
    assert "vllm-ascend #5635" in only(report(facts))["fix"]
    facts["d0"]["facts"]["versions"]["cann"] = {"version": "8.5.0", "file": "x"}
    assert report(facts)["rows"] == []  # newer than the bad one
    facts["d0"]["facts"]["versions"]["cann"] = {"version": "8.3.RC1", "file": "x"}
    without_direct = dict(ENGINE, command=ENGINE["command"][:4])
    assert report(facts, specs=[without_direct])["rows"] == []  # the rule only applies with use_ascend_direct
    table = [{"component": "driver", "max_bad": "24.1.rc2", "why": "w", "fix": "f"}]
    assert only(report(good_facts(), options={"known_bad": table}))["found"] == "driver 24.1.rc2"
    assert preflight_host.version_key("8.3.RC1") < preflight_host.version_key("8.3.RC2") < preflight_host.version_key("8.3.0")
    assert preflight_host.version_key("20.10.24+dfsg1") > preflight_host.version_key("20.10")


def test_h100_needs_the_nvidia_runtime_and_no_npu_smi():
    facts = good_facts()
    facts["d0"]["facts"]["npu"] = {"tool": None}
    facts["d0"]["facts"]["gpu"] = {"tool": "/usr/bin/nvidia-smi", "gpus": ["0"], "processes": []}
    spec = dict(ENGINE, devices=[], env={}, gpus=["0"])
    plan = dict(PLAN, hardware="h100")
    assert only(report(facts, specs=[spec], plan=plan))["needed"] == "the nvidia runtime"
    facts["d0"]["facts"]["docker"]["runtimes"] = ["nvidia", "runc"]
    assert report(facts, specs=[spec], plan=plan)["rows"] == []


def test_the_kv_pool_must_fit_in_available_memory_and_shm_in_the_host():
    mooncake = dict(ENGINE, files={"/etc/llmops/mooncake/mooncake.json": '{"global_segment_size": "8GB", "protocol": "ascend"}'})
    memcache = dict(ENGINE, files={"/etc/llmops/mooncake/mooncake.json": "{}",
                                   "/etc/llmops/memcache/mmc-local.conf": "ock.mmc.local_service.dram.size = 20GB\n"})
    assert spec_meta.pool_bytes(meta([mooncake])[0]) == 16 << 30  # two workers (NPUs 0 and 1) x 8 GB
    assert spec_meta.pool_bytes(meta([memcache])[0]) == 40 << 30 and spec_meta.pool_bytes(meta([ENGINE])[0]) == 0
    assert report(good_facts(), specs=[mooncake])["rows"] == []  # 16 GB of 60 GB available
    row = only(report(good_facts(), specs=[memcache, dict(memcache, name="vllm-decode-dp1")]))
    assert (row["check"], row["found"], row["needed"]) == ("memory", "60 GiB available", "80 GiB for the KV pool of this host's engines")
    row = only(report(good_facts(), specs=[dict(ENGINE, shm_size="500g")]))
    assert (row["found"], row["needed"]) == ("64 GiB of memory in all", "shm_size 500g for vllm-decode-dp0")


def test_h100_gpus_must_be_listed_and_idle():
    facts = good_facts()
    facts["d0"]["facts"]["docker"]["runtimes"] = ["nvidia"]
    facts["d0"]["facts"]["gpu"] = {"tool": "/usr/bin/nvidia-smi", "gpus": ["0", "1"], "processes": []}
    spec = dict(ENGINE, devices=[], env={}, gpus=["0", "1"])
    plan = dict(PLAN, hardware="h100")
    assert report(facts, specs=[spec], plan=plan)["rows"] == []
    facts["d0"]["facts"]["gpu"]["processes"] = [{"gpu": "1", "pid": "321", "name": "python"}]
    assert only(report(facts, specs=[spec], plan=plan))["found"] == "GPU 1 busy with process 321 (python)"
    facts["d0"]["facts"]["gpu"] = {"tool": "/usr/bin/nvidia-smi", "gpus": ["0"], "processes": []}
    assert only(report(facts, specs=[spec], plan=plan))["found"] == "GPU 1 not listed by nvidia-smi"


def test_planned_ports_in_the_ephemeral_range_are_noted_unless_reserved(tmp_path):
    planned = [{"space": "host", "low": 36680, "high": 36695, "owner": "x"}, {"space": "host", "low": 9081, "high": 9081, "owner": "y"},
               {"space": "npu", "low": 60000, "high": 60099, "owner": "z"}]
    ranges = {"ephemeral": [32768, 60999], "reserved": []}
    assert preflight_host.ephemeral_ports(planned, ranges) == ["36680-36695"]
    assert preflight_host.ephemeral_ports(planned, dict(ranges, reserved=[[30000, 40000]])) == []
    facts = good_facts()["d0"]["facts"]
    line = preflight_host.summary("d0", dict(facts, port_ranges=ranges), planned)
    assert line.endswith("note: planned ports 36680-36695 lie in the ephemeral range 32768-60999; reserve them "
                         "(sysctl net.ipv4.ip_local_reserved_ports)")
    (tmp_path / "sys" / "net" / "ipv4").mkdir(parents=True)
    (tmp_path / "sys" / "net" / "ipv4" / "ip_local_port_range").write_text("32768\t60999\n")
    (tmp_path / "sys" / "net" / "ipv4" / "ip_local_reserved_ports").write_text("5000-13000,50088\n")
    assert node_facts.port_ranges(str(tmp_path)) == {"ephemeral": [32768, 60999], "reserved": [[5000, 13000], [50088, 50088]]}
