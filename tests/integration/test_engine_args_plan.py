# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""In plan mode: the real playbooks refuse vllm serve flags the plan owns, flags vLLM lacks,
values its parser refuses, settings prefill and decode must share that differ, and a model vLLM would
misread, naming the variable and the fix, before any host is touched (the hosts use the tripwire
connection). One broken inventory per class: the planner reports every problem of a run at once."""

from __future__ import annotations

import json

from conftest import LAB, NO_CONNECT, run_playbook
from test_broken_inventories import broken_lab


def refused(tmp_path, cluster, edit):
    result = run_playbook(cluster + ".yml", broken_lab(tmp_path, cluster, edit), "-i", str(NO_CONNECT), check=False)
    assert result.returncode != 0 and "TRIPWIRE" not in result.output, result.output[-3000:]
    return " ".join(result.output.split())


def test_flags_the_plan_owns_flags_vllm_lacks_and_values_it_refuses(tmp_path):
    def edit(data):
        data["vllm_engine_args"].update({"tensor_parallel_size": 4, "max-model-length": 4096, "enforce-eager": "yes"})
        data["vllm_engine_role_args"]["decode"].update({"--port": 9000, "max-num-seqs": "thirty-two"})
    output = refused(tmp_path, "pd_a2", edit)
    for expected in (
            "cluster pd_a2: vllm_engine_args.tensor_parallel_size: --tensor-parallel-size is rendered by the plan itself; "
            "given again, vLLM would take one of the two by their order in the command. Fix: remove it and set "
            "vllm_engine_groups.<role>.tp_size.",
            "vllm_engine_args.max-model-length: vLLM has no flag --max-model-length (the flags of vLLM 0.30.0's vllm serve). "
            "Fix: write max-model-len; if your image's vLLM has it, list it in vllm_engine_known_flags.",
            "vllm_engine_args.enforce-eager: --enforce-eager takes no value (true sets it, false or null leaves it out), got yes.",
            "vllm_engine_role_args.decode.--port: --port is rendered by the plan itself",
            "Fix: remove it and set vllm_engine_groups.<role>.api_port (or vllm_engine_api_port per host).",
            "vllm_engine_role_args.decode.max-num-seqs: --max-num-seqs takes an integer, got thirty-two."):
        assert expected in output, expected


def test_settings_prefill_and_decode_must_share(tmp_path):
    def edit(data):
        data["vllm_engine_role_args"]["prefill"]["block-size"] = 128
        data["vllm_engine_role_args"]["decode"]["served-model-name"] = "glm-d"
        data["vllm_engine_role_args"]["decode"]["max-model-len"] = 131072
    output = refused(tmp_path, "pd_pool_a2", edit)
    for expected in (
            "cluster pd_pool_a2: vllm_engine_role_args.prefill.block-size: prefill has --block-size 128 "
            "(vllm_engine_role_args.prefill), decode not set (vLLM's default); KV moves between them block by block: "
            "a block size mismatch garbles the output with HTTP 200 (vllm-ascend #14545",
            "vllm_engine_role_args.decode.served-model-name: prefill has --served-model-name glm (vllm_engine_args), "
            "decode glm-d (vllm_engine_role_args.decode)",
            "vllm_engine_role_args.decode.max-model-len: prefill has --max-model-len 200000 (vllm_engine_args), decode "
            "131072 (vllm_engine_role_args.decode); decode serves the whole prompt prefill accepted",
            "Fix: give decode at least prefill's --max-model-len"):
        assert expected in output, expected


def test_a_model_vllm_would_take_for_a_hub_id(tmp_path):
    output = refused(tmp_path, "pd_a3", lambda data: data.update(vllm_engine_model="Eco-Tech/GLM-5.3-Flash-w8a8"))
    assert ("cluster pd_a3: vllm_engine_model: 'Eco-Tech/GLM-5.3-Flash-w8a8' is not an absolute path: vLLM would take "
            "it for a hub id and try to download it. Fix: give the model's directory inside a mounted volume "
            "(vllm_engine_volumes), or set vllm_engine_model_from_hub: true") in output
    output = refused(tmp_path / "2", "ucm_a2", lambda data: data.update(vllm_engine_volumes=[]))
    assert "cluster ucm_a2: vllm_engine_model: /data/weights/GLM-4.7-W8A8-floatmtp lies in no directory mounted" in output


def test_differences_by_design_keep_planning(tmp_path):
    """The seeds' own differences (tuning, eager mode, compilation config, the draft's enforce_eager) plan in the lab
    (test_lab_plans.py); these variants do too: decode accepting longer prompts, prefix caching turned off for decode
    (null drops the cluster-wide flag, no- negates vLLM's default),
    the shared block size spelt two ways in two scopes, a flag with underscores."""
    extra = {"vllm_engine_role_args": {
        "prefill": {"max-num-seqs": 64, "max-num-batched-tokens": 8192, "gpu-memory-utilization": "0.92", "enforce-eager": True,
                    "block_size": 128, "max-model-len": "128k"},
        "decode": {"max-num-seqs": 32, "max-num-batched-tokens": 1024, "gpu_memory_utilization": "0.85",
                   "block-size": 128, "enable-prefix-caching": None, "no-enable-prefix-caching": True}}}
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", json.dumps(extra), "-e",
                          "llmops_plan_dir=%s" % tmp_path)
    assert "TRIPWIRE" not in result.output
    decode = json.loads((tmp_path / "pd_a2_d0" / "vllm-ascend-decode-dp0.json").read_text())["command"]
    assert decode[decode.index("--block-size") + 1] == "128" and "--no-enable-prefix-caching" in decode
