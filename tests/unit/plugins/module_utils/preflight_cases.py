# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hand-made host facts, specs and plans preflight's tests share (the specs with the meta the plan would give them)."""

from __future__ import annotations

import copy
import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight as preflight

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
