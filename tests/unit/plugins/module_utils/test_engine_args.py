# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The vllm serve flags an inventory gives: plan-owned, unknown, ill-typed, P/D-shared, the model."""

from __future__ import annotations

import os

import pytest
import seed_clusters as seeds

from ansible_collections.llmops.inference.plugins.module_utils.plan import _engine_args as engine_args
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.plan._vllm_serve_flags import FLAGS, VLLM_VERSION

LAB = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "inventories", "lab")
MOUNTS = ["/root/.cache:/root/.cache", "/usr/local/Ascend/driver:/usr/local/Ascend/driver"]
# pd_a2's own flags (inventories/lab/group_vars/pd_a2.yml): the seed's differences by role plan as they are
PD_A2_ARGS = {"enable-expert-parallel": True, "served-model-name": "glm", "max-model-len": 200000, "quantization": "ascend",
              "speculative-config": {"num_speculative_tokens": 3, "method": "deepseek_mtp", "enforce_eager": True}}
PD_A2_ROLE_ARGS = {"prefill": {"max-num-seqs": 64, "gpu-memory-utilization": "0.92", "enforce-eager": True},
                   "decode": {"max-num-seqs": 32, "gpu-memory-utilization": "0.85", "skip-mm-profiling": True,
                              "compilation-config": {"cudagraph_mode": "FULL_DECODE_ONLY"}}}


def pd_a2(args=None, role_args=None, **extra):
    cluster = seeds.pd_a2()
    cluster.update(model="/root/.cache/GLM-5.3-Flash-w8a8", mounts=list(MOUNTS), args=dict(PD_A2_ARGS, **(args or {})),
                   role_args={role: dict(PD_A2_ROLE_ARGS[role], **((role_args or {}).get(role) or {})) for role in PD_A2_ROLE_ARGS})
    cluster.update(extra)
    return cluster


def problems(cluster):
    with pytest.raises(PlanError) as err:
        plan_cluster(cluster)
    return [str(p) for p in err.value.problems]


def test_the_seed_flags_and_their_role_differences_plan():
    assert plan_cluster(pd_a2())["processes"]


@pytest.mark.parametrize("key", ["--tensor-parallel-size", "tensor-parallel-size", "tensor_parallel_size"])
def test_a_plan_owned_flag_is_refused_in_every_spelling_vllm_reads(key):
    (problem,) = problems(pd_a2(args={key: 4}))
    assert problem.startswith("cluster pd_a2: vllm_engine_args.%s: --tensor-parallel-size is rendered by the plan itself" % key)
    assert problem.endswith("Fix: remove it and set vllm_engine_groups.<role>.tp_size.")


@pytest.mark.parametrize("flag,variable", [("port", "api_port"), ("data-parallel-rpc-port", "dp_rpc_port"),
                                           ("kv_transfer_config", "vllm_engine_connector"), ("model", "vllm_engine_model"),
                                           ("headless", "vllm_engine_headless"), ("data-parallel-start-rank", "vllm_engine_rank_start"),
                                           ("host", "remove it: every engine binds 0.0.0.0")])
def test_each_plan_owned_flag_names_the_variable_to_set_instead(flag, variable):
    (problem,) = problems(pd_a2(role_args={"decode": {flag: 1}}))
    assert "vllm_engine_role_args.decode.%s: --%s is rendered by the plan" % (flag, flag.replace("_", "-")) in problem
    assert variable in problem.split("Fix: ")[1]


def test_an_unknown_flag_gets_the_closest_real_one_and_a_short_form_its_long_name():
    found = problems(pd_a2(args={"max-model-length": 4096, "tp": 8}))
    assert any("vllm_engine_args.max-model-length: vLLM has no flag --max-model-length (the flags of vLLM 0.30.0's vllm serve)."
               " Fix: write max-model-len; if your image's vLLM has it, list it in vllm_engine_known_flags." in p for p in found), found
    assert any("vllm_engine_args.tp: vLLM has no flag --tp" in p and "Fix: write tensor-parallel-size (the collection renders"
               in p for p in found), found


def test_a_negated_boolean_and_a_long_alias_are_the_flags_vllm_reads(monkeypatch):
    assert engine_args.canonical("no-enable-prefix-caching") == ("enable-prefix-caching", True)
    # vLLM 0.32 spells --gpu-memory-utilization also --device-memory-utilization (0.30 has no second long name)
    monkeypatch.setitem(engine_args.LONG_ALIASES, "device-memory-utilization", "gpu-memory-utilization")
    assert engine_args.canonical("--device_memory_utilization") == ("gpu-memory-utilization", False)
    assert engine_args.canonical("compilation-config.cudagraph_mode") == ("compilation-config", False)
    assert engine_args.canonical("no-max-model-len") == (None, False)  # not a boolean: no negation
    plan_cluster(pd_a2(role_args={"decode": {"no-enable-prefix-caching": True}}))


