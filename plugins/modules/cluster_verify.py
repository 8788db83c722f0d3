#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_verify
short_description: Prove that a running cluster serves and reuses KV, and report how fast
version_added: 0.1.0
description:
  - Runs on a host that reaches every address of the cluster (verify.yml uses the cluster's first host).
  - Every planned container runs and is ready (from container_state results); every API rank lists its served model
    on C(/v1/models); every pool service answers.
  - A streamed completion through the front (the PD proxy, else the first API rank) returns non-empty text (the
    example proxy answers HTTP 200 with an empty body when a decoder fails, vLLM issue 13140); its time to first token is
    measured. In a PD cluster a decode rank must have loaded KV for it (C(vllm:external_prefix_cache_hits_total)).
    A warm-up completion goes first and is reported, not judged - the first request between a decode and a prefill
    engine opens their KV side channel, whose handshake vLLM gives a fixed 5 s.
  - In a PD cluster, every prefill instance with every decode instance (each by its first API engine) gets the proxy's
    two requests from verify itself - the prefill with C(kv_transfer_params) asking for a remote decode, then the decode
    with what the prefill answered, under one C(X-Request-Id) - and the decode must answer text and load the prefill's KV,
    so that one broken pair cannot hide behind the balancer. A pair that fails is asked once more (its first request opens
    the side channel).
  - A long prompt new to the cluster, sent twice to every API rank that computes prefills (one more time than the
    engines behind it when one API server fronts a DP group, since vLLM balances by load, not by prefix), must hit a cache
    (C(vllm:prefix_cache_hits_total) or C(vllm:external_prefix_cache_hits_total) rise). Counters before and after are
    reported, and the pool services' own counters that moved.
  - With a KV pool, the ranks are asked one after another, so a rank after the first must find the prompt's blocks in
    the pool (its C(vllm:external_prefix_cache_hits_total) rises), which shows the pool shared (O(require_shared_pool)).
  - In a PD cluster, the answer through the front door and each pair's decode answer must be the prefill engine's
    own greedy answer to the same prompt (O(greedy_length)).
  - Fails naming every problem found; sends only requests, changes nothing.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Sends the same requests in check mode; they change nothing on the cluster.
  diff_mode:
    support: none
    details: Changes nothing.
options:
  specs:
    description: Every launch spec of the cluster.
    type: list
    elements: dict
    required: true
  states:
    description: The container_state result (with details) of each host, by host.
    type: dict
    required: true
  api_key:
    description: The key of the engines' API (C(VLLM_API_KEY)), when they have one.
    type: str
  front_key:
    description:
      - A client key of the PD proxy's front door (one of C(pd_proxy_client_keys)), for the completion through it.
      - When the front door checks keys, verify also sends it a completion without one, which must be refused (401).
    type: str
  ca_path:
    description: CA bundle to check an HTTPS front door's certificate with (else the system's trust store).
    type: path
  timeout:
    description: Seconds each request may take.
    type: float
    default: 60
  require_shared_pool:
    description:
      - With a KV pool and two or more API ranks using it, fail unless an engine asked after the first found the long
        prompt's blocks in the pool (a pool that is not shared, e.g. engines pointed at different masters, is a fault).
      - Set false only where the pool's data path cannot be reached (the test harness's simulated Memcache engines).
    type: bool
    default: true
  greedy_length:
    description:
      - In a PD cluster, the greedy tokens a PD answer must share with a prefill engine's own answer to the same
        prompt, through the front door and for every prefill-decode pair. A block_size or KV layout mismatch between
        P and D gives other text with HTTP 200 (vllm-ascend issue 14545); a differing pair is named with where the answers
        first differ.
    type: int
    default: 8
"""

EXAMPLES = r"""
- name: Verify the cluster
  llmops.inference.cluster_verify:
    specs: "{{ _llmops_cluster_specs }}"
    states: "{{ states_by_host }}"
"""

RETURN = r"""
report:
  description: The printable report, one line each.
  returned: always
  type: list
  elements: str
