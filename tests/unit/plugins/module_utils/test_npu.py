# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading `npu-smi info`, and which planned NPUs a process still holds."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _npu as npu

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv


def spec(**fields):
    """A hand-made spec with the meta the plan would give it."""
    return argv_meta.with_meta(launch.new_spec(**fields))


# The layout of `npu-smi info` on an Atlas 800 A2 (two of eight NPUs; one process on NPU 0).
INFO = """+------------------------------------------------------------------------------------------------+
| npu-smi 23.0.6                   Version: 23.0.6                                               |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 90.8        35                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3402 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | Critical      | 89.3        36                0    / 0             |
| 0                         | 0000:01:00.0  | 0           0    / 0          3395 / 65536         |
+===========================+===============+====================================================+
+---------------------------+---------------+----------------------------------------------------+
| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |
+===========================+===============+====================================================+
| 0       0                 | 2345678       | python3.10               | 61234                   |
+===========================+===============+====================================================+
| No running processes found in NPU 1                                                            |
+===========================+===============+====================================================+
"""


def test_npu_smi_info_gives_version_devices_health_and_processes():
    parsed = npu.parse_npu_smi_info(INFO)
    assert parsed["version"] == "23.0.6"
    assert parsed["devices"] == {0: {"name": "910B3", "health": "OK"}, 1: {"name": "910B3", "health": "Critical"}}
    assert parsed["processes"] == [{"npu": 0, "pid": 2345678, "name": "python3.10", "memory_mb": 61234}]
    assert npu.parse_npu_smi_info("") == {"version": None, "devices": {}, "processes": []}


def test_a_planned_npu_held_after_stop_is_a_problem_naming_host_process_and_fix():
    specs = [spec(name="d", host="d0", image="i", command=["vllm", "serve", "/m"], env={"ASCEND_RT_VISIBLE_DEVICES": "0,1"}),
             spec(name="p", host="p0", image="i", command=["vllm", "serve", "/m"], env={"ASCEND_RT_VISIBLE_DEVICES": "4"})]
    facts = {"d0": {"facts": {"npu": dict(npu.parse_npu_smi_info(INFO), tool="/usr/local/sbin/npu-smi")}},
             "p0": {"facts": {"npu": {"tool": None}}}}  # no npu-smi there: not judged
    assert npu.held_devices(facts, specs) == [
        "host d0: NPU 0 is still held by process 2345678 (python3.10, 61234 MB) although the cluster is stopped; a leftover "
        "engine process keeps NPU memory (vLLM #9888). Fix: stop it (kill 2345678) before the next deploy."]
    other = [argv_meta.with_meta(dict(specs[0], env={"ASCEND_RT_VISIBLE_DEVICES": "1"}))]  # a process on an NPU the plan does not use
    assert npu.held_devices(facts, other) == []
    assert npu.visible_devices([specs[0], argv_meta.with_meta(dict(specs[1], env={"ASCEND_RT_VISIBLE_DEVICES": "3, 5"}))]) == [0, 1, 3, 5]
