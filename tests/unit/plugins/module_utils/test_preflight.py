# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight's comparison of each host's facts with its part of the plan, check by check."""

from __future__ import annotations

import copy
import os
import sys

import pytest

from ansible_collections.llmops.inference.plugins.module_utils import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils import _node_facts as node_facts
from ansible_collections.llmops.inference.plugins.module_utils import _preflight as preflight
from ansible_collections.llmops.inference.plugins.module_utils import _spec_meta as spec_meta

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv

DEVICES = ["/dev/davinci0", "/dev/davinci1", "/dev/davinci_manager"]
VOLUMES = ["/usr/local/Ascend/driver:/usr/local/Ascend/driver", "/root/.cache:/root/.cache",
           "/etc/llmops/mooncake/mooncake.json:/etc/llmops/mooncake/mooncake.json:ro"]
ENGINE = launch.new_spec(name="vllm-decode-dp0", host="d0", image="engine:1",
                         command=["vllm", "serve", "/root/.cache/GLM", "--port", "9900", "--kv-transfer-config",
                                  '{"kv_connector":"MooncakeConnectorV2","kv_connector_extra_config":{"use_ascend_direct":true}}'],
                         env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, devices=DEVICES, volumes=VOLUMES,
                         files={"/etc/llmops/mooncake/mooncake.json": "{}"})
PLAN = {"hardware": "a2", "ports": {"d0": [{"space": "host", "low": 9900, "high": 9900, "owner": "decode rank 0 API",
                                            "variable": "vllm_engine_api_port"},
                                           {"space": "npu", "low": 60000, "high": 60099, "owner": "decode rank 0 HCCL NPU sockets",
                                            "variable": "x"}]}}
NODES = [{"host": "d0", "address": "10.0.0.3", "nic": "eth0"}]


def good_facts():
    paths = {d: {"exists": True, "kind": "char"} for d in DEVICES}
    paths.update({"/usr/local/Ascend/driver": {"exists": True, "kind": "dir", "free_bytes": 10 << 30},
                  "/root/.cache": {"exists": True, "kind": "dir", "free_bytes": 20 << 30},
                  "/root/.cache/GLM": {"exists": True, "kind": "dir", "config_json": True, "safetensors": 2, "free_bytes": 20 << 30}})
    return {"d0": {"facts": {
        "docker": {"answers": True, "version": "24.0.7", "runtimes": ["runc"], "requests": True},
        "npu": {"tool": "/usr/local/sbin/npu-smi", "version": "23.0.6", "processes": [],
                "devices": {"0": {"name": "910B3", "health": "OK"}, "1": {"name": "910B3", "health": "OK"}}},
        "devices": [], "listeners": [{"port": 22, "pid": 1, "process": "sshd", "container": None}],
        "paths": paths, "nic": {"exists": True, "state": "up", "addresses": ["10.0.0.3"]},
        "images": {"engine:1": True}, "memory": {"total": 64 << 30, "available": 60 << 30},
        "versions": {"driver": {"version": "24.1.rc2", "file": "/usr/local/Ascend/driver/version.info"}},
        "fabric": fabric(octet=3),
    }}}


def report(facts, specs=(ENGINE,), plan=None, pulls=None, options=None):
    return preflight.preflight(facts, meta(specs), plan or PLAN, NODES, pulls, options)


def meta(specs):
    """The specs with the meta the plan would give them (these are made by hand)."""
    return [argv_meta.with_meta(spec) for spec in specs]


def only(result):
    assert len(result["rows"]) == 1, result["table"]
    return result["rows"][0]


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


def test_rendered_configs_and_created_directories_need_not_exist_yet():
    spec = dict(ENGINE, volumes=VOLUMES + ["/data/ucm:/data/ucm"])
    assert "/etc/llmops/mooncake/mooncake.json" not in preflight.wanted_paths(meta([spec]), ["/data/ucm/cache"])
    assert "/data/ucm" not in preflight.wanted_paths(meta([spec]), ["/data/ucm/cache"])
    assert report(good_facts(), specs=[spec], options={"created": ["/data/ucm/cache", "/data/ucm/log"]})["rows"] == []
    assert preflight.model_dirs(meta([spec])) == ["/root/.cache/GLM"]


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
    assert preflight.version_key("8.3.RC1") < preflight.version_key("8.3.RC2") < preflight.version_key("8.3.0")
    assert preflight.version_key("20.10.24+dfsg1") > preflight.version_key("20.10")