def test_one_flag_in_two_spellings_is_refused():
    found = problems(pd_a2(args={"max_num_seqs": 16}, role_args={"prefill": {"block_size": 128}, "decode": {"block-size": 128}}))
    assert [p.split(": --")[0] for p in found] == ["cluster pd_a2: vllm_engine_role_args.decode.max-num-seqs",
                                                   "cluster pd_a2: vllm_engine_role_args.prefill.max-num-seqs"], found
    assert ("--max-num-seqs is also given as max_num_seqs in vllm_engine_args: both would reach the decode engines. "
            "Fix: keep one: set max_num_seqs: null under vllm_engine_role_args.decode") in found[0]
    (problem,) = problems(pd_a2(args={"enable-prefix-caching": True}, role_args={"decode": {"no-enable-prefix-caching": True}}))
    assert "vllm_engine_role_args.decode.no-enable-prefix-caching: --enable-prefix-caching is also given as" in problem
    # null under the role drops the cluster-wide key, as the launch specs do: then the role's own spelling is the only one
    plan_cluster(pd_a2(args={"enable-prefix-caching": True},
                       role_args={"decode": {"enable-prefix-caching": None, "no-enable-prefix-caching": True}}))


@pytest.mark.parametrize("flag,value,why", [
    ("max-num-seqs", "many", "takes an integer"),
    ("max-model-len", "200 thousand", "takes an integer (200000, 200k or 2K)"),
    ("gpu-memory-utilization", "most", "takes a number"),
    ("enforce-eager", "yes", "takes no value (true sets it, false or null leaves it out)"),
    ("seed", True, "takes a value, not true"),
    ("dtype", "fp4", "takes one of auto, bfloat16, float, float16, float32, half"),
    ("limit-mm-per-prompt", "{image: 1}", "takes a JSON object"),
    ("max-num-batched-tokens", [8192], "takes one plain value"),
])
def test_a_value_vllm_would_refuse_is_refused(flag, value, why):
    (problem,) = problems(pd_a2(args={flag: value}))
    assert problem.startswith("cluster pd_a2: vllm_engine_args.%s: --%s %s" % (flag, flag, why)), problem


@pytest.mark.parametrize("flag,value", [("max-model-len", "128k"), ("max-model-len", "2K"), ("kv-cache-dtype", "int8"),
                                        ("prefix-cache-retention-interval", "None"), ("gpu-memory-utilization", 0.9),
                                        ("enable-prefix-caching", False), ("compilation-config", '{"cudagraph_mode": "NONE"}')])
def test_values_vllm_takes_plan(flag, value):
    plan_cluster(pd_a2(args={flag: value}))


def test_a_secret_flag_value_never_shows():
    found = engine_args.flag_problems(engine_args_cluster(args={"api-key": ["x"], "hf-token": True}))
    assert all("x" not in p.message.split("got ")[-1] for p in found)
    assert engine_args._shown("api-key", "planted-value") == "<secret>"


def engine_args_cluster(**fields):
    from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import parse_cluster
    return parse_cluster(dict(pd_a2(), **fields))


@pytest.mark.parametrize("role_args,expected", [
    ({"prefill": {"block-size": 128}},
     "vllm_engine_role_args.prefill.block-size: prefill has --block-size 128 (vllm_engine_role_args.prefill), decode not set "
     "(vLLM's default); KV moves between them block by block: a block size mismatch garbles the output with HTTP 200 "
     "(vllm-ascend #14545"),
    ({"decode": {"served-model-name": "glm-decode"}},
     "vllm_engine_role_args.decode.served-model-name: prefill has --served-model-name glm (vllm_engine_args), decode glm-decode "
     "(vllm_engine_role_args.decode)"),
    ({"decode": {"kv-cache-dtype": "int8"}, "prefill": {"kv-cache-dtype": "auto"}}, "prefill has --kv-cache-dtype auto"),
    ({"decode": {"max-model-len": "128k"}}, "prefill has --max-model-len 200000 (vllm_engine_args), decode 128k"),
    ({"decode": {"speculative-config": {"method": "deepseek_mtp", "num_speculative_tokens": 1}}},
     "Fix: set --speculative-config once in vllm_engine_args, or give both roles the same value (method, model, num_speculative_tokens)"),
    ({"prefill": {"quantization": None}}, "prefill has --quantization not set (vllm_engine_role_args.prefill (null: vLLM's default))"),
])
def test_settings_prefill_and_decode_must_share_name_both_values_and_their_sources(role_args, expected):
    (problem,) = problems(pd_a2(role_args=role_args))
    assert expected in problem, problem


