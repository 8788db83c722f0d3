# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a benchmark of a cluster runs and reports (004 8.2 and 9.2).

004 9.2: before changing --max-num-seqs / --max-num-batched-tokens, measure time to first token, time per
output token and throughput; when judging reuse, confirm the pool hits. A workload is one ``vllm bench serve``
dataset swept over request rates or concurrencies; each sweep point is one run. Around each run the engines'
and the pool service's counters are read, so a point says what share of the prompt tokens came from the local
prefix cache, from the PD transfer (external hits on decode) and from the pool (external hits on prefill).

Pure functions: the workload's argv (refusing unknown keys), one row per point from ``vllm bench serve``'s
result JSON (its key names are vLLM 0.32's, vllm/benchmarks/serve.py) and the counters, the table, and the
comparison with an earlier run.
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils._text import aligned

VARIABLE = "llmops_benchmark_workloads"
DATASETS = ("random", "prefix_repetition")
WORKLOAD_KEYS = ("dataset", "input_len", "output_len", "prefix_len", "num_prefixes", "num_prompts", "request_rates",
                 "concurrencies", "goodput")
# 9.2's lens: decode runs 32 sequences (--max-num-seqs), so the sweep climbs to it; the shared prefix is most
# of the prompt, as in the repeated prefixes 9.2 sends to the 5.4 pool
DEFAULT_WORKLOADS = {
    "random": {"dataset": "random", "input_len": 1024, "output_len": 128, "num_prompts": 128, "concurrencies": [1, 8, 32]},
    "shared_prefix": {"dataset": "prefix_repetition", "prefix_len": 896, "input_len": 128, "num_prefixes": 4,
                      "output_len": 128, "num_prompts": 128, "concurrencies": [8, 32]},
}
GOODPUT_METRICS = ("ttft", "tpot", "e2el")
# the figures a point reports and compares; higher is better for the throughputs, lower for the latencies
FIGURES = (("request_throughput", "req/s", True), ("output_throughput", "tok/s", True), ("request_goodput", "good/s", True),
           ("p50_ttft_ms", "TTFT p50", False), ("p99_ttft_ms", "TTFT p99", False), ("p50_tpot_ms", "TPOT p50", False),
           ("p99_tpot_ms", "TPOT p99", False), ("p50_itl_ms", "ITL p50", False), ("p99_itl_ms", "ITL p99", False))
PREFIX_QUERIES, PREFIX_HITS = "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"
EXTERNAL_HITS, PREEMPTIONS = "vllm:external_prefix_cache_hits_total", "vllm:num_preemptions_total"


class WorkloadError(ValueError):
    """A workload the benchmark cannot run, with every problem, each naming its variable."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = list(problems)
        super().__init__(" ".join(self.problems))


def points(workloads: Mapping[str, t.Any] | None) -> list[dict[str, t.Any]]:
    """[{workload, sweep: "concurrency" or "rate", value, argv}]: one ``vllm bench serve`` run per sweep point,
    without the target (--base-url, --model, --tokenizer) and the result file, which the play adds."""
    problems: list[str] = []
    found: list[dict[str, t.Any]] = []
    if workloads is None:
        workloads = DEFAULT_WORKLOADS
    if not workloads:
        raise WorkloadError(["%s: names no workload. Fix: give at least one, or leave it unset for the defaults." % VARIABLE])
    for name, workload in sorted(workloads.items()):
        where = "%s.%s" % (VARIABLE, name)
        if not isinstance(workload, dict):
            problems.append("%s: must be a mapping of %s. Fix: give it as in the example of docs/benchmark.md." % (where, ", ".join(WORKLOAD_KEYS)))
            continue
        problems += ["%s.%s: is no setting of a workload. Fix: use one of %s." % (where, key, ", ".join(WORKLOAD_KEYS))
                     for key in sorted(set(workload) - set(WORKLOAD_KEYS))]
        dataset = workload.get("dataset", "random")
        if dataset not in DATASETS:
            problems.append("%s.dataset: %r is not one of %s. Fix: use random or prefix_repetition (a shared prefix)."
                            % (where, dataset, ", ".join(DATASETS)))
        rates, concurrencies = workload.get("request_rates") or [], workload.get("concurrencies") or []
        if bool(rates) == bool(concurrencies):
            problems.append("%s: %s. Fix: sweep request_rates or concurrencies (a list), one of them."
                            % (where, "gives both request_rates and concurrencies" if rates else "sweeps nothing"))
        if workload.get("goodput") and not (rates or concurrencies):
            problems.append("%s.goodput: SLOs without a sweep measure nothing. Fix: add request_rates or concurrencies." % where)
        problems += _goodput_problems(where, workload.get("goodput") or {})
        problems += ["%s.%s: must be a positive whole number, got %r. Fix: give a number." % (where, key, workload[key])
                     for key in ("input_len", "output_len", "prefix_len", "num_prefixes", "num_prompts")
                     if key in workload and not (isinstance(workload[key], int) and workload[key] > 0)]
        if problems:
            continue
        base = _dataset_argv(dataset, workload) + ["--num-prompts", str(workload.get("num_prompts", 128))]
        # every request generates its output_len (a benchmark measures the workload asked, not where EOS falls)
        base += ["--ignore-eos", "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,99"]
        if workload.get("goodput"):
            base += ["--goodput"] + ["%s:%s" % item for item in sorted(workload["goodput"].items())]
        for sweep, values, flag in (("rate", rates, "--request-rate"), ("concurrency", concurrencies, "--max-concurrency")):
            for value in values:
                found.append({"workload": name, "sweep": sweep, "value": value, "argv": base + [flag, str(value)]})
    if problems:
        raise WorkloadError(problems)
    return found


def _goodput_problems(where: str, slos: t.Any) -> list[str]:
    if not isinstance(slos, dict):
        return ["%s.goodput: must map ttft, tpot or e2el to milliseconds. Fix: e.g. {ttft: 2000, tpot: 50}." % where]
    return ["%s.goodput.%s: %s. Fix: map ttft, tpot or e2el to milliseconds." % (
        where, key, "is no SLO of vllm bench serve" if key not in GOODPUT_METRICS else "must be milliseconds, got %r" % value)
        for key, value in sorted(slos.items())
        if key not in GOODPUT_METRICS or not isinstance(value, (int, float)) or value <= 0]


def _dataset_argv(dataset: str, workload: Mapping[str, t.Any]) -> list[str]:
    if dataset == "prefix_repetition":
        return ["--dataset-name", "prefix_repetition", "--prefix-repetition-prefix-len", str(workload.get("prefix_len", 896)),
                "--prefix-repetition-suffix-len", str(workload.get("input_len", 128)),
                "--prefix-repetition-num-prefixes", str(workload.get("num_prefixes", 4)),
                "--prefix-repetition-output-len", str(workload.get("output_len", 128))]
    argv = ["--dataset-name", "random", "--random-input-len", str(workload.get("input_len", 1024)),
            "--random-output-len", str(workload.get("output_len", 128))]
    if workload.get("prefix_len"):
        argv += ["--random-prefix-len", str(workload["prefix_len"])]
    return argv


def hit_shares(before: Mapping[str, t.Any] | None, after: Mapping[str, t.Any] | None) -> dict[str, float]:
    """Shares of the prompt tokens, from counters by engine ({name: {role, metrics}}) before and after a point. The
    prompts the cluster was asked are those its first engines saw (prefill, or colocated engines): of their tokens,
    ``local`` came from their own prefix cache and ``pool`` from the KV connector (UCM, a pool). A decode is asked each
    prompt again, with its KV: ``transfer`` is the share of the decodes' prompt tokens that the PD transfer brought
    (about 1 when PD works). Preemptions are counted on every engine."""
    totals = {"queries": 0.0, "local": 0.0, "pool": 0.0, "decode_queries": 0.0, "transfer": 0.0, "preemptions": 0.0}
    for name, now in (after or {}).items():
        then = (before or {}).get(name) or {"metrics": {}}

        def moved(metric: str) -> float:
            return float(now["metrics"].get(metric, 0.0) - then["metrics"].get(metric, 0.0))  # noqa: B023  called in this iteration only

        if now.get("role") == "decode":
            totals["decode_queries"] += moved(PREFIX_QUERIES)
            totals["transfer"] += moved(EXTERNAL_HITS)
        else:
            totals["queries"] += moved(PREFIX_QUERIES)
            totals["local"] += moved(PREFIX_HITS)
            totals["pool"] += moved(EXTERNAL_HITS)
        totals["preemptions"] += moved(PREEMPTIONS)

    def share(part: str, whole: str) -> float:
        return totals[part] / totals[whole] if totals[whole] else 0.0
    return {"local": share("local", "queries"), "pool": share("pool", "queries"), "transfer": share("transfer", "decode_queries"),
            "prompt_tokens": totals["queries"], "preemptions": totals["preemptions"]}


def row(point: Mapping[str, t.Any], result: Mapping[str, t.Any], shares: Mapping[str, float]) -> dict[str, t.Any]:
    """One point's figures: the sweep, what ``vllm bench serve`` measured and the hit shares."""
    figures = {key: result.get(key) for key, _label, _higher in FIGURES}
    return dict(figures, workload=point["workload"], sweep=point["sweep"], value=point["value"],
                completed=result.get("completed"), failed=result.get("failed"), shares=shares)


def table(rows: Iterable[Mapping[str, t.Any]]) -> list[str]:
    columns = ("WORKLOAD", "SWEEP", "COMPLETED", "FAILED") + tuple(label for _key, label, _higher in FIGURES) + (
        "LOCAL HITS", "PD KV", "POOL HITS")
    lines = [[r["workload"], "%s %s" % (r["sweep"], r["value"]), r["completed"], r["failed"]]
             + [_number(r.get(key)) for key, _label, _higher in FIGURES]
             + ["%.0f%%" % (100 * r["shares"][k]) for k in ("local", "transfer", "pool")] for r in rows]
    return aligned(columns, [[str(cell) for cell in line] for line in lines])


def _number(value: float | None) -> str:
    return "-" if value is None else ("%.2f" % value if abs(value) < 100 else "%.0f" % value)


def compare(rows: Iterable[Mapping[str, t.Any]], baseline: Iterable[Mapping[str, t.Any]] | None, threshold: float) -> dict[str, list[str]]:
    """Each figure's change against the baseline's point of the same workload and sweep value; a change for the
    worse beyond ``threshold`` (a fraction) is a regression. Returns {"lines", "regressions"}."""
    earlier = {(r["workload"], r["sweep"], str(r["value"])): r for r in baseline or []}
    lines, regressions = [], []
    for now in rows:
        then = earlier.get((now["workload"], now["sweep"], str(now["value"])))
        if then is None:
            lines.append("%s %s %s: not in the baseline" % (now["workload"], now["sweep"], now["value"]))
            continue
        for key, label, higher in FIGURES:
            old, new = then.get(key), now.get(key)
            if not old or new is None:
                continue
            change = (new - old) / old
            worse = -change if higher else change
            text = "%s %s %s: %s %s -> %s (%+.1f%%)" % (now["workload"], now["sweep"], now["value"], label, _number(old),
                                                        _number(new), 100 * change)
            if worse > threshold:
                text += "  REGRESSION (beyond %.0f%%)" % (100 * threshold)
                regressions.append(text)
            lines.append(text)
    return {"lines": lines, "regressions": regressions}


def shape(specs: Iterable[Mapping[str, t.Any]] | None) -> list[str]:
    """What a run's figures depend on besides the image and flags: each container's host, name and devices (its
    role, instance, DP ranks and ports are in the name and spec meta). A baseline of another shape does not compare."""
    return sorted("%s/%s %s" % (spec.get("host"), spec.get("name"), ",".join(str(d) for d in spec.get("devices") or []))
                  for spec in specs or [])


def same_shape(shape_now: Sequence[str] | None, shape_then: Sequence[str] | None) -> list[str]:
    """Problems when a baseline comes from a cluster of another shape: its figures would not compare."""
    if sorted(shape_now or []) != sorted(shape_then or []):
        gone = sorted(set(shape_then or []) - set(shape_now or []))[:3]
        new = sorted(set(shape_now or []) - set(shape_then or []))[:3]
        return ["llmops_benchmark_baseline: that run measured a cluster of another shape (only there: %s; only here: %s). "
                "Fix: compare with a run of this cluster's shape, or leave llmops_benchmark_baseline unset."
                % (", ".join(gone) or "-", ", ".join(new) or "-")]
    return []


def point_row(point: Mapping[str, t.Any], run: Mapping[str, t.Any]) -> dict[str, t.Any]:
    """The row of one point from the cluster_benchmark module's result (vllm bench serve's JSON and the counters)."""
    return row(point, run.get("result") or {}, hit_shares(run.get("before"), run.get("after")))


def line(point_row_: Mapping[str, t.Any]) -> str:
    """One progress line of a point: what it ran and its headline figures."""
    r = point_row_
    return ("%s %s %s: %s of %s completed, %s req/s, %s tok/s, TTFT p50 %s / p99 %s ms, TPOT p50 %s ms; prompt tokens from "
            "the local cache %.0f%%, the PD transfer %.0f%%, the pool %.0f%%"
            % (r["workload"], r["sweep"], r["value"], r["completed"], (r["completed"] or 0) + (r["failed"] or 0),
               _number(r.get("request_throughput")), _number(r.get("output_throughput")), _number(r.get("p50_ttft_ms")),
               _number(r.get("p99_ttft_ms")), _number(r.get("p50_tpot_ms")), 100 * r["shares"]["local"],
               100 * r["shares"]["transfer"], 100 * r["shares"]["pool"]))


def plot_series(rows: Iterable[Mapping[str, t.Any]]) -> dict[str, list[tuple[float | None, float | None]]]:
    """{figure: [(output tok/s, milliseconds)]} of the sweep, one series per latency figure and workload."""
    series: dict[str, list[tuple[float | None, float | None]]] = {}
    for r in rows:
        for key, label in (("p50_ttft_ms", "TTFT P50"), ("p99_ttft_ms", "TTFT P99"), ("p50_tpot_ms", "TPOT P50"),
                           ("p99_itl_ms", "ITL P99")):
            series.setdefault("%s %s" % (r["workload"], label), []).append((r.get("output_throughput"), r.get(key)))
    return series