def test_h100_needs_the_nvidia_runtime_and_no_npu_smi():
    facts = good_facts()
    facts["d0"]["facts"]["npu"] = {"tool": None}
    facts["d0"]["facts"]["gpu"] = {"tool": "/usr/bin/nvidia-smi", "gpus": ["0"], "processes": []}
    spec = dict(ENGINE, devices=[], env={}, gpus=["0"])
    plan = dict(PLAN, hardware="h100")
    assert only(report(facts, specs=[spec], plan=plan))["needed"] == "the nvidia runtime"
    facts["d0"]["facts"]["docker"]["runtimes"] = ["nvidia", "runc"]
    assert report(facts, specs=[spec], plan=plan)["rows"] == []


def test_several_faults_on_several_hosts_come_in_one_report_and_unreachable_hosts_too():
    facts = good_facts()
    facts["d0"]["facts"]["nic"]["state"] = "down"
    facts["d0"]["facts"]["paths"].pop("/dev/davinci0")
    facts["d1"] = {"unreachable": True, "msg": "Failed to connect to the host via ssh"}
    specs = [ENGINE, dict(copy.deepcopy(ENGINE), name="vllm-decode-dp1", host="d1")]
    result = report(facts, specs=specs)
    assert [(r["host"], r["check"]) for r in result["rows"]] == [("d0", "devices"), ("d0", "network"), ("d1", "reachable")]
    assert result["table"][0].split() == ["HOST", "CHECK", "FOUND", "NEEDED", "FIX"] and len(result["table"]) == 4


def test_proc_is_read_for_listeners_device_holders_and_their_containers(tmp_path):
    container = "a" * 64
    (tmp_path / "net").mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    (tmp_path / "net" / "tcp").write_text(header + "   0: 00000000:2383 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 4242 1\n"
                                          "   1: 0100007F:0016 0100007F:9999 01 00000000:00000000 00:00000000 00000000 0 0 4243 1\n")
    proc = tmp_path / "100"
    (proc / "fd").mkdir(parents=True)
    (proc / "comm").write_text("python3\n")
    (proc / "cgroup").write_text("0::/system.slice/docker-%s.scope\n" % container)
    os.symlink("socket:[4242]", proc / "fd" / "3")
    os.symlink("/dev/davinci2", proc / "fd" / "4")
    procs = node_facts.processes(str(tmp_path))
    assert node_facts.listening_ports(str(tmp_path)) == {9091: "4242"}
    assert node_facts.port_holders({9091: "4242"}, procs, {container: "vllm-prefill-dp0"}) == [
        {"port": 9091, "pid": 100, "process": "python3", "container": "vllm-prefill-dp0"}]
    assert node_facts.device_holders(procs, {}) == [{"npu": 2, "pid": 100, "process": "python3", "container": None}]


def test_meminfo_and_version_files_are_read():
    assert node_facts.meminfo("MemTotal:  2048 kB\nMemFree: 1 kB\nMemAvailable:  1024 kB\n") == {"total": 2097152, "available": 1048576}
    assert node_facts.version_value("Version=24.1.rc2\nai_cpu_version=1\n") == "24.1.rc2"
    assert node_facts.version_value("package_name=x\nversion=8.3.RC1\n") == "8.3.RC1"
    assert node_facts.version_value("") is None


def fabric(tls=0, link="UP", health="Success", octet=3):
    return {"tool": "/usr/local/Ascend/driver/tools/hccn_tool",
            "npus": {str(n): {"link": link, "health": health, "ip": "192.168.%d.%d" % (octet, 10 + n), "tls": str(tls)} for n in (0, 1)}}


def pd_facts():
    """A prefill node p0 and a decode node d0, both as good_facts but for their addresses."""
    facts = good_facts()
    facts["p0"] = copy.deepcopy(facts["d0"])
    facts["p0"]["facts"]["fabric"] = fabric(octet=1)
    facts["p0"]["facts"]["nic"]["addresses"] = ["10.0.0.1"]
    return facts


PREFILL = dict(copy.deepcopy(ENGINE), name="vllm-prefill-dp0", host="p0")
PD_NODES = NODES + [{"host": "p0", "address": "10.0.0.1", "nic": "eth0"}]
PD_PLAN = dict(PLAN, ports={})


def pd_report(facts, pings=None):
    return preflight.preflight(facts, meta([PREFILL, ENGINE]), PD_PLAN, PD_NODES, None, None, pings)


