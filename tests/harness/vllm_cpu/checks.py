# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the CPU scenarios check with real vLLM beyond the product's verify (tests only).

    python checks.py dp-spread API_URL [--requests 12]
        concurrent requests to the API server of a DP group reach more than one engine: vLLM's
        vllm:request_success_total counts them per engine label.
    python checks.py pd-baseline PROXY_URL PREFILL_URL DECODE_URL [--api-key KEY] [--client-key KEY]
        a greedy completion through the PD proxy is decoded with the prefill's KV (the decode's
        prompt tokens of source external_kv_transfer rise) and its text equals what the prefill
        engine alone answers for the same prompt (the single-engine baseline). With --api-key, the
        engines must refuse /v1/* without it (401): the proxy then got through with the key the
        collection gave it. With --client-key, the proxy's front door must refuse a completion
        without it (401) and serve one with it, while the engines refuse the client key.

Prints what it measured; exits 1 naming what failed. Only addresses of the harness are asked.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import sys
import urllib.error
import urllib.request

SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:]+)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$')
HEADERS = {"Content-Type": "application/json"}  # plus the engines' key (--api-key)
PROMPT = "The future of AI is a cluster that serves every request with prefill and decode on nodes whose devices hold"


def post(url, body, timeout=120, headers=None):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=HEADERS if headers is None else headers)
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read().decode() or "{}")


def series(url, name):
    """{frozenset of labels: value} of one metric on a /metrics page."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as response:
        text = response.read().decode()
    found = {}
    for line in text.splitlines():
        match = SAMPLE.match(line)
        if match and match.group("name") == name:
            labels = frozenset(re.findall(r'(\w+)="([^"]*)"', match.group("labels")))
            found[labels] = float(match.group("value"))
    return found


def model(url, headers=None):
    request = urllib.request.Request(url + "/v1/models", headers=HEADERS if headers is None else headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read().decode())["data"][0]["id"]


def refuses_without_key(url):
    try:
        model(url, headers={})
    except urllib.error.HTTPError as err:
        return err.code == 401
    return False


def completion(url, name, prompt, max_tokens=16, headers=None):
    body = {"model": name, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}
    answer = post(url + "/v1/completions", body, headers=headers)
    return answer["choices"][0]["text"]


def dp_spread(args):
    name = model(args.api)
    before = series(args.api, "vllm:request_success_total")
    with concurrent.futures.ThreadPoolExecutor(args.requests) as pool:
        list(pool.map(lambda i: completion(args.api, name, "request %d of the spread check" % i, 32), range(args.requests)))
    after = series(args.api, "vllm:request_success_total")
    per_engine = {}
    for labels, value in after.items():
        engine = dict(labels).get("engine")
        per_engine[engine] = per_engine.get(engine, 0) + value - before.get(labels, 0.0)
    print("requests answered per engine: %s" % json.dumps(per_engine, sort_keys=True))
    served = [engine for engine, count in per_engine.items() if count > 0]
    if len(served) < 2:
        sys.exit("DP spread: %d concurrent requests were all answered by engine(s) %s" % (args.requests, served))


def external_tokens(url):
    return sum(value for labels, value in series(url, "vllm:prompt_tokens_by_source_total").items()
               if dict(labels).get("source") == "external_kv_transfer")


def pd_baseline(args):
    if args.api_key:
        HEADERS["Authorization"] = "Bearer " + args.api_key
        open_engines = [url for url in (args.prefill, args.decode) if not refuses_without_key(url)]
        if open_engines:
            sys.exit("PD: %s answered /v1/models without the API key" % ", ".join(open_engines))
        print("both engines refuse /v1/models without the API key (401)")
    name = model(args.prefill)
    front = HEADERS
    if args.client_key:
        front = {"Content-Type": "application/json", "Authorization": "Bearer " + args.client_key}
        for what, url, headers in (("the front door without a key", args.proxy, {"Content-Type": "application/json"}),
                                   ("the prefill engine with the client key", args.prefill, front)):
            try:
                completion(url, name, "refused", 1, headers=headers)
                sys.exit("PD: %s served a completion" % what)
            except urllib.error.HTTPError as err:
                if err.code != 401:
                    sys.exit("PD: %s answered HTTP %d, not 401" % (what, err.code))
        print("the front door refuses a completion without a client key and the engines refuse the client key (401)")
    # the first request between the pair opens the decode's KV side channel to the prefill, whose handshake
    # vLLM gives a fixed 5 s (nixl base_worker.py); a warm-up opens it, reported, before what is measured
    try:
        completion(args.proxy, name, "warm-up", 1, headers=front)
        print("warm-up through the proxy: served")
    except (urllib.error.URLError, KeyError, IndexError, ValueError) as err:
        print("warm-up through the proxy: not served (%s)" % err)
    before = external_tokens(args.decode)
    through = completion(args.proxy, name, PROMPT, headers=front)
    taken = external_tokens(args.decode) - before
    alone = completion(args.prefill, name, PROMPT)
    print("through the proxy: %r; prefill alone: %r; decode took %d prompt tokens of prefill KV" % (through, alone, taken))
    problems = []
    if taken <= 0:
        problems.append("the decode took no prompt tokens from the prefill's KV (external_kv_transfer did not rise)")
    if through != alone:
        problems.append("the text through the proxy differs from the single-engine baseline")
    if problems:
        sys.exit("PD: " + "; ".join(problems))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    spread = sub.add_parser("dp-spread")
    spread.add_argument("api")
    spread.add_argument("--requests", type=int, default=12)
    pd = sub.add_parser("pd-baseline")
    pd.add_argument("proxy")
    pd.add_argument("prefill")
    pd.add_argument("decode")
    pd.add_argument("--api-key", help="the engines' VLLM_API_KEY: they must refuse requests without it")
    pd.add_argument("--client-key", help="a client key of the proxy's front door (pd_proxy_client_keys)")
    args = parser.parse_args()
    (dp_spread if args.check == "dp-spread" else pd_baseline)(args)


if __name__ == "__main__":
    main()
