# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Proof that a running cluster serves and reuses KV: what to ask, and how to read the answers.

Pure functions; the cluster_verify module does the HTTP. Metric names are real vLLM's:
``vllm:prefix_cache_{hits,queries}_total`` (the engine's own prefix cache) and
``vllm:external_prefix_cache_{hits,queries}_total`` (what the KV connector brought: UCM, a KV
pool, or in a PD decode the prefill's KV).
"""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.services import _metrics_relay as metrics_relay

PREFIX_HITS = "vllm:prefix_cache_hits_total"
PREFIX_QUERIES = "vllm:prefix_cache_queries_total"
EXTERNAL_HITS = "vllm:external_prefix_cache_hits_total"
EXTERNAL_QUERIES = "vllm:external_prefix_cache_queries_total"
CACHE_METRICS = (PREFIX_QUERIES, PREFIX_HITS, EXTERNAL_QUERIES, EXTERNAL_HITS)


def base_url(spec: LaunchSpec) -> str:
    """scheme://address:port of an API engine or the front door (its meta's api_url); verify asks no other."""
    url = spec_meta.api_url(spec)
    if not url:
        raise ValueError("%s on %s serves no API" % (spec["name"], spec["host"]))
    return url


def health_url(spec: LaunchSpec) -> str | None:
    """The URL a service's readiness probe asks (its spec's ready.http), None for one without an HTTP probe."""
    return (spec.get("ready") or {}).get("http")


def targets(specs: Sequence[LaunchSpec]) -> dict[str, t.Any]:
    """What verify asks: API ranks (models, metrics), services with an HTTP endpoint, the front for completions,
    and the ranks whose cache counters must show reuse (every API rank but decode ranks, which only take KV)."""
    api = [s for s in specs if spec_meta.is_engine(s) and spec_meta.api_url(s)]
    services = [s for s in specs if not spec_meta.is_engine(s) and health_url(s)]
    proxy = next((s for s in specs if spec_meta.kind(s) == "proxy"), None)
    front = proxy or (api[0] if api else None)
    counting = [s for s in api if spec_meta.role(s) != "decode"]
    return {"api": api, "services": [s for s in services if s is not proxy], "proxy": proxy, "front": front,
            "counting": counting, "decode": [s for s in api if spec_meta.role(s) == "decode"],
            "model": spec_meta.served_model(api[0]) if api else None}


def relay_probe(specs: Sequence[LaunchSpec]) -> tuple[LaunchSpec, str, str] | None:
    """(the metrics relay, the URL of one endpoint's /metrics through it, that endpoint's name) when the cluster has a
    relay and an endpoint to relay, else None: verify asks it as the monitoring would."""
    relay = metrics_relay.relay_of(specs)
    relayed = next((spec for spec in specs if spec_meta.metrics_url(spec)), None)
    if relay is None or relayed is None:
        return None
    return relay, spec_meta.of(relay)["relay_url"] + metrics_relay.route(relayed), relayed["name"]


def kv_pairs(found: Mapping[str, t.Any]) -> list[tuple[LaunchSpec, LaunchSpec]]:
    """(prefill, decode) for every prefill instance with every decode instance, each by its first API engine: the pairs
    whose KV path verify proves itself, with the proxy's two requests, so that one broken pair cannot hide behind
    the balancer (a 1P1D cluster has one pair)."""
    def firsts(role: str) -> list[LaunchSpec]:
        chosen: dict[str, LaunchSpec] = {}
        for spec in found["api"]:
            if spec_meta.role(spec) == role:
                chosen.setdefault(spec_meta.instance(spec) or role, spec)
        return list(chosen.values())
    return [(prefill, decode) for prefill in firsts("prefill") for decode in firsts("decode")]


def prefill_request(model: str, prompt: str) -> dict[str, t.Any]:
    """What vllm-ascend's proxy sends a prefill engine (its build_prefill_request): one token, and the KV kept for a
    remote decode, whose whereabouts come back in the answer's kv_transfer_params."""
    return {"model": model, "prompt": prompt, "max_tokens": 1, "min_tokens": 1, "stream": False, "temperature": 0,
            "kv_transfer_params": {"do_remote_decode": True, "do_remote_prefill": False, "remote_engine_id": None,
                                   "remote_block_ids": None, "remote_host": None, "remote_port": None}}


def greedy_request(model: str, prompt: str, tokens: int = 8) -> dict[str, t.Any]:
    """A completion of 8 tokens, greedy and ignoring EOS (vLLM's): a sampled answer may be only the first bytes of a
    character, or end at once, which says nothing about the cluster; a greedy one is the same on every run."""
    return {"model": model, "prompt": prompt, "max_tokens": tokens, "temperature": 0, "ignore_eos": True}


def decode_request(model: str, prompt: str, kv_transfer_params: t.Any, tokens: int = 8) -> dict[str, t.Any]:
    """The decode half: the same prompt, greedy, with the prefill's kv_transfer_params."""
    return dict(greedy_request(model, prompt, tokens), kv_transfer_params=kv_transfer_params)


def disagreement(pd_text: str, alone_text: str) -> dict[str, t.Any] | None:
    """Where a PD answer first differs from a prefill engine's own answer to the same greedy prompt, None when they
    agree. Both are the same number of greedy tokens: a decode continuing from the prefill's KV answers what the
    prefill alone does, unless P and D disagree on the KV's block_size or layout, which gives other text with
    HTTP 200 (vllm-ascend #14545). {"at": character, "pd": what the PD answer has there, "alone": the other's}."""
    if pd_text == alone_text:
        return None
    at = next((i for i, (a, b) in enumerate(zip(pd_text, alone_text)) if a != b), min(len(pd_text), len(alone_text)))
    return {"at": at, "pd": pd_text[at:at + 24], "alone": alone_text[at:at + 24]}


def disagreement_text(found: Mapping[str, t.Any], where: str, prefill: str, tokens: int) -> str:
    return ("%s answers other text than %s alone to the same greedy prompt, from character %d (%r against %r), within "
            "the first %d tokens: P and D disagree on the KV's block_size or layout (vllm-ascend #14545)"
            % (where, prefill, found["at"], found["pd"], found["alone"], tokens))


def pair_line(pair: Mapping[str, t.Any]) -> str:
    """A report line of one prefill-decode pair's check."""
    shown = "HTTP %s, %g prompt tokens from the prefill's KV, text %r%s" % (
        pair["status"] or "nothing", pair["loaded"], (pair.get("text") or "")[:30],
        ", the prefill alone answers the same" if pair.get("same_as_alone") else "")
    tries = " (after %d tries: the first request of a pair opens its KV side channel)" % pair["attempts"] if pair["attempts"] > 1 else ""
    return "KV pair %s: %s%s%s" % (pair["pair"], "ok, " if pair["ok"] else "FAILED, ", shown if pair["ok"] else pair["why"], tries)


def repeats(spec: LaunchSpec) -> int:
    """Sends of the long prompt to an API rank so that two reach one engine: one more than the engines behind
    it (the whole DP group when one API server fronts it, as vLLM balances by load; one with a rank of its own)."""
    return spec_meta.engines_behind(spec) + 1


def long_prompt(nonce: str, words: int = 600) -> str:
    """A prompt of several KV blocks (block size 128) that no earlier run sent (the nonce comes first)."""
    return " ".join(["verify-%s" % nonce] + ["word%d" % (i % 97) for i in range(words - 1)])


def deltas(before: Mapping[str, float], after: Mapping[str, float], names: Iterable[str] = CACHE_METRICS) -> dict[str, float]:
    return {name: after.get(name, 0.0) - before.get(name, 0.0) for name in names}


def reuse_findings(counting_deltas: Mapping[str, Mapping[str, float]], decode_deltas: Mapping[str, Mapping[str, float]],
                   pd: bool) -> list[str]:
    """Problems with the cache counters: none rose on a repeated prompt; a PD decode took no KV from prefill."""
    problems: list[str] = []
    reused = sum(d[PREFIX_HITS] + d[EXTERNAL_HITS] for d in counting_deltas.values())
    if counting_deltas and reused <= 0:
        problems.append("a prompt sent twice to %s hit no cache: %s and %s did not rise"
                        % (", ".join(sorted(counting_deltas)), PREFIX_HITS, EXTERNAL_HITS))
    if pd and decode_deltas and sum(d[EXTERNAL_HITS] for d in decode_deltas.values()) <= 0:
        problems.append("the completion through the proxy loaded no KV on any decode rank (%s did not rise on %s)"
                        % (EXTERNAL_HITS, ", ".join(sorted(decode_deltas))))
    return problems


def pool_sharing(order: Sequence[str], counting_deltas: Mapping[str, Mapping[str, float]]) -> dict[str, t.Any] | None:
    """What proves a KV pool is shared: the long prompt goes to the pooled engines one after another, so
    every engine after the first finds its blocks in the pool (external hits) though its own cache never
    saw it. {"first": engine that stored them, "found": {engine: tokens found}, "missed": [engines]}."""
    if len(order) < 2 or any(name not in counting_deltas for name in order):
        return None
    later = order[1:]
    found = {name: counting_deltas[name][EXTERNAL_HITS] for name in later if counting_deltas[name][EXTERNAL_HITS] > 0}
    return {"first": order[0], "found": found, "missed": [name for name in later if name not in found]}


def pool_line(sharing: Mapping[str, t.Any] | None) -> str | None:
    if sharing is None:
        return None
    if sharing["found"]:
        return "KV pool shared: %s found the blocks %s stored (%s)" % (
            ", ".join(sorted(sharing["found"])), sharing["first"],
            ", ".join("%s %g tokens" % (name, tokens) for name, tokens in sorted(sharing["found"].items())))
    return "KV pool NOT shown shared: no engine after %s found its blocks in the pool (%s)" % (
        sharing["first"], ", ".join(sharing["missed"]))


def service_changes(before: Mapping[str, float], after: Mapping[str, float], limit: int = 4) -> list[str]:
    """The pool service's own counters that moved, largest first, as "name +delta"."""
    moved = [(after[name] - before.get(name, 0.0), name) for name in after if after[name] != before.get(name, 0.0)]
    return ["%s %+g" % (name, delta) for delta, name in sorted(moved, reverse=True)[:limit]]


def report(checks: Iterable[Mapping[str, t.Any]], completion: Mapping[str, t.Any] | None, counters: Mapping[str, Mapping[str, t.Any]],
           services: Mapping[str, list[str]], sharing: Mapping[str, t.Any] | None = None,
           pairs: Iterable[Mapping[str, t.Any]] = ()) -> list[str]:
    """The printable report: per endpoint status and latency, the completion with its TTFT, each prefill-decode
    pair's KV path, the counters, what showed the KV pool shared."""
    lines = ["%-40s %-22s %-6s %s" % ("ENDPOINT", "CHECK", "RESULT", "LATENCY")]
    for check in checks:
        latency = "%.0f ms" % (check["seconds"] * 1000) if check.get("seconds") is not None else "-"
        lines.append("%-40s %-22s %-6s %s" % (check["endpoint"], check["check"], "ok" if check["ok"] else "FAIL", latency))
    if completion:
        lines.append("completion through %s: HTTP %s, time to first token %s, total %s, text %r" % (
            completion["front"], completion["status"],
            "%.0f ms" % (completion["ttft"] * 1000) if completion.get("ttft") is not None else "-",
            "%.0f ms" % (completion["seconds"] * 1000) if completion.get("seconds") is not None else "-",
            (completion.get("text") or "")[:40]))
        if completion.get("alone"):
            alone = completion["alone"]
            lines.append("the same greedy prompt to %s alone: %s" % (alone["engine"], "the same answer" if alone["same"] else
                         "another answer (see the problems)" if alone.get("answered", True) else "no answer, nothing compared"))
        warmup = completion.get("warmup")
        if warmup and not warmup["served"]:
            lines.append("the warm-up completion before it was not served (HTTP %s, %r): the first request between a "
                         "decode and a prefill engine opens their KV side channel" % (warmup["status"] or "nothing", warmup["text"][:80]))
    lines += [pair_line(pair) for pair in pairs]
    still: list[str] = []
    for name, row in sorted(counters.items()):
        shown = [metric for metric in CACHE_METRICS if metric in row["after"] or metric in row["before"]]
        if all(row["before"].get(metric, 0.0) == row["after"].get(metric, 0.0) for metric in shown):
            still.append(name)
            continue
        lines.append("%s: %s" % (name, ", ".join("%s %g -> %g" % (metric.split(":", 1)[1], row["before"].get(metric, 0.0),
                                                                  row["after"].get(metric, 0.0)) for metric in shown)))
    if still:
        lines.append("cache counters unchanged on %s" % ", ".join(still))
    for name, moved in sorted(services.items()):
        lines.append("%s metrics: %s" % (name, ", ".join(moved) if moved else "no counter moved"))
    pool = pool_line(sharing)
    return lines + [pool] if pool else lines
