# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What verify asks of a cluster and how it reads the counters."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.llmops.inference.plugins.module_utils._text import parse_metrics
from ansible_collections.llmops.inference.plugins.module_utils.operations import _verify as verify
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv


def spec(**fields):
    """A hand-made spec with the meta the plan would give it."""
    return argv_meta.with_meta(launch.new_spec(**fields))


PAGE = """# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="glm"} 256.0
vllm:prefix_cache_hits_total{engine="1",model_name="glm"} 128.0
vllm:prefix_cache_queries_total{engine="0",model_name="glm"} 600.0
vllm:external_prefix_cache_hits_total{engine="0",model_name="glm"} 0
vllm:time_to_first_token_seconds_bucket{le="0.1"} 3
master_key_count 5
"""


def engine(name, host, ready, role_flags=()):
    return spec(name=name, host=host, image="i", command=["vllm", "serve", "/m", "--served-model-name", "glm", *role_flags],
                ready=ready)


def test_parse_metrics_sums_every_series_of_a_name():
    found = parse_metrics(PAGE)
    assert found[verify.PREFIX_HITS] == 384 and found[verify.PREFIX_QUERIES] == 600
    assert found[verify.EXTERNAL_HITS] == 0 and found["master_key_count"] == 5
    assert found["vllm:time_to_first_token_seconds_bucket"] == 3
    assert parse_metrics("") == {} and parse_metrics("garbage line here\n") == {}


def test_targets_pick_the_proxy_as_front_and_leave_decode_out_of_the_repeated_prompt():
    specs = [
        spec(name="master", host="p0", image="m", command=["mooncake_master"], ready={"http": "http://10.0.0.1:9003/metrics"}),
        engine("vllm-prefill-dp0", "p0", {"http": "http://10.0.0.1:9081/v1/models"}),
        engine("vllm-prefill-dp1", "p0", {"log": "init engine"}),
        engine("vllm-decode-dp0", "d0", {"http": "http://10.0.0.2:9900/v1/models"}),
        spec(name="pd-proxy", host="p0", image="i", command=["python", "proxy.py"], ready={"http": "http://10.0.0.1:8081/healthcheck"}),
    ]
    found = verify.targets(specs)
    assert found["front"]["name"] == "pd-proxy" and found["model"] == "glm"
    assert [s["name"] for s in found["api"]] == ["vllm-prefill-dp0", "vllm-decode-dp0"]
    assert [s["name"] for s in found["counting"]] == ["vllm-prefill-dp0"]
    assert [s["name"] for s in found["decode"]] == ["vllm-decode-dp0"]
    assert [s["name"] for s in found["services"]] == ["master"]
    assert verify.base_url(specs[1]) == "http://10.0.0.1:9081"
    with pytest.raises(ValueError, match="vllm-prefill-dp1 on p0 serves no API"):
        verify.base_url(specs[2])


def test_without_a_proxy_the_first_api_rank_is_the_front():
    found = verify.targets([engine("vllm", "n0", {"http": "http://10.0.0.1:8000/v1/models"})])
    assert found["front"]["name"] == "vllm" and found["proxy"] is None and found["decode"] == []


def test_reuse_is_a_hit_of_either_cache_and_a_pd_decode_must_take_kv():
    zero = dict.fromkeys(verify.CACHE_METRICS, 0.0)
    assert verify.reuse_findings({"p": dict(zero, **{verify.PREFIX_HITS: 256})}, {"d": dict(zero, **{verify.EXTERNAL_HITS: 5})}, pd=True) == []
    assert verify.reuse_findings({"p": dict(zero, **{verify.EXTERNAL_HITS: 128})}, {}, pd=False) == []
    problems = verify.reuse_findings({"p": zero}, {"d": zero}, pd=True)
    assert problems[0].startswith("a prompt sent twice to p hit no cache")
    assert problems[1] == ("the completion through the proxy loaded no KV on any decode rank "
                           "(vllm:external_prefix_cache_hits_total did not rise on d)")


def test_long_prompts_are_new_each_run_and_span_several_blocks():
    first, second = verify.long_prompt("a1"), verify.long_prompt("b2")
    assert first != second and len(first.split()) == 600 and first.split()[1:] == second.split()[1:]