@pytest.mark.parametrize("role_args", [
    {"prefill": {"max-model-len": 100000}},  # decode accepts more than prefill: fine
    {"decode": {"speculative-config": {"method": "deepseek_mtp", "num_speculative_tokens": 3, "enforce_eager": False}}},
    {"prefill": {"max-num-batched-tokens": 4096, "enforce-eager": True}, "decode": {"max-num-batched-tokens": 192}},
    {"prefill": {"block-size": 128}, "decode": {"block_size": 128}},  # one value, two spellings in two scopes
])
def test_differences_by_design_plan(role_args):
    plan_cluster(pd_a2(role_args=role_args))


def test_a_colocated_cluster_has_no_pair_to_compare():
    cluster = seeds.dp_a2()
    cluster.update(model="/root/.cache/m", mounts=MOUNTS, role_args={"colocated": {"block-size": 64}})
    plan_cluster(cluster)


def test_role_args_of_a_role_the_cluster_lacks_are_refused():
    cluster = seeds.dp_a2()
    cluster.update(model="/root/.cache/m", mounts=MOUNTS, role_args={"prefil": {"max-num-seqs": 8}})
    (problem,) = problems(cluster)
    assert "vllm_engine_role_args.prefil: the cluster has no prefil group (it has: colocated)" in problem


@pytest.mark.parametrize("model,from_hub,expected", [
    ("Eco-Tech/GLM-5.3-Flash-w8a8", False, "'Eco-Tech/GLM-5.3-Flash-w8a8' is not an absolute path: vLLM would take it for a hub id"),
    ("/path/to/GLM-5.3-Flash-w8a8", False, "/path/to/GLM-5.3-Flash-w8a8 lies in no directory mounted into the engine containers"),
    ("/root/.cachex/model", False, "lies in no directory mounted"),
])
def test_a_model_vllm_would_misread_is_refused(model, from_hub, expected):
    (problem,) = problems(pd_a2(model=model, model_from_hub=from_hub))
    assert problem.startswith("cluster pd_a2: vllm_engine_model: ") and expected in problem, problem


@pytest.mark.parametrize("model,from_hub", [("Eco-Tech/GLM-5.3-Flash-w8a8", True), ("/root/.cache", False),
                                            ("/root/.cache/GLM/", False)])
def test_a_model_vllm_finds_plans(model, from_hub):
    plan_cluster(pd_a2(model=model, model_from_hub=from_hub))


def test_a_flag_of_a_newer_image_plans_once_listed_as_known():
    (problem,) = problems(pd_a2(args={"log-level": "debug"}))  # vLLM 0.32 has it, the lab images' 0.30 not
    assert "vLLM has no flag --log-level" in problem
    plan = plan_cluster(pd_a2(args={"log_level": "debug"}, known_flags=["--log-level"]))
    assert plan["processes"]


def test_the_flag_list_is_the_vllm_of_the_lab_images():
    """vllm-ascend releases run on the vLLM release of their number (its docs' versioning policy): the lab's
    vllm-ascend images and the flag list must name one version."""
    import glob

    import yaml
    # the clusters' files (all.yml holds no image, and its client key is an ansible-vault value plain YAML cannot load)
    paths = [path for path in glob.glob(os.path.join(LAB, "group_vars", "*.yml")) if os.path.basename(path) != "all.yml"]
    tags = {yaml.safe_load(open(path)).get("vllm_engine_image", "") for path in paths}
    versions = {tag.split(":v")[1][:len(VLLM_VERSION)] for tag in tags if "/vllm-ascend:v" in tag}
    assert versions == {VLLM_VERSION}, tags


def test_every_plan_owned_and_shared_flag_is_a_real_vllm_flag():
    assert set(engine_args.PLAN_OWNED) <= set(FLAGS)
    assert {row[0] for row in engine_args.SHARED_SETTINGS} <= set(FLAGS)
    assert set(engine_args.EXTRA_CHOICES) <= set(FLAGS)


def test_human_readable_lengths_read_as_vllm_reads_them():
    assert [engine_args.human_int(v) for v in (200000, "200k", "2K", "1.5m", "12", "1.5", "x", True)] == \
        [200000, 200000, 2048, 1500000, 12, None, None, None]
