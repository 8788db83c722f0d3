# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A planted secret appears in no output of a plan run at -vvv, nor in the plan files."""

from __future__ import annotations

import json
import re

from conftest import LAB, NO_CONNECT, run_playbook

PLANTED = "s3cr3t-planted-4711-9c2e7a1b"  # strong enough for the planner, findable in any output


def test_a_planted_secret_appears_in_no_plan_output(tmp_path):
    secrets = {"vllm_engine_secret_env": {"VLLM_API_KEY": PLANTED, "HF_TOKEN": "hf-" + PLANTED},
               "vllm_engine_env": {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "VLLM_USE_V2_MODEL_RUNNER": "0",
                                   "HCCL_OP_EXPANSION_MODE": "AIV", "HCCL_BUFFSIZE": "1024",
                                   "VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "3000", "HCCL_EXEC_TIMEOUT": "3600",
                                   "HCCL_CONNECT_TIMEOUT": "1200", "VLLM_RPC_TIMEOUT": "3600000", "OMP_PROC_BIND": "false",
                                   "OMP_NUM_THREADS": "10", "MY_SERVICE_PASSWORD": "pw-" + PLANTED},
               # the front door's own keys: two client keys while rotating, one admin key
               "pd_proxy_client_keys": ["client-" + PLANTED, "client2-" + PLANTED], "pd_proxy_admin_keys": ["admin-" + PLANTED]}
    plan_dir = tmp_path / "plan"
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-vvv", "-e", json.dumps(secrets),
                          "-e", "llmops_plan_dir=%s" % plan_dir)
    assert PLANTED not in result.output
    assert "MY_SERVICE_PASSWORD in vllm_engine_env / vllm_engine_role_env look secret" in " ".join(result.output.split())
    files = {path.name: path.read_text() for path in plan_dir.glob("*/*.json")}
    assert len(files) == 11 and not any(PLANTED in text for text in files.values())
    decode = json.loads(files["vllm-ascend-decode-dp0.json"])
    assert decode["env"]["MY_SERVICE_PASSWORD"] == "<secret>"
    assert decode["secret_env"]["names"] == ["HF_TOKEN", "MY_SERVICE_PASSWORD", "VLLM_API_KEY"]
    # the keys that open the cluster go as files (never an environment docker inspect shows), the engines' to its guard,
    # and so does the Hugging Face token (huggingface_hub reads the file HF_TOKEN_PATH names)
    assert "VLLM_API_KEY" not in decode["env"] and "HF_TOKEN" not in decode["env"]
    assert sorted(decode["secret_env"]["files"]) == ["HF_TOKEN", "VLLM_API_KEY"]
    assert decode["env"]["HF_TOKEN_PATH"] == "/run/llmops/secrets/HF_TOKEN"
    assert decode["command"][-2:] == ["--middleware", "llmops_key_guard.EngineGuard"]
    proxy = json.loads(files["pd-proxy.json"])  # the proxy's Bearer token to the engines: the same key, as a file
    names = ["OPENAI_API_KEY", "LLMOPS_FRONT_DOOR_KEYS", "LLMOPS_FRONT_DOOR_ADMIN_KEYS"]
    assert not set(names) & set(proxy["env"]) and sorted(proxy["secret_env"]["files"]) == sorted(names)
    assert proxy["secret_env"]["aliases"] == {"OPENAI_API_KEY": "VLLM_API_KEY"}
    assert proxy["meta"]["client_auth"] and proxy["meta"]["admin_auth"]


def test_secure_by_default_an_admin_key_is_made_once_and_opening_a_guard_is_named(tmp_path):
    """The lab names a client key and its clients' network; the admin key is made once on the controller (0600, in a
    0700 directory), reused by the next run and printed by none; a front door without client keys, a weak key or an
    open guard is refused or named."""
    key_file = tmp_path / "credentials" / "pd_a2" / "pd_proxy_admin_key"
    made = ("-e", "pd_proxy_admin_key_file=%s" % key_file)
    first = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), *made, "-e", "llmops_plan_dir=%s" % (tmp_path / "one"))
    key = key_file.read_text().strip()
    assert len(key) == 43 and oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert oct(key_file.parent.stat().st_mode & 0o777) == "0o700"
    second = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), *made, "-e", "llmops_plan_dir=%s" % (tmp_path / "two"))
    assert key_file.read_text().strip() == key and key not in first.output + second.output
    proxies = [json.loads((tmp_path / run / "pd_a2_p0" / "pd-proxy.json").read_text()) for run in ("one", "two")]
    assert proxies[0]["secret_env"]["digest"] == proxies[1]["secret_env"]["digest"]  # the same key: no restart
    assert proxies[0]["meta"]["client_auth"] and proxies[0]["meta"]["admin_auth"]
    # the lab opens one guard, by name: the seeds' engines take an image per prompt from any domain (004)
    assert re.findall(r"open by choice: ([^.\n]*)", first.output) == [
        "vllm_engine_open_media_fetch is true: the engines fetch media from any URL a client names"]
    shut = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), *made, "-e", json.dumps({"vllm_engine_open_media_fetch": False}),
                        "-e", "llmops_plan_dir=%s" % (tmp_path / "shut"), check=False)
    assert shut.returncode != 0 and not (tmp_path / "shut").exists()
    assert "sets limit-mm-per-prompt (the engines take media), but no allowed-media-domains, so any client could make the " \
        "engines fetch any URL" in " ".join(shut.output.split())
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), *made, "-e", json.dumps({"pd_proxy_client_keys": []}),
                          "-e", "llmops_plan_dir=%s" % (tmp_path / "refused"), check=False)
    assert result.returncode != 0 and not (tmp_path / "refused").exists()
    assert "cluster pd_a2: the PD proxy, the cluster's front door, would serve anyone: pd_proxy_client_keys is empty." \
        in " ".join(result.output.split())
    weak = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), *made, "-e", json.dumps({"pd_proxy_client_keys": ["client-4711"]}),
                        check=False)
    assert weak.returncode != 0 and "client-4711" not in weak.output
    assert "cluster pd_a2: pd_proxy_client_keys[0] is a key of about 67 bits, below the 128" in " ".join(weak.output.split())
    opened = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), *made, "-e", json.dumps(
        {"pd_proxy_client_keys": [], "pd_proxy_open_front_door": True, "host_firewall_enabled": False}),
        "-e", "llmops_plan_dir=%s" % (tmp_path / "open"))
    proxy = json.loads((tmp_path / "open" / "pd_a2_p0" / "pd-proxy.json").read_text())
    assert proxy["meta"]["client_auth"] is False and proxy["meta"]["admin_auth"]
    said = " ".join(opened.output.split())
    assert "cluster pd_a2, open by choice: host_firewall_enabled is false: every port the plan binds" in said
    assert "cluster pd_a2, open by choice: pd_proxy_open_front_door is true: the front door serves completions to " \
        "clients without a key." in said


def test_an_api_key_flag_is_refused_with_the_secret_variable_as_fix():
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", json.dumps({"vllm_engine_role_args": {"prefill": {
        "api-key": PLANTED}}}), check=False)
    assert result.returncode != 0
    assert "api-key in vllm_engine_args / vllm_engine_role_args would show the key in every output. Fix: remove it and set " \
        "vllm_engine_secret_env: {VLLM_API_KEY: ...}" in " ".join(result.output.split())
    assert "TRIPWIRE" not in result.output and PLANTED not in result.output
