# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated engine's command line: vllm serve's flags as real vLLM's parser takes them (an unknown flag
or malformed JSON exits 2), and its log lines."""

from __future__ import annotations

import argparse
import json
import os
import sys

# What vLLM 0.32 logs (seen with the harness's real engine): the engine core is ready, then the API server.
READY_LINE = "init engine (profile, create kv cache, warmup model) took %.2f s"


SERVING_LINE = "Starting vLLM server on http://%s:%d"


def log(message):
    print("(SimEngine pid=%d) %s" % (os.getpid(), message), flush=True)


def die(message):
    print("ERROR: " + message, file=sys.stderr, flush=True)
    sys.exit(1)


def json_arg(text):
    try:
        value = json.loads(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError("not valid JSON: %s" % err) from err
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value


def parser():
    p = argparse.ArgumentParser(prog="vllm", allow_abbrev=False)
    p.add_argument("model")
    p.add_argument("--host", default=None)
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--headless", action="store_true")
    p.add_argument("--api-key", nargs="+", default=None)
    p.add_argument("--middleware", action="append", default=[])
    p.add_argument("--api-server-count", type=int, default=1)
    p.add_argument("--data-parallel-size", type=int, default=1)
    p.add_argument("--data-parallel-size-local", type=int, default=None)
    p.add_argument("--data-parallel-start-rank", type=int, default=None)
    p.add_argument("--data-parallel-rank", type=int, default=None)
    p.add_argument("--data-parallel-address", default=None)
    p.add_argument("--data-parallel-rpc-port", type=int, default=None)
    p.add_argument("--tensor-parallel-size", type=int, default=1)
    for flag in ("--enable-expert-parallel", "--async-scheduling", "--trust-remote-code", "--enable-prefix-caching",
                 "--enable-auto-tool-choice", "--enforce-eager", "--enable-chunked-prefill", "--skip-mm-profiling"):
        p.add_argument(flag, action="store_true")
    p.add_argument("--seed", type=int)
    p.add_argument("--served-model-name")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--max-num-batched-tokens", type=int)
    p.add_argument("--max-num-seqs", type=int)
    p.add_argument("--block-size", type=int, default=128)
    p.add_argument("--dtype", choices=["auto", "half", "float16", "bfloat16", "float", "float32"], default="auto")
    p.add_argument("--quantization", choices=["ascend", "fp8", "awq", "gptq"])
    p.add_argument("--gpu-memory-utilization", type=float)
    p.add_argument("--kv-cache-dtype", choices=["auto", "int8", "fp8", "bfloat16"])
    p.add_argument("--safetensors-load-strategy", choices=["lazy", "eager", "prefetch"])
    p.add_argument("--tool-call-parser")
    p.add_argument("--reasoning-parser")
    p.add_argument("--prefix-cache-retention-interval")
    for flag in ("--speculative-config", "--compilation-config", "--additional-config", "--kv-transfer-config",
                 "--limit-mm-per-prompt"):
        p.add_argument(flag, type=json_arg)
    return p
