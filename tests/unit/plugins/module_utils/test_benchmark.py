# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark's workloads, report rows, hit shares and comparison with a baseline."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.services import _benchmark as bench

# the keys vllm bench serve (vLLM 0.32, vllm/benchmarks/serve.py) writes with --save-result and
# --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99
RESULT = {"duration": 20.0, "completed": 128, "failed": 0, "total_input_tokens": 131072, "total_output_tokens": 16384,
          "request_throughput": 6.4, "request_goodput": 5.9, "output_throughput": 819.2, "total_token_throughput": 7372.8,
          "mean_ttft_ms": 180.0, "median_ttft_ms": 150.0, "p50_ttft_ms": 150.0, "p99_ttft_ms": 620.0,
          "p50_tpot_ms": 21.0, "p99_tpot_ms": 40.0, "p50_itl_ms": 20.0, "p99_itl_ms": 55.0, "p50_e2el_ms": 2900.0}


def test_the_default_workloads_sweep_up_to_the_decode_sequences_of_9_2():
    found = bench.points(bench.DEFAULT_WORKLOADS)
    assert [(p["workload"], p["sweep"], p["value"]) for p in found] == [
        ("random", "concurrency", 1), ("random", "concurrency", 8), ("random", "concurrency", 32),
        ("shared_prefix", "concurrency", 8), ("shared_prefix", "concurrency", 32)]
    shared = found[-1]["argv"]
    assert shared[:10] == ["--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", "896",
                           "--prefix-repetition-suffix-len", "128", "--prefix-repetition-num-prefixes", "4",
                           "--prefix-repetition-output-len", "128"]
    assert shared[-2:] == ["--max-concurrency", "32"] and "--goodput" not in shared


def test_rates_and_slos_become_flags():
    (point,) = bench.points({"w": {"input_len": 512, "output_len": 64, "prefix_len": 256, "request_rates": [2],
                                   "goodput": {"ttft": 2000, "tpot": 50}}})
    argv = point["argv"]
    assert argv[argv.index("--random-prefix-len") + 1] == "256" and argv[-2:] == ["--request-rate", "2"]
    assert argv[argv.index("--goodput") + 1:argv.index("--goodput") + 3] == ["tpot:50", "ttft:2000"]


@pytest.mark.parametrize("workloads, wanted", [
    ({"w": {"concurrencies": [1], "input_lenght": 5}}, "llmops_benchmark_workloads.w.input_lenght: is no setting of a workload"),
    ({"w": {"dataset": "sharegpt", "concurrencies": [1]}}, "llmops_benchmark_workloads.w.dataset: 'sharegpt' is not one of"),
    ({"w": {"goodput": {"ttft": 100}}}, "llmops_benchmark_workloads.w.goodput: SLOs without a sweep measure nothing"),
    ({"w": {"concurrencies": [1], "request_rates": [1]}}, "gives both request_rates and concurrencies"),
    ({"w": {"concurrencies": [1], "goodput": {"ttfb": 100}}}, "llmops_benchmark_workloads.w.goodput.ttfb: is no SLO"),
    ({"w": {"concurrencies": [1], "num_prompts": 0}}, "llmops_benchmark_workloads.w.num_prompts: must be a positive whole number"),
])
def test_bad_workloads_are_refused_naming_the_variable(workloads, wanted):
    with pytest.raises(bench.WorkloadError) as err:
        bench.points(workloads)
    assert any(wanted in p and "Fix:" in p for p in err.value.problems), err.value.problems


