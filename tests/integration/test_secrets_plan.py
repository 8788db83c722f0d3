# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A planted secret appears in no output of a plan run at -vvv, nor in the plan files."""

from __future__ import annotations

import json

from conftest import LAB, NO_CONNECT, run_playbook

PLANTED = "s3cr3t-planted-4711"


def test_a_planted_secret_appears_in_no_plan_output(tmp_path):
    secrets = {"vllm_engine_secret_env": {"VLLM_API_KEY": PLANTED, "HF_TOKEN": "hf-" + PLANTED},
               "vllm_engine_env": {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "VLLM_USE_V2_MODEL_RUNNER": "0",
                                   "HCCL_OP_EXPANSION_MODE": "AIV", "HCCL_BUFFSIZE": "1024",
                                   "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "3000", "HCCL_EXEC_TIMEOUT": "3600",
                                   "HCCL_CONNECT_TIMEOUT": "1200", "VLLM_RPC_TIMEOUT": "3600000", "OMP_PROC_BIND": "false",
                                   "OMP_NUM_THREADS": "10", "MY_SERVICE_PASSWORD": "pw-" + PLANTED},
               # the front door's own keys (issue 20): two client keys while rotating, one admin key
               "pd_proxy_client_keys": ["client-" + PLANTED, "client2-" + PLANTED], "pd_proxy_admin_keys": ["admin-" + PLANTED]}
    plan_dir = tmp_path / "plan"
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-vvv", "-e", json.dumps(secrets),
                          "-e", "llmops_plan_dir=%s" % plan_dir)
    assert PLANTED not in result.output
    assert "MY_SERVICE_PASSWORD in vllm_engine_env / vllm_engine_role_env look secret" in " ".join(result.output.split())
    files = {path.name: path.read_text() for path in plan_dir.glob("*/*.json")}
    assert len(files) == 11 and not any(PLANTED in text for text in files.values())
    decode = json.loads(files["vllm-ascend-decode-dp0.json"])
    assert decode["env"]["VLLM_API_KEY"] == decode["env"]["HF_TOKEN"] == decode["env"]["MY_SERVICE_PASSWORD"] == "<secret>"
    assert decode["secret_env"]["names"] == ["HF_TOKEN", "MY_SERVICE_PASSWORD", "VLLM_API_KEY"]
    proxy = json.loads(files["pd-proxy.json"])  # the proxy's Bearer token to the engines: the same key, masked
    assert {name: value for name, value in proxy["env"].items() if value == "<secret>"} == dict.fromkeys(
        ["OPENAI_API_KEY", "LLMOPS_FRONT_DOOR_KEYS", "LLMOPS_FRONT_DOOR_ADMIN_KEYS"], "<secret>")
    assert proxy["secret_env"]["aliases"] == {"OPENAI_API_KEY": "VLLM_API_KEY"}
    assert proxy["meta"]["client_auth"] and proxy["meta"]["admin_auth"]


def test_engines_with_a_key_behind_an_open_front_door_are_refused_unless_asked(tmp_path):
    keyed = {"vllm_engine_secret_env": {"VLLM_API_KEY": PLANTED}}
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", json.dumps(keyed),
                          "-e", "llmops_plan_dir=%s" % (tmp_path / "refused"), check=False)
    assert result.returncode != 0 and not (tmp_path / "refused").exists()
    assert "cluster pd_a2: the engines have an API key (vllm_engine_secret_env.VLLM_API_KEY) but the PD proxy, the " \
        "cluster's front door, would serve anyone: pd_proxy_client_keys is empty." in " ".join(result.output.split())
    assert PLANTED not in result.output
    opened = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", json.dumps(dict(keyed, pd_proxy_open_front_door=True)),
                          "-e", "llmops_plan_dir=%s" % (tmp_path / "open"))
    proxy = json.loads((tmp_path / "open" / "pd_a2_p0" / "pd-proxy.json").read_text())
    assert proxy["meta"]["client_auth"] is False and PLANTED not in opened.output


def test_an_api_key_flag_is_refused_with_the_secret_variable_as_fix():
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", json.dumps({"vllm_engine_role_args": {"prefill": {
        "api-key": PLANTED}}}), check=False)
    assert result.returncode != 0
    assert "api-key in vllm_engine_args / vllm_engine_role_args would show the key in every output. Fix: remove it and set " \
        "vllm_engine_secret_env: {VLLM_API_KEY: ...}" in " ".join(result.output.split())
    assert "TRIPWIRE" not in result.output and PLANTED not in result.output
