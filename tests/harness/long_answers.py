# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Long completions sent together and answered while a test stops the cluster (tests only).

    python3 long_answers.py URL MODEL OUT [--count 16] [--tokens 2000] [--timeout 600]

Sends ``count`` completions at once, one thread each, every one asking for ``tokens`` tokens (ignore_eos), and writes
OUT (JSON: one {"status", "completion_tokens", "error"} per request, in order) once every answer came back or failed,
within ``timeout`` seconds: bounded in count and time. One process for all of them instead of an Ansible async task per
request: in one CI run an async job's process vanished before it wrote its result, and the molecule cpu_dp verify
waited for it until its step's bound. Send it only to the harness's own network.
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
import urllib.error
import urllib.request


def ask(url, model, prompt, tokens, timeout):
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": tokens, "ignore_eos": True}).encode()
    request = urllib.request.Request(url.rstrip("/") + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            usage = json.loads(answer.read()).get("usage") or {}
            return {"status": answer.status, "completion_tokens": usage.get("completion_tokens"), "error": None}
    except urllib.error.HTTPError as err:
        return {"status": err.code, "completion_tokens": None, "error": str(err)}
    except (OSError, ValueError) as err:
        return {"status": None, "completion_tokens": None, "error": str(err)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("url")
    parser.add_argument("model")
    parser.add_argument("out")
    parser.add_argument("--count", type=int, default=16)
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    results = [None] * args.count

    def one(index):
        results[index] = ask(args.url, args.model, "stop waits for answer %d" % index, args.tokens, args.timeout)

    threads = [threading.Thread(target=one, args=(index,), daemon=True) for index in range(args.count)]
    deadline = time.monotonic() + args.timeout + 30
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    answers = [result or {"status": None, "completion_tokens": None, "error": "no answer within the timeout"} for result in results]
    # written whole, then renamed: the waiting task sees the file only once every answer is in it
    with open(args.out + ".part", "w", encoding="utf-8") as handle:
        json.dump(answers, handle)
    os.replace(args.out + ".part", args.out)


if __name__ == "__main__":
    main()