problems:
  description: Every problem found, naming the container and host.
  returned: always
  type: list
  elements: str
completion:
  description: The completion through the front - front, status, ttft and seconds (time to first token and total), text,
    and warmup (status, seconds, served, text of the unjudged completion sent before it).
  returned: when the cluster has an API
  type: dict
counters:
  description: By API rank, the cache counters before and after.
  returned: always
  type: dict
pool:
  description:
    - With a KV pool and two or more API ranks using it, what showed the pool shared - first (the engine that stored
      the long prompt's blocks), found (engines asked after it that found them in the pool, with the tokens found)
      and missed (those that did not). Null otherwise.
  returned: always
  type: dict
pairs:
  description:
    - In a PD cluster, one entry per prefill-decode instance pair - pair ("<prefill instance> -> <decode instance>"),
      prefill and decode (the engines asked), ok, status (the decode's HTTP status), loaded (prompt tokens the decode
      took from the prefill's KV), text, why (when not ok), attempts.
  returned: always
  type: list
  elements: dict
"""

import http.client
import json
import time
import urllib.error
import uuid
from urllib.parse import urlsplit

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import ConnectionError as UrlConnectionError
from ansible.module_utils.urls import open_url

from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils._text import parse_metrics
from ansible_collections.llmops.inference.plugins.module_utils.operations import _status as status
from ansible_collections.llmops.inference.plugins.module_utils.operations import _verify as verify
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta


class Client:
    def __init__(self, api_key, timeout, ca_path=None):
        self.headers = {"Content-Type": "application/json"}
        if api_key:
            self.headers["Authorization"] = "Bearer " + api_key
        self.timeout = timeout
        self.ca_path = ca_path

    def get(self, url):
        """(status, body, seconds); status 0 when nothing answered. Through http_get: urllib's
        "Connection: close" makes Memcache's metrics server drop the body."""
        start = time.monotonic()
        try:
            status, body = http_get(url, self.headers, self.timeout, ca_path=self.ca_path)
            return status, body.decode(errors="replace"), time.monotonic() - start
        except (OSError, http.client.HTTPException) as err:
            return 0, str(err), time.monotonic() - start

    def post(self, url, body, headers=None):
        return self._send(url, json.dumps(body).encode(), headers)

    def _open(self, url, data, headers=None):
        return open_url(url, data=data, headers=dict(self.headers, **(headers or {})), method="POST", timeout=self.timeout,
                        ca_path=self.ca_path)

    def _send(self, url, data, headers=None):
        start = time.monotonic()
        try:
            with self._open(url, data, headers) as answer:
                return answer.status, answer.read().decode(errors="replace"), time.monotonic() - start
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace"), time.monotonic() - start
        except (OSError, ValueError, UrlConnectionError, http.client.HTTPException) as err:
            return 0, str(err), time.monotonic() - start

    def stream(self, url, body):
        """A streamed completion: (status, text, seconds to the first text, seconds in all)."""
        start, first, text = time.monotonic(), None, ""
        try:
            with self._open(url, json.dumps(dict(body, stream=True)).encode()) as answer:
                for raw in answer:
                    line = raw.decode(errors="replace").strip()
                    if not line.startswith("data:") or line == "data: [DONE]":
                        continue
                    try:
                        piece = "".join(c.get("text") or "" for c in json.loads(line[5:]).get("choices") or [])
                    except ValueError:
                        continue
                    if piece and first is None:
                        first = time.monotonic() - start
                    text += piece
                return answer.status, text, first, time.monotonic() - start
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode(errors="replace")[:200], None, time.monotonic() - start
        except (OSError, ValueError, UrlConnectionError, http.client.HTTPException) as err:
            return 0, str(err), None, time.monotonic() - start


def label(spec):
    return "%s (%s)" % (spec["name"], spec["host"])


def metrics(client, specs):
    return {spec["name"]: parse_metrics(client.get(spec_meta.metrics_url(spec))[1]) for spec in specs if spec_meta.metrics_url(spec)}


def refused_without_key(front_client, front, problems):
    """A front door that checks keys must refuse a completion without one (its 401 is the proof)."""
    if not spec_meta.of(front).get("client_auth"):
        return
    anonymous = Client(None, front_client.timeout, front_client.ca_path)
    code, body, _seconds = anonymous.post(verify.base_url(front) + "/v1/completions", {"prompt": "no key", "max_tokens": 1})
    if code != 401:
        problems.append("%s on %s answered a completion without a key with HTTP %s, not 401: %s" % (
            front["name"], front["host"], code or "nothing", body[:120]))


def one_pair(client, model, prefill, decode, tokens=8):
    """The proxy's two requests, sent by verify itself to one prefill and one decode engine (one X-Request-Id for both,
    as the proxy does): the prefill keeps the prompt's KV and says where; the decode must load it and answer."""
    headers = {"X-Request-Id": "llmops-verify-" + uuid.uuid4().hex}
    prompt = "verify pair %s: the KV of this prompt travels from prefill to decode" % uuid.uuid4().hex[:8]
    code, body, _seconds = client.post(verify.base_url(prefill) + "/v1/completions", verify.prefill_request(model, prompt), headers)
    params = None
    if code == 200:
        try:
            params = json.loads(body).get("kv_transfer_params")
        except ValueError:
            params = None
    if not params:
        return {"ok": False, "status": code, "loaded": 0, "why": "the prefill answered HTTP %s without kv_transfer_params: %s"
                % (code or "nothing", body[:160])}
    before = metrics(client, [decode])[decode["name"]]
    code, body, _seconds = client.post(verify.base_url(decode) + "/v1/completions", verify.decode_request(model, prompt, params, tokens),
                                       headers)
    loaded = verify.deltas(before, metrics(client, [decode])[decode["name"]])[verify.EXTERNAL_HITS]
    try:
        text = "".join(choice.get("text") or "" for choice in json.loads(body)["choices"]) if code == 200 else ""
    except (ValueError, KeyError, TypeError):
        text = ""
    ok = code == 200 and bool(text.strip()) and loaded > 0
    why = ("the decode answered HTTP %s: %s" % (code or "nothing", body[:160]) if code != 200 else
           "the decode answered no text" if not text.strip() else "the decode loaded no KV (%s did not rise)" % verify.EXTERNAL_HITS)
    result = {"ok": ok, "status": code, "loaded": loaded, "text": text, "why": None if ok else why}
    if ok:  # the KV arrived: is it read as the prefill wrote it? The prefill alone must answer the same
        alone = answer_text(client, verify.base_url(prefill), verify.greedy_request(model, prompt, tokens))
        differs = verify.disagreement(text, alone) if alone is not None else None
        result["same_as_alone"] = alone is not None and differs is None
        if differs:
            result.update(ok=False, why=verify.disagreement_text(differs, "the decode", "the prefill", tokens))
    return result


def answer_text(client, base, body):
    """The text of a completion, None when there is none (not HTTP 200, no choices)."""
    code, answer, _seconds = client.post(base + "/v1/completions", body)
    try:
        return "".join(choice.get("text") or "" for choice in json.loads(answer)["choices"]) if code == 200 else None
    except (ValueError, KeyError, TypeError):
        return None


def pair_checks(client, found, problems, tokens=8):
    """Every prefill instance with every decode instance (verify.kv_pairs); a pair's first request may fail while its
    KV side channel opens (NIXL's fixed 5 s handshake), so a failed pair is asked once more."""
    results = []
    for prefill, decode in verify.kv_pairs(found):
        for attempt in (1, 2):  # noqa: B007  the last one is reported
            result = one_pair(client, found["model"], prefill, decode, tokens)
            if result.get("text") and not result["ok"] and result.get("same_as_alone") is False:
                break  # the answers differ: asking again would not change that
            if result["ok"]:
                break
        result.update(pair="%s -> %s" % (spec_meta.instance(prefill), spec_meta.instance(decode)), attempts=attempt,
                      prefill=prefill["name"], decode=decode["name"])
        results.append(result)
        if not result["ok"]:
            problems.append("KV pair %s (%s to %s): %s" % (result["pair"], label(prefill), label(decode), result["why"]))
    return results


def requests(client, found, problems, pd, front_client=None, tokens=8):
    """The streamed completion through the front (with the front door's key) and the long prompt sent twice,
    between two readings of the counters; adds what failed to problems."""
    front = found["front"]
    front_client = front_client or client
    refused_without_key(front_client, front, problems)
    # Every pair first, each asked twice if need be: a decode engine opens its KV side channel to a prefill engine on
    # the first request between them, and vLLM's NIXL handshake gives the answer a fixed 5 s (base_worker.py,
    # RCVTIMEO 5000), which a loaded node can exceed; that request then fails while every later one is served.
    pairs = pair_checks(client, found, problems, tokens) if pd else []
    body = verify.greedy_request(found["model"], "The future of AI is", tokens)
    # A warm-up through the front, reported but not judged (a front without PD opens its connections)
    warm_code, warm_text, _ttft, warm_seconds = front_client.stream(verify.base_url(front) + "/v1/completions", body)
    warmup = {"status": warm_code, "seconds": warm_seconds, "served": bool(warm_code == 200 and warm_text.strip()),
              "text": warm_text[:200]}
    before = metrics(client, found["api"])
    services_before = metrics(client, found["services"])
    code, text, ttft, seconds = front_client.stream(verify.base_url(front) + "/v1/completions", body)
    completion = {"front": front["name"], "status": code, "ttft": ttft, "seconds": seconds, "text": text, "warmup": warmup}
    answered = code == 200 and text.strip()
    if not answered:
        problems.append("a completion through %s on %s answered HTTP %s with %s" % (
            front["name"], front["host"], code or "nothing", "no text" if code == 200 else repr(text[:200])))
    prefills = [spec for spec in found["api"] if spec_meta.role(spec) == "prefill"]
    if pd and answered and prefills:  # the front door's PD answer against a prefill engine's own
        alone = answer_text(client, verify.base_url(prefills[0]), body)
        differs = verify.disagreement(text, alone) if alone is not None else None
        completion["alone"] = {"engine": label(prefills[0]), "same": alone is not None and differs is None, "answered": alone is not None}
        if differs:
            problems.append(verify.disagreement_text(differs, "the completion through %s" % label(front), label(prefills[0]), tokens))
    prompt = verify.long_prompt(uuid.uuid4().hex[:12])
    refused = False
    for spec in found["counting"]:
        for _attempt in range(verify.repeats(spec)):
            code, body, _seconds = client.post(verify.base_url(spec) + "/v1/completions", {"model": found["model"], "prompt": prompt, "max_tokens": 1})
            if code != 200:
                problems.append("%s on %s: the long prompt answered HTTP %s: %s" % (spec["name"], spec["host"], code or "nothing", body[:200]))
                refused = True
                break
    after = metrics(client, found["api"])
    counters = {name: {"before": {k: v for k, v in before[name].items() if k in verify.CACHE_METRICS},
                       "after": {k: v for k, v in after[name].items() if k in verify.CACHE_METRICS}} for name in after}
    counting = {} if refused else {s["name"]: verify.deltas(before[s["name"]], after[s["name"]]) for s in found["counting"]}
    decode = {s["name"]: verify.deltas(before[s["name"]], after[s["name"]]) for s in found["decode"]} if answered else {}
    problems += verify.reuse_findings(counting, decode, pd=pd)
    services_after = metrics(client, found["services"])
    services = {name: verify.service_changes(services_before[name], services_after[name]) for name in services_after}
    pooled = [s["name"] for s in found["counting"] if spec_meta.uses_pool(s)]
    return {"counters": counters, "completion": completion, "services": services, "pool": verify.pool_sharing(pooled, counting),
            "pairs": pairs}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            specs=dict(type="list", elements="dict", required=True),
            states=dict(type="dict", required=True),
            api_key=dict(type="str", no_log=True),
            front_key=dict(type="str", no_log=True),
            ca_path=dict(type="path"),
            timeout=dict(type="float", default=60),
            require_shared_pool=dict(type="bool", default=True),
            greedy_length=dict(type="int", default=8),
        ),
        supports_check_mode=True,
    )
    specs = module.params["specs"]
    client = Client(module.params["api_key"], module.params["timeout"], module.params["ca_path"])
    # the proxy's front door has keys of its own; without a front door the front is an engine, asked with the engines' key
    front_client = Client(module.params["front_key"] or module.params["api_key"], module.params["timeout"], module.params["ca_path"])
    state = status.cluster_status(module.params["states"], specs)
    problems = list(state["degraded"])
    # a container already reported down is not asked again: one problem per cause
    up = {row["container"] for row in state["rows"] if row["state"] == "running"}
    planned = verify.targets(specs)
    found = verify.targets([spec for spec in specs if spec["name"] in up])
    checks = []
    for spec in found["api"]:
        code, body, seconds = client.get(verify.base_url(spec) + "/v1/models")
        try:
            names = [model["id"] for model in json.loads(body)["data"]]
        except (ValueError, KeyError, TypeError):
            names = []
        ok = code == 200 and found["model"] in names
        checks.append({"endpoint": label(spec), "check": "/v1/models", "ok": ok, "seconds": seconds})
        if not ok:
            problems.append("%s on %s: /v1/models answered %s, not the served model %s" % (spec["name"], spec["host"], code or body, found["model"]))
    roles = {(row["host"], row["container"]): row["role"] for row in state["rows"]}
    for spec in found["services"] + ([found["proxy"]] if found["proxy"] else []):
        url = verify.health_url(spec)
        code, body, seconds = client.get(url)
        # a service in HA says its role now (master leader, master standby, etcd follower); status's rules name a
        # pool without a leader or a standby among the problems; any other check is named by the path it asks
        what = roles.get((spec["host"], spec["name"])) if spec_meta.ha(spec) else urlsplit(url).path.lstrip("/")[:22]
        checks.append({"endpoint": label(spec), "check": what, "ok": code == 200, "seconds": seconds})
        if code != 200:
            problems.append("%s on %s: %s answered %s" % (spec["name"], spec["host"], url, code or body))
    relayed = verify.relay_probe([spec for spec in specs if spec["name"] in up])
    if relayed:  # the monitoring's way in answers as Prometheus asks it
        relay, url, through = relayed
        code, body, seconds = client.get(url)
        checks.append({"endpoint": label(relay), "check": "relays %s" % through, "ok": code == 200, "seconds": seconds})
        if code != 200:
            problems.append("%s on %s: %s answered %s" % (relay["name"], relay["host"], url, code or body))
    if planned["front"] and planned["front"]["name"] not in up:
        problems.append("no request was sent: the front %s on %s is not running" % (planned["front"]["name"], planned["front"]["host"]))
        found["front"] = None

    result = {"counters": {}, "completion": None, "pool": None}
    if found["front"]:
        result = requests(client, found, problems, pd=planned["proxy"] is not None,
                          front_client=front_client if found["front"] is found["proxy"] else client, tokens=module.params["greedy_length"])
    if module.params["require_shared_pool"] and result["pool"] and not result["pool"]["found"]:
        problems.append(verify.pool_line(result["pool"]))
    report = verify.report(checks, result["completion"], result["counters"], result.get("services") or {}, result["pool"],
                           result.get("pairs") or [])
    module.exit_json(changed=False, report=report, problems=problems, completion=result["completion"], counters=result["counters"],
                     pool=result["pool"], pairs=result.get("pairs") or [])


if __name__ == "__main__":
    main()
