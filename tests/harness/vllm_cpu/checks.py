# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the CPU scenarios check with real vLLM beyond the product's verify (tests only).

    python checks.py dp-spread API_URL [--requests 12]
        concurrent requests to the API server of a DP group reach more than one engine: vLLM's
        vllm:request_success_total counts them per engine label.
    python checks.py pd-baseline PROXY_URL PREFILL_URL DECODE_URL [DECODE_URL...] [--api-key KEY] [--client-key KEY]
        a greedy completion through the PD proxy is decoded with the prefill's KV (the prompt tokens
        of source external_kv_transfer rise on one of the decode instances, whichever the front door
        chose) and its text equals what the prefill
        engine alone answers for the same prompt (the single-engine baseline). With --api-key, the
        engines must refuse /v1/* and the routes vLLM's own check leaves open without it (401): the proxy
        then got through with the key the collection gave it. With --client-key, the proxy's front door must refuse a completion
        without it (401) and serve one with it, while the engines refuse the client key.
    python checks.py failover PROXY_URL MEMBER --client-key KEY --node NODE --container NAME
        under a bounded load through the front door (4 threads, at most 300 requests and 180 s), the
        decode engine MEMBER (host:port) runs in, container NAME on harness node NODE, is killed (-9);
        the load goes on (10 s, then until 8 requests were answered after the kill, 90 s at most), then
        it is started again. Every answer is checked (a 200 with no text
        fails); the front door's /metrics tell when it ejected MEMBER and when it served it again (its
        start and a pair probe). No request may fail.
    python checks.py openai PROXY_URL --client-key KEY
        the official OpenAI client (the openai package) against the front door: the model listed,
        a completion and a chat completion, streamed and not (the same greedy text either way), an
        unknown model refused with 404 and max_tokens past the context with 400, as vLLM says them.

Prints what it measured; exits 1 naming what failed. Only addresses of the harness are asked.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:]+)\{(?P<labels>[^}]*)\}\s+(?P<value>\S+)$')
HEADERS = {"Content-Type": "application/json"}  # plus the engines' key (--api-key)
AFTER_KILL = 8  # requests the failover check wants answered after its kill
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


# Routes vLLM's own key check leaves open (/v1, /v2, /inference and /cohere only): /invocations serves completions.
UNGUARDED_BY_VLLM = (("/invocations", {"prompt": "no key", "max_tokens": 1}), ("/tokenize", {"prompt": "no key"}),
                     ("/docs", None), ("/openapi.json", None))


def refuses_without_key(url):
    """Whether the engine answers 401 to /v1/models and to every route of UNGUARDED_BY_VLLM without a key."""
    for path, body in (("/v1/models", None),) + UNGUARDED_BY_VLLM:
        request = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30):
                return False
        except urllib.error.HTTPError as err:
            if err.code != 401:
                return False
    return True


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
        open_engines = [url for url in [args.prefill] + args.decode if not refuses_without_key(url)]
        if open_engines:
            sys.exit("PD: %s answered a route without the API key" % ", ".join(open_engines))
        print("the engines refuse /v1/models and %s without the API key (401)" % ", ".join(p for p, _b in UNGUARDED_BY_VLLM))
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
    before = sum(external_tokens(url) for url in args.decode)
    through = completion(args.proxy, name, PROMPT, headers=front)
    taken = sum(external_tokens(url) for url in args.decode) - before
    alone = completion(args.prefill, name, PROMPT)
    print("through the proxy: %r; prefill alone: %r; decode took %d prompt tokens of prefill KV" % (through, alone, taken))
    problems = []
    if taken <= 0:
        problems.append("the decode took no prompt tokens from the prefill's KV (external_kv_transfer did not rise)")
    if through != alone:
        problems.append("the text through the proxy differs from the single-engine baseline")
    if problems:
        sys.exit("PD: " + "; ".join(problems))


def member_state(proxy, member):
    """The state the front door gives member on its /metrics (open, like /healthcheck), None when it lists none."""
    try:
        with urllib.request.urlopen(proxy + "/metrics", timeout=10) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError):  # a busy machine: the next poll asks again
        return None
    found = re.search(r'llmops_front_door_member_state\{role="\w+",member="%s",state="(\w+)"\} 1' % re.escape(member), text)
    return found.group(1) if found else None


def seconds_until(predicate, bound):
    start = time.monotonic()
    while time.monotonic() - start < bound:
        if predicate():
            return round(time.monotonic() - start, 1)
        time.sleep(0.2)
    return None


def running(docker, container):
    """Whether the container runs (docker inspect's State.Running), None when docker could not say."""
    seen = subprocess.run(docker + ["inspect", "-f", "{{.State.Running}}", container], check=False, capture_output=True, text=True)
    return {"true": True, "false": False}.get(seen.stdout.strip())


def front_door_counts(proxy):
    """The front door's /metrics lines of its members and its requests by outcome (what a failed check shows)."""
    try:
        with urllib.request.urlopen(proxy + "/metrics", timeout=10) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError) as err:
        return "its /metrics did not answer: %s" % err
    return "\n".join(line for line in text.splitlines() if line.startswith("llmops_front_door") and not line.endswith(" 0"))


def failover(args):
    front = {"Content-Type": "application/json", "Authorization": "Bearer " + args.client_key}
    name = model(args.proxy, headers=front)
    results, stop = [], threading.Event()  # results: (seconds since the start when answered, problem or None)
    started = time.monotonic()

    def send(worker):
        number = 0
        while not stop.is_set() and len(results) < 300 and time.monotonic() - started < 240:
            number += 1
            try:
                text = completion(args.proxy, name, "failover load %d of worker %d" % (number, worker), 8, headers=front)
                results.append((time.monotonic() - started, None if text else "HTTP 200 with no text"))
            except urllib.error.HTTPError as err:  # the front door's JSON error names the cause: kept whole
                results.append((time.monotonic() - started, "HTTP %d: %s" % (err.code, err.read().decode(errors="replace")[:600])))
            except (urllib.error.URLError, OSError, KeyError, IndexError, ValueError) as err:
                results.append((time.monotonic() - started, "%s: %s" % (type(err).__name__, err)))

    threads = [threading.Thread(target=send, args=(worker,), daemon=True) for worker in range(4)]
    for thread in threads:
        thread.start()
    seconds_until(lambda: len(results) >= 4, 60)  # the load is flowing through every member
    docker = ["docker", "exec", args.node, "docker"]
    killing = subprocess.run(docker + ["kill", args.container], check=False, capture_output=True, text=True)
    killed = time.monotonic() - started
    # the node's Docker (20.10) once answered the kill with an error although the engine was killed (exited 137): what
    # counts is that it no longer runs
    if seconds_until(lambda: running(docker, args.container) is False, 15) is None:
        sys.exit("failover: docker kill %s left it running: %s" % (args.container, killing.stderr.strip()))
    ejected = seconds_until(lambda: member_state(args.proxy, args.member) == "ejected", 30)
    # left alone: the load goes on until AFTER_KILL requests were answered after the kill (at least 10 s, at most 90 s);
    # how many a slow machine answers varies, so the count is a floor and printed, never a timing
    time.sleep(10)
    seconds_until(lambda: sum(1 for answered_at, _problem in results if answered_at > killed) >= AFTER_KILL, 80)
    stop.set()  # real vLLM's start on two busy cores would take minutes beside the load
    for thread in threads:
        thread.join(150)
    subprocess.run(docker + ["start", args.container], check=True, capture_output=True)
    back = seconds_until(lambda: member_state(args.proxy, args.member) == "serving", 400)
    failed = [problem for _answered_at, problem in results if problem]
    after = sum(1 for answered_at, _problem in results if answered_at > killed)
    errors = "; errors: " + " | ".join(sorted(set(failed))[:3]) if failed else ""
    print("kill -9 of decode %s under load: %d requests sent (%d answered after the kill), %d failed; ejected %s s after "
          "the kill, serving again %s s after its container started (real vLLM's own start and a pair probe)%s" % (
              args.member, len(results), after, len(failed), ejected, back, errors))
    if failed or ejected is None or back is None or after < AFTER_KILL // 2:
        print("the front door's own account of it:\n" + front_door_counts(args.proxy))
        sys.exit("failover: %d of %d failed, %d answered after the kill, ejected %s, back %s%s" % (
            len(failed), len(results), after, ejected, back, errors))


def openai_client(args):
    import openai  # pylint: disable=import-outside-toplevel  # the controller's test requirements, not the nodes'

    client = openai.OpenAI(base_url=args.proxy + "/v1", api_key=args.client_key, max_retries=0, timeout=120)
    problems = []
    name = [model.id for model in client.models.list()]
    if len(name) != 1:
        sys.exit("openai: models.list() gave %s" % name)
    name = name[0]
    whole = client.completions.create(model=name, prompt=PROMPT, max_tokens=8, temperature=0).choices[0].text
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model=name, prompt=PROMPT, max_tokens=8, temperature=0, stream=True) if c.choices)
    messages = [{"role": "user", "content": PROMPT}]
    chat = client.chat.completions.create(model=name, messages=messages, max_tokens=8, temperature=0).choices[0].message.content
    chat_streamed = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(
        model=name, messages=messages, max_tokens=8, temperature=0, stream=True) if c.choices)
    print("openai client: model %s; completion %r, streamed %r; chat %r, streamed %r" % (name, whole, streamed, chat, chat_streamed))
    if not whole or whole != streamed:
        problems.append("the streamed completion differs from the whole one")
    if not chat or chat != chat_streamed:
        problems.append("the streamed chat completion differs from the whole one")
    for what, call, refused in (
            ("an unknown model", lambda: client.completions.create(model="nope", prompt="hi", max_tokens=2), openai.NotFoundError),
            ("max_tokens past the context", lambda: client.completions.create(model=name, prompt="hi", max_tokens=1 << 20),
             openai.BadRequestError)):
        try:
            call()
            problems.append("%s was served" % what)
        except refused as err:
            print("openai client: %s refused with %d: %s" % (what, err.status_code, err.message[:120]))
        except openai.APIError as err:
            problems.append("%s answered %s: %s" % (what, type(err).__name__, err))
    if problems:
        sys.exit("openai: " + "; ".join(problems))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="check", required=True)
    spread = sub.add_parser("dp-spread")
    spread.add_argument("api")
    spread.add_argument("--requests", type=int, default=12)
    pd = sub.add_parser("pd-baseline")
    pd.add_argument("proxy")
    pd.add_argument("prefill")
    pd.add_argument("decode", nargs="+")
    pd.add_argument("--api-key", help="the engines' VLLM_API_KEY: they must refuse requests without it")
    pd.add_argument("--client-key", help="a client key of the proxy's front door (pd_proxy_client_keys)")
    fail = sub.add_parser("failover")
    fail.add_argument("proxy")
    fail.add_argument("member", help="host:port of the decode engine killed")
    fail.add_argument("--client-key", required=True)
    fail.add_argument("--node", required=True, help="the harness node whose Docker engine runs it")
    fail.add_argument("--container", required=True)
    client = sub.add_parser("openai")
    client.add_argument("proxy")
    client.add_argument("--client-key", required=True)
    args = parser.parse_args()
    {"dp-spread": dp_spread, "pd-baseline": pd_baseline, "failover": failover, "openai": openai_client}[args.check](args)


if __name__ == "__main__":
    main()