def test_hit_shares_tell_local_cache_pd_transfer_and_pool_apart():
    before = {"p0": {"role": "prefill", "metrics": {bench.PREFIX_QUERIES: 100.0, bench.PREFIX_HITS: 10.0, bench.EXTERNAL_HITS: 0.0}},
              "d0": {"role": "decode", "metrics": {bench.PREFIX_QUERIES: 0.0, bench.EXTERNAL_HITS: 0.0}}}
    after = {"p0": {"role": "prefill", "metrics": {bench.PREFIX_QUERIES: 1100.0, bench.PREFIX_HITS: 410.0, bench.EXTERNAL_HITS: 200.0}},
             "d0": {"role": "decode", "metrics": {bench.PREFIX_QUERIES: 1000.0, bench.EXTERNAL_HITS: 900.0, bench.PREEMPTIONS: 2.0}}}
    shares = bench.hit_shares(before, after)
    # the prefill was asked 1000 tokens: 400 from its cache, 200 from the pool; the decode got 900 of its 1000 by transfer
    assert shares == {"local": 0.4, "transfer": 0.9, "pool": 0.2, "prompt_tokens": 1000.0, "preemptions": 2.0}


def test_the_table_and_a_baseline_comparison_mark_what_got_worse():
    (point,) = bench.points({"random": {"concurrencies": [8]}})
    shares = {"local": 0.5, "transfer": 0.25, "pool": 0.0}
    now = bench.row(point, dict(RESULT, p99_ttft_ms=900.0, request_throughput=6.5), shares)
    then = bench.row(point, RESULT, shares)
    lines = bench.table([now])
    assert lines[0].split()[:4] == ["WORKLOAD", "SWEEP", "COMPLETED", "FAILED"] and "concurrency 8" in lines[1] and "50%" in lines[1]
    found = bench.compare([now], [then], threshold=0.1)
    assert found["regressions"] == ["random concurrency 8: TTFT p99 620 -> 900 (+45.2%)  REGRESSION (beyond 10%)"]
    assert "random concurrency 8: req/s 6.40 -> 6.50 (+1.6%)" in found["lines"]  # better: no mark
    assert bench.compare([now], [], 0.1)["lines"] == ["random concurrency 8: not in the baseline"]


def test_a_baseline_of_another_shape_is_refused():
    specs = [{"host": "p0", "name": "vllm-prefill-dp0", "devices": ["/dev/davinci0"], "image": "a"},
             {"host": "d0", "name": "vllm-decode-dp0", "devices": ["/dev/davinci0"], "image": "a"}]
    now = bench.shape(specs)
    assert bench.same_shape(now, bench.shape([dict(spec, image="b") for spec in specs])) == []  # a new image compares
    grown = bench.shape(specs + [{"host": "d1", "name": "vllm-decode-dp1", "devices": ["/dev/davinci0"]}])
    problem = bench.same_shape(now, grown)
    assert len(problem) == 1 and problem[0].startswith("llmops_benchmark_baseline: that run measured a cluster of another shape")
    assert "only there: d1/vllm-decode-dp1 /dev/davinci0; only here: -" in problem[0]


def test_unset_workloads_are_the_defaults_and_none_is_refused():
    assert {p["workload"] for p in bench.points(None)} == set(bench.DEFAULT_WORKLOADS)
    assert all("--ignore-eos" in p["argv"] for p in bench.points(None))
    with pytest.raises(bench.WorkloadError, match="llmops_benchmark_workloads: names no workload"):
        bench.points({})


def test_a_point_row_line_and_plot_series_come_from_the_module_result():
    (point,) = bench.points({"random": {"concurrencies": [8]}})
    run = {"result": RESULT, "before": {"p0": {"role": "prefill", "metrics": {bench.PREFIX_QUERIES: 0.0}}},
           "after": {"p0": {"role": "prefill", "metrics": {bench.PREFIX_QUERIES: 100.0, bench.PREFIX_HITS: 25.0}}}}
    found = bench.point_row(point, run)
    assert found["shares"]["local"] == 0.25 and found["p99_ttft_ms"] == RESULT["p99_ttft_ms"]
    assert bench.line(found).startswith("random concurrency 8: %s of %s completed" % (RESULT["completed"], RESULT["completed"] + RESULT["failed"]))
    assert "the local cache 25%" in bench.line(found)
    series = bench.plot_series([found])
    assert series["random TTFT P99"] == [(RESULT["output_throughput"], RESULT["p99_ttft_ms"])]
