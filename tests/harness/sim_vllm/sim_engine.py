# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated engine's state: its requests, completions, PD handoff and vLLM's metrics."""

from __future__ import annotations

import hashlib
import os
import socket
import threading
import time
import uuid

from sim_cli import log
from sim_kv import Blocks, kv_pool

# vLLM 0.32's buckets (vllm/v1/metrics/buckets.py): TIME_TO_FIRST_TOKEN_BUCKETS, INTER_TOKEN_LATENCY_BUCKETS
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
                160.0, 640.0, 2560.0)
TPOT_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0)


def greedy_text(prompt, tokens, garbled=False):
    """A greedy answer: the same tokens for the same prompt on every engine, as a real model's greedy decoding gives
    (a decode continuing from a prefill's KV answers what the prefill alone would). With VLLM_SIM_KV_LAYOUT_MISMATCH
    on a decode (a simulated fault), the KV it loads is read with another layout than the prefill wrote, as a
    block_size or layout mismatch between P and D does: other text, still HTTP 200 (vllm-ascend #14545)."""
    seed = ("garbled:" if garbled else "") + prompt
    return " ".join("tok%s" % hashlib.sha256(("%s/%d" % (seed, i)).encode()).hexdigest()[:4] for i in range(tokens))


def vllm_error(message, kind, code, param=None):
    """vLLM's ErrorResponse body."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class Histogram:
    """A Prometheus histogram as prometheus_client renders it: cumulative _bucket{le}, _count and _sum."""

    def __init__(self, name, buckets):
        self.name, self.buckets = name, buckets
        self.counts, self.count, self.total = [0] * len(buckets), 0, 0.0
        self.lock = threading.Lock()

    def observe(self, value):
        with self.lock:
            for index, bound in enumerate(self.buckets):
                if value <= bound:
                    self.counts[index] += 1
            self.count += 1
            self.total += value

    def lines(self, labels):
        with self.lock:
            found = ['%s_bucket{%s,le="%s"} %d' % (self.name, labels, bound, count) for bound, count in zip(self.buckets, self.counts)]
            return found + ['%s_bucket{%s,le="+Inf"} %d' % (self.name, labels, self.count),
                            "%s_count{%s} %d" % (self.name, labels, self.count), "%s_sum{%s} %s" % (self.name, labels, self.total)]


class Engine:
    def __init__(self, args, kv, devices):
        self.args, self.kv = args, kv
        self.name = args.served_model_name or args.model
        self.role = kv["role"] if kv else None
        self.dp_rank = args.data_parallel_rank if args.data_parallel_rank is not None else (args.data_parallel_start_rank or 0)
        self.engine_id = (kv or {}).get("engine_id") or str(uuid.uuid4())
        self.host_ip = os.environ.get("VLLM_HOST_IP") or os.environ.get("HCCL_IF_IP") or "127.0.0.1"
        self.side_channel = kv["kv_port"] + self.dp_rank * args.tensor_parallel_size if kv and kv["kv_port"] else None
        ucm = (kv or {}).get("ucm")
        self.blocks = Blocks(args.block_size, ucm["backends"][0] if ucm else None, pool=kv_pool(kv, self.host_ip, self.name))
        self.counters = {"query": 0, "hit": 0, "external_query": 0, "external_hit": 0, "remote_prefill": 0, "requests": 0}
        self.lock = threading.Lock()
        self.devices = devices
        self.running = 0  # requests being answered: vllm:num_requests_running
        # seconds per output token (VLLM_SIM_TOKEN_SECONDS): a long request stays in flight, as a real one does
        self.token_seconds = float(os.environ.get("VLLM_SIM_TOKEN_SECONDS", "0"))
        # vLLM's latency histograms (their names and buckets: vllm/v1/metrics/loggers.py), which the dashboard reads
        self.ttft = Histogram("vllm:time_to_first_token_seconds", TTFT_BUCKETS)
        self.tpot = Histogram("vllm:request_time_per_output_token_seconds", TPOT_BUCKETS)

    def metrics(self):
        """vLLM's names and labels (engine: the DP rank; model_name): requests in flight, KV cache usage, the
        prefix cache, the KV connector's share (external), prompt tokens by source, finished requests."""
        labels = 'engine="%d",model_name="%s"' % (self.dp_rank, self.name)
        counters = self.counters
        local = counters["query"] - counters["hit"] - counters["external_hit"]
        # The share of the KV cache in use: the simulator holds no KV blocks of its own, so it reports its share
        # of --max-num-seqs (vLLM's default 256) taken by requests being answered; 0 when idle, as vLLM does.
        kv_usage = min(1.0, self.running / float(self.args.max_num_seqs or 256))
        lines = ["vllm:num_requests_running{%s} %d" % (labels, self.running),
                 "vllm:num_requests_waiting{%s} 0" % labels,
                 "vllm:kv_cache_usage_perc{%s} %s" % (labels, kv_usage),
                 "vllm:prefix_cache_queries_total{%s} %d" % (labels, counters["query"]),
                 "vllm:prefix_cache_hits_total{%s} %d" % (labels, counters["hit"]),
                 "vllm:external_prefix_cache_queries_total{%s} %d" % (labels, counters["external_query"]),
                 "vllm:external_prefix_cache_hits_total{%s} %d" % (labels, counters["external_hit"]),
                 'vllm:prompt_tokens_by_source_total{%s,source="local_compute"} %d' % (labels, max(local, 0)),
                 'vllm:prompt_tokens_by_source_total{%s,source="local_cache_hit"} %d' % (labels, counters["hit"]),
                 'vllm:prompt_tokens_by_source_total{%s,source="external_kv_transfer"} %d' % (labels, counters["external_hit"]),
                 'vllm:request_success_total{%s,finished_reason="length"} %d' % (labels, counters["requests"]),
                 "sim:remote_prefill_requests_total{%s} %d" % (labels, counters["remote_prefill"])]
        lines += self.ttft.lines(labels) + self.tpot.lines(labels)
        if self.kv and self.kv.get("ucm"):
            lines += ["ucm:total_prefix_query_tokens_total{%s} %d" % (labels, counters["external_query"]),
                      "ucm:ucm_hit_tokens_total{%s} %d" % (labels, counters["external_hit"])]
        return "\n".join(lines) + "\n"

    def _stream(self, send, text, chat, usage):
        """vLLM's stream of a completion: a chunk per token (the first at once), the last with its finish_reason,
        then, when asked, one with no choice and the usage (what `vllm bench serve` counts output tokens by)."""
        pieces = text.split(" ")
        base = {"id": "cmpl-" + uuid.uuid4().hex, "object": "chat.completion.chunk" if chat else "text_completion",
                "created": int(time.time()), "model": self.name}
        for index, piece in enumerate(pieces):
            if index:
                time.sleep(self.token_seconds)
            piece = (" " if index else "") + piece
            choice = {"index": 0, "finish_reason": "length" if index == len(pieces) - 1 else None}
            choice.update({"delta": {"content": piece}} if chat else {"text": piece, "logprobs": None})
            send(dict(base, choices=[choice]))
        if usage is not None:
            send(dict(base, choices=[], usage=usage))

    def complete(self, body, chat, stream=None):
        """(HTTP code, answer). With ``stream`` (a request with "stream": true), the answer goes out as vLLM streams
        it: ``stream()`` sends the headers and gives the function that sends one chunk; one chunk per token,
        VLLM_SIM_TOKEN_SECONDS apart, then the usage chunk when stream_options.include_usage asks; the answer is None."""
        with self.lock:
            self.running += 1
        try:
            return self._complete(body, chat, stream)
        finally:
            with self.lock:
                self.running -= 1

    def _complete(self, body, chat, stream=None):
        started = time.monotonic()
        if body.get("model") not in (self.name, None):  # vLLM 0.32's serving.py, word for word
            return 404, vllm_error("The model `%s` does not exist. Valid aliases: %s." % (body.get("model"), self.name),
                                   "NotFoundError", 404, "model")
        wanted = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
        if self.args.max_model_len and wanted > self.args.max_model_len:  # vLLM 0.32's renderers/params.py
            return 400, vllm_error("max_tokens=%d cannot be greater than max_model_len=%d. Please request fewer output "
                                   "tokens. (parameter=max_tokens, value=%d)" % (wanted, self.args.max_model_len, wanted),
                                   "BadRequestError", 400, "max_tokens")
        prompt = body["messages"][-1]["content"] if chat else body.get("prompt", "")
        params = body.get("kv_transfer_params") or {}
        fingerprint = "sim-vllm:%s:%s" % (self.role or "single", self.engine_id)
        answer_params = None
        if self.role == "kv_consumer":
            if not params.get("remote_host") or not params.get("remote_port"):
                return 400, {"error": {"message": "decode instance got no kv_transfer_params from a prefill", "code": 400}}
            try:
                socket.create_connection((params["remote_host"], int(params["remote_port"])), timeout=5).close()
            except OSError as err:
                return 500, {"error": {"message": "cannot reach prefill KV at %s:%s: %s"
                                       % (params["remote_host"], params["remote_port"], err), "code": 500}}
            with self.lock:
                self.counters["remote_prefill"] += 1
                # the prompt's KV came from the prefill: the connector's tokens, as vLLM counts them
                self.counters["query"] += len(prompt.split())
                self.counters["external_query"] += len(prompt.split())
                self.counters["external_hit"] += len(prompt.split())
            fingerprint += ":from:%s@%s:%s" % (params.get("remote_engine_id"), params["remote_host"], params["remote_port"])
        else:
            tokens, hits, asked, remote = self.blocks.lookup_and_store(prompt)
            with self.lock:
                self.counters["query"] += tokens
                self.counters["hit"] += hits
                self.counters["external_query"] += asked
                self.counters["external_hit"] += remote
            if hits or remote:
                log("prefix cache hit: %d of %d tokens, %d more from the KV connector" % (hits, tokens, remote))
        if self.role == "kv_producer" and params.get("do_remote_decode"):
            answer_params = {"do_remote_prefill": True, "do_remote_decode": False, "remote_engine_id": self.engine_id,
                             "remote_block_ids": list(range(max(1, len(prompt.split()) // self.args.block_size))),
                             "remote_host": self.host_ip, "remote_port": self.side_channel}
        max_tokens = wanted
        if self.args.max_model_len:  # the rest of the context at most, as vLLM's get_max_tokens
            max_tokens = max(1, min(wanted, self.args.max_model_len - len(prompt.split())))
        first = time.monotonic()
        self.ttft.observe(first - started)  # the prompt's blocks looked up (and the KV fetched): the first token
        text = greedy_text(prompt, max_tokens, garbled=self.role == "kv_consumer" and bool(os.environ.get("VLLM_SIM_KV_LAYOUT_MISMATCH")))
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": max_tokens,
                 "total_tokens": len(prompt.split()) + max_tokens}
        if stream is not None:
            self._stream(stream(), text, chat, usage if (body.get("stream_options") or {}).get("include_usage") else None)
        else:
            time.sleep(max_tokens * self.token_seconds)
        if max_tokens > 1:
            self.tpot.observe((time.monotonic() - first) / (max_tokens - 1))
        if stream is not None:
            with self.lock:
                self.counters["requests"] += 1
            return 200, None
        choice = {"index": 0, "logprobs": None, "finish_reason": "length", "stop_reason": None}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        answer = {"id": "cmpl-" + uuid.uuid4().hex, "object": "chat.completion" if chat else "text_completion",
                  "created": int(time.time()), "model": self.name, "choices": [choice], "usage": usage,
                  "system_fingerprint": fingerprint, "kv_transfer_params": answer_params}
        with self.lock:
            self.counters["requests"] += 1
        return 200, answer