def test_report_lists_endpoints_the_completion_and_counters():
    lines = verify.report(
        [{"endpoint": "vllm (n0)", "check": "/v1/models", "ok": True, "seconds": 0.012}],
        {"front": "pd-proxy", "status": 200, "ttft": 0.05, "seconds": 0.08, "text": "tok0 tok1"},
        {"vllm": {"before": {verify.PREFIX_HITS: 0.0}, "after": {verify.PREFIX_HITS: 256.0}},
         "idle": {"before": {verify.PREFIX_HITS: 3.0}, "after": {verify.PREFIX_HITS: 3.0}}},
        {"master": verify.service_changes({"a": 1.0, "b": 2.0}, {"a": 4.0, "b": 2.0, "c": 1.0})})
    assert lines[1].split() == ["vllm", "(n0)", "/v1/models", "ok", "12", "ms"]
    assert lines[2] == "completion through pd-proxy: HTTP 200, time to first token 50 ms, total 80 ms, text 'tok0 tok1'"
    assert lines[3] == "vllm: prefix_cache_hits_total 0 -> 256"
    assert lines[4] == "cache counters unchanged on idle"
    assert lines[5] == "master metrics: a +3, c +1"


def test_a_pool_is_shown_shared_when_an_engine_after_the_first_finds_its_blocks():
    zero = dict.fromkeys(verify.CACHE_METRICS, 0.0)
    counting = {"p0": dict(zero, **{verify.PREFIX_HITS: 512}), "p1": dict(zero, **{verify.EXTERNAL_HITS: 512}), "p2": zero}
    shared = verify.pool_sharing(["p0", "p1", "p2"], counting)
    assert shared == {"first": "p0", "found": {"p1": 512}, "missed": ["p2"]}
    assert verify.pool_line(shared) == "KV pool shared: p1 found the blocks p0 stored (p1 512 tokens)"
    # the first engine's own external hits prove nothing about sharing
    alone = verify.pool_sharing(["p0", "p1"], {"p0": dict(zero, **{verify.EXTERNAL_HITS: 512}), "p1": zero})
    assert alone["found"] == {} and verify.pool_line(alone).startswith("KV pool NOT shown shared: no engine after p0")
    # one pooled engine, or an engine whose counters were not read, shows nothing either way
    assert verify.pool_sharing(["p0"], counting) is None and verify.pool_sharing(["p0", "px"], counting) is None
    assert verify.pool_line(None) is None


def test_only_engines_the_plan_gives_a_pool_count_as_pooled():
    """meta's pool comes from mooncake_master / memcache_pool's addon (test_lab_plans.py holds it equal to the
    engines' AscendStoreConnector in every lab plan)."""
    plain = engine("q", "n0", {}, ["--kv-transfer-config", '{"kv_connector":"UCMConnector"}'])
    pooled = dict(plain, meta=dict(plain["meta"], pool={"backend": "mooncake", "bytes_per_worker": 1 << 30}))
    assert spec_meta.uses_pool(pooled) and not spec_meta.uses_pool(plain)


def test_the_long_prompt_goes_once_more_than_the_engines_behind_an_api_server():
    front = engine("dp0", "n0", {}, ["--data-parallel-size", "2", "--data-parallel-size-local", "1", "--api-server-count", "1"])
    per_rank = engine("p0", "n0", {}, ["--data-parallel-size", "8", "--data-parallel-rank", "0"])
    assert [verify.repeats(s) for s in (front, per_rank, engine("one", "n0", {}))] == [3, 2, 2]


def test_a_pd_answer_that_is_not_the_prefills_own_is_found_where_it_first_differs():
    assert verify.disagreement("tok1 tok2 tok3", "tok1 tok2 tok3") is None
    found = verify.disagreement("tok1 tokX tok3", "tok1 tok2 tok3")
    assert found == {"at": 8, "pd": "X tok3", "alone": "2 tok3"}
    assert verify.disagreement("tok1", "tok1 tok2") == {"at": 4, "pd": "", "alone": " tok2"}  # one answer stops short
    text = verify.disagreement_text(found, "the decode", "the prefill", 8)
    assert text.startswith("the decode answers other text than the prefill alone to the same greedy prompt, from character 8 "
                           "('X tok3' against '2 tok3'), within the first 8 tokens") and "#14545" in text
    assert verify.greedy_request("m", "p", 4)["max_tokens"] == 4 and verify.decode_request("m", "p", {}, 4)["max_tokens"] == 4