def test_fabric_is_checked_for_pd_and_multi_node_ascend_clusters_only():
    assert preflight.fabric_applies(PD_PLAN, meta([PREFILL, ENGINE]))
    assert not preflight.fabric_applies(PLAN, meta([ENGINE]))  # one node, no PD
    assert not preflight.fabric_applies(dict(PLAN, hardware="h100"), meta([PREFILL, ENGINE]))
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
    assert preflight.ping_targets(facts, meta([PREFILL, ENGINE])) == {"p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0"}]}
    coordinator = ["--data-parallel-address", "10.0.0.3", "--data-parallel-rpc-port", "1"]
    group = [dict(ENGINE, command=ENGINE["command"] + coordinator),
             dict(PREFILL, name="vllm-decode-dp1", command=ENGINE["command"] + coordinator)]
    assert preflight.ping_targets(facts, meta(group)) == {"d0": [{"npu": 0, "address": "192.168.1.10", "peer": "p0"}],
                                                          "p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0"}]}
    result = pd_report(facts, {"p0": [{"npu": 0, "address": "192.168.3.10", "peer": "d0", "ok": False}]})
    assert only(result)["found"] == "NPU 0 cannot reach 192.168.3.10 of d0"
    assert result["matrix"] == ["p0 NPU 0 -> d0 (192.168.3.10): UNREACHABLE"]


def test_the_kv_pool_must_fit_in_available_memory_and_shm_in_the_host():
    mooncake = dict(ENGINE, files={"/etc/llmops/mooncake/mooncake.json": '{"global_segment_size": "8GB", "protocol": "ascend"}'})
    memcache = dict(ENGINE, files={"/etc/llmops/mooncake/mooncake.json": "{}",
                                   "/etc/llmops/memcache/mmc-local.conf": "ock.mmc.local_service.dram.size = 20GB\n"})
    assert spec_meta.pool_bytes(argv_meta.with_meta(mooncake)) == 16 << 30  # two workers (NPUs 0 and 1) x 8 GB
    assert spec_meta.pool_bytes(argv_meta.with_meta(memcache)) == 40 << 30 and spec_meta.pool_bytes(argv_meta.with_meta(ENGINE)) == 0
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


def test_ucm_storage_must_have_room_for_its_posix_capacity():
    yaml_text = "ucm_connectors:\n- ucm_connector_config:\n    storage_backends: /data/ucm/cache\n    posix_capacity_gb: {cap}\n"
    spec = dict(ENGINE, files=dict(ENGINE["files"], **{"/etc/llmops/ucm/ucm.yaml": yaml_text.format(cap=100)}))
    assert preflight.ucm_storage(meta([spec])) == {"/data/ucm/cache": 100}
    assert "/data/ucm/cache" in preflight.gather_inputs(meta([spec]), ["/data/ucm/cache"])["paths"]
    facts = good_facts()
    facts["d0"]["facts"]["paths"]["/data/ucm/cache"] = {"exists": False, "free_bytes": 50 << 30}
    row = only(report(facts, specs=[spec], options={"created": ["/data/ucm/cache"]}))
    assert (row["found"], row["needed"]) == ("50 GiB free under /data/ucm/cache", "posix_capacity_gb 100")
    no_gc = dict(ENGINE, files=dict(ENGINE["files"], **{"/etc/llmops/ucm/ucm.yaml": yaml_text.format(cap=0)}))
    assert report(facts, specs=[no_gc], options={"created": ["/data/ucm/cache"]})["rows"] == []


def test_planned_ports_in_the_ephemeral_range_are_noted_unless_reserved(tmp_path):
    planned = [{"space": "host", "low": 36680, "high": 36695, "owner": "x"}, {"space": "host", "low": 9081, "high": 9081, "owner": "y"},
               {"space": "npu", "low": 60000, "high": 60099, "owner": "z"}]
    ranges = {"ephemeral": [32768, 60999], "reserved": []}
    assert preflight.ephemeral_ports(planned, ranges) == ["36680-36695"]
    assert preflight.ephemeral_ports(planned, dict(ranges, reserved=[[30000, 40000]])) == []
    facts = good_facts()["d0"]["facts"]
    line = preflight.summary("d0", dict(facts, port_ranges=ranges), planned)
    assert line.endswith("note: planned ports 36680-36695 lie in the ephemeral range 32768-60999; reserve them "
                         "(sysctl net.ipv4.ip_local_reserved_ports)")
    (tmp_path / "sys" / "net" / "ipv4").mkdir(parents=True)
    (tmp_path / "sys" / "net" / "ipv4" / "ip_local_port_range").write_text("32768\t60999\n")
    (tmp_path / "sys" / "net" / "ipv4" / "ip_local_reserved_ports").write_text("5000-13000,50088\n")
    assert node_facts.port_ranges(str(tmp_path)) == {"ephemeral": [32768, 60999], "reserved": [[5000, 13000], [50088, 50088]]}
