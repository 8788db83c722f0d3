# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the log bundle holds and what it masks."""

from __future__ import annotations

import json

from ansible_collections.llmops.inference.plugins.module_utils.operations import _bundle as bundle
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch


def test_secret_looking_env_values_are_masked_in_docker_inspect():
    env = ["HF_TOKEN=hf_abc", "MY_API_KEY=k1", "DB_PASSWORD=", "PATH=/usr/bin", "NO_EQUALS"]
    inspect = json.dumps([{"Name": "/a", "Config": {"Env": env}}])
    env = json.loads(bundle.mask_inspect(inspect))[0]["Config"]["Env"]
    assert env == ["HF_TOKEN=<secret>", "MY_API_KEY=<secret>", "DB_PASSWORD=", "PATH=/usr/bin", "NO_EQUALS"]
    assert bundle.mask_inspect("not json") == "not json"


def test_secret_values_are_redacted_wherever_they_appear():
    sources = {"secret_env": {"VLLM_API_KEY": "key-123456"}, "env": {"HF_TOKEN": "hf_abcdef", "OMP_NUM_THREADS": "10"},
               "role_env": {"decode": {"X_SECRET": "xs-999999"}, "prefill": None}}
    secrets = bundle.secret_strings(sources)
    assert secrets == ["hf_abcdef", "key-123456", "xs-999999"]  # OMP_NUM_THREADS's 10 is no secret
    text = "argv --key key-123456 token hf_abcdef; 10 threads"
    assert bundle.redact(text, secrets) == "argv --key <secret> token <secret>; 10 threads"
    assert bundle.redact("a b c", ["", "a"]) == "a b c"  # values too short to be secrets would mangle every log


def test_container_logs_merge_both_streams_in_time_order():
    out = "2026-11-30T08:00:01.000Z ready\n2026-11-30T08:00:03.000Z request\n"
    err = "2026-11-30T08:00:02.000Z warning\n"
    assert bundle.merged_log(out, err).splitlines() == [
        "2026-11-30T08:00:01.000Z ready", "2026-11-30T08:00:02.000Z warning", "2026-11-30T08:00:03.000Z request"]
    assert bundle.merged_log("", "") == ""


def test_the_plan_part_holds_each_spec_and_rendered_config_and_the_manifest_sizes():
    spec = launch.new_spec(name="vllm-decode-dp0", host="d0", image="i", env={"ASCEND_RT_VISIBLE_DEVICES": "2,3", "VLLM_API_KEY": "<secret>"},
                           files={"/etc/llmops/mooncake/mooncake.json": "{}"})
    entries = bundle.plan_entries([spec])
    assert set(entries) == {"plan/d0/vllm-decode-dp0.json", "plan/d0/files/etc/llmops/mooncake/mooncake.json"}
    assert json.loads(entries["plan/d0/vllm-decode-dp0.json"])["env"]["VLLM_API_KEY"] == "<secret>"
    manifest = json.loads(bundle.manifest("pd", "20261130T080000Z", ["d0"], entries, ["d1: nothing collected"]))
    assert manifest["files"]["plan/d0/files/etc/llmops/mooncake/mooncake.json"] == 2 and manifest["problems"] == ["d1: nothing collected"]


def test_the_manifest_says_which_container_is_which_instances():
    engine = launch.new_spec(name="vllm-decode-b-dp1", host="d1", image="i",
                             meta={"kind": "engine", "role": "decode", "instance": "decode-b", "dp_ranks": [1]})
    proxy = launch.new_spec(name="pd-proxy", host="p0", image="i", meta={"kind": "service", "role": "pd_proxy"})
    manifest = json.loads(bundle.manifest("pd", "20261130T080000Z", ["d1", "p0"], {}, [], [engine, proxy]))
    assert manifest["containers"] == {
        "d1/vllm-decode-b-dp1": {"kind": "engine", "role": "decode", "instance": "decode-b", "dp_ranks": [1]},
        "p0/pd-proxy": {"kind": "service", "role": "service", "instance": None, "dp_ranks": None}}
