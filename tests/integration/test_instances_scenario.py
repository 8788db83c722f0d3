# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several instances per role on harness nodes, changed while a steady load runs through the front door.

The lab's pd_2p2d_a2 (pd_a2's deployment as 2P2D: an instance of each role per node) on pd_a2's four harness nodes
(tests/harness/inventories/pd_2p2d_a2), then grown by a decode instance on D0's machine (pd_2p2d_a2_grown) and shrunk
back by retiring its host (pd_2p2d_a2_retiring). Each change runs under a bounded
load (tests/harness/load.py: 8 threads, at most 6000 requests and 300 s, every fourth request streamed, to the harness
network only), whose figures are printed: requests sent, failed (a 200 with no text, a stream that ends silently),
streams cut after their start with an error event, throughput and its dip. A roll, an add and a remove must lose no
request, and the proxy must not restart for any of them. Then unplanned faults under the same load, each printed with
the seconds until the front door ejected the members and served them again: a decode rank, a decode instance and a
prefill instance killed (-9), then healed by a re-run, and a decode engine frozen (docker pause) then thawed: none
may cost a request. The tests run in file order, sharing one deployment.
"""

from __future__ import annotations

import json
import re
import sys
import time

import openai
import pytest
from conftest import LAB, ROOT, run_playbook
from harness import CLIENT_KEY, admin_key, containers, finished_at, http_text, metric, node_docker, node_exec, nodes, wait_until

sys.path.insert(0, str(ROOT / "tests" / "harness"))
from load import Load  # noqa: E402  pylint: disable=wrong-import-position

HARNESS = ROOT / "tests" / "harness" / "inventories"
CLUSTER = "pd_2p2d_a2"
BASE = ("-i", str(HARNESS / CLUSTER))
GROWN = BASE + ("-i", str(HARNESS / "pd_2p2d_a2_grown"))
RETIRING = GROWN + ("-i", str(HARNESS / "pd_2p2d_a2_retiring"))
ON = ("-e", "llmops_cluster=" + CLUSTER)
NODES = {"p0": "llmops-pd-a2-p0", "p1": "llmops-pd-a2-p1", "d0": "llmops-pd-a2-d0", "d1": "llmops-pd-a2-d1"}
PROXY = "http://10.213.7.41:8081"
# the image every engine rolls to; the proxy keeps its own (pd_proxy_image follows vllm_engine_image otherwise)
ROLLED = ("-e", "vllm_engine_image=llmops-engine:rolled", "-e", "pd_proxy_image=llmops-engine:test")
# the front door's admin API, asked from its own host with the admin key deploy made (argv[1])
DOOR = """
import sys, urllib.request
request = urllib.request.Request("http://10.213.7.41:8081/members", headers={"Authorization": "Bearer " + sys.argv[1]})
print(urllib.request.urlopen(request, timeout=10).read().decode())
"""
LISTS = """
import json, sys, urllib.request
request = urllib.request.Request("http://10.213.7.41:8081/instances/add", data=json.dumps({"type": "decode", "instances": []}).encode(),
                                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + sys.argv[1]})
print(urllib.request.urlopen(request, timeout=10).read().decode())
"""


def deploy(inventory=BASE, *extra, check=True):
    return run_playbook("pd_2p2d_a2.yml", LAB, *inventory, "--skip-tags", "preflight", *extra, check=check)


def under_load(what, change, workers=8):
    """Runs change() while a bounded load goes through the front door; returns (change's result, the load's report)."""
    with Load(PROXY, model="glm", requests=6000, seconds=300, workers=workers, stream_every=4, key=CLIENT_KEY) as load:
        time.sleep(2)  # the load is steady before the change starts
        result = change()
        time.sleep(2)  # and goes on after it ended
    report = load.report(what)
    print(report["line"])
    return result, report


def proxy_started():
    return node_docker(NODES["p0"], "inspect", "-f", "{{.State.StartedAt}}", "pd-proxy").stdout.strip()


def front_door_lists():
    """What the running proxy lists, asked from its own host with the admin key."""
    answer = json.loads(node_exec(NODES["p0"], "python3", "-c", LISTS, admin_key(CLUSTER)).stdout)
    return sorted(answer["current_prefill_instances"]), sorted(answer["current_decode_instances"])


def door_states():
    """{member: state} as the running front door sees them (its /members, asked from its own host with the admin key), {}
    while it does not answer."""
    try:
        answer = json.loads(node_exec(NODES["p0"], "python3", "-c", DOOR, admin_key(CLUSTER)).stdout)
    except ValueError:
        return {}
    return {m["member"]: m["state"] for m in answer["members"]}


def fault_under_load(what, fault, members, heal):
    """fault() under the steady load; the seconds until the front door ejected every one of members (asked about every
    0.2 s, each ask about 0.1 s); 4 s more left alone (requests keep coming); heal() and the seconds from its start
    until they serve again. Returns (heal's result, the load's report, the figures); fails when either did not happen
    within its bound."""
    figures = {}

    def change():
        fault()
        figures["ejected"] = wait_until(lambda: {door_states().get(m) for m in members} == {"ejected"}, 30,
                                        "the front door ejecting %s" % members)
        time.sleep(4)
        healing = time.monotonic()
        result = heal()
        wait_until(lambda: {door_states().get(m) for m in members} == {"serving"}, 60, "%s serving again" % members)
        figures["back"] = round(time.monotonic() - healing, 1)
        return result

    result, report = under_load(what, change)
    counts = (what, report["sent"], report["failed"], report["cut"], figures["ejected"], figures["back"])
    print("%s: %d sent, %d failed, %d streams cut after their start (each ended with an error event), ejected %s s after "
          "the fault, serving again %s s after the heal began" % counts)
    return result, report, figures


def lists_now():
    """front_door_lists(), or None while the proxy does not answer (restarting)."""
    try:
        return front_door_lists()
    except (ValueError, KeyError):
        return None


def served(url):
    """Requests an engine finished, from its /metrics."""
    return metric(http_text(url + "/metrics"), "vllm:request_success_total")


@pytest.fixture(scope="module")
def two_by_two():
    nodes(HARNESS / "pd_a2", "up")
    for node in NODES.values():
        node_docker(node, "tag", "llmops-engine:test", "llmops-engine:rolled")
    result = deploy()
    yield result
    run_playbook("teardown.yml", LAB, *BASE, *ON, "-e", "llmops_confirm_teardown=" + CLUSTER, check=False)


def test_each_instance_runs_on_its_node_and_verify_proves_every_pair(two_by_two):
    found = {name: sorted(containers(node, CLUSTER)) for name, node in NODES.items()}
    assert found == {"p0": ["pd-proxy", "vllm-ascend-prefill-dp0"], "p1": ["vllm-ascend-prefill-b-dp0"],
                     "d0": ["vllm-ascend-decode-dp0", "vllm-ascend-decode-dp1"],
                     "d1": ["vllm-ascend-decode-b-dp0", "vllm-ascend-decode-b-dp1"]}
    verified = run_playbook("verify.yml", LAB, *BASE, *ON, check=False)
    assert verified.returncode == 0, verified.output[-3000:]
    pairs = re.findall(r"KV pair (\S+) -> (\S+): ok", verified.output)
    assert sorted(set(pairs)) == [("prefill", "decode"), ("prefill", "decode-b"), ("prefill-b", "decode"), ("prefill-b", "decode-b")]


def test_the_openai_client_lists_the_model_completes_streams_and_gets_the_engines_errors(two_by_two):
    """The official OpenAI client against the front door, as a new user would try it."""
    client = openai.OpenAI(base_url=PROXY + "/v1", api_key=CLIENT_KEY, max_retries=0, timeout=30)
    assert [model.id for model in client.models.list()] == ["glm"]
    whole = client.completions.create(model="glm", prompt="the openai client", max_tokens=4, temperature=0)
    assert whole.choices[0].text and whole.choices[0].finish_reason == "length"
    chunks = list(client.completions.create(model="glm", prompt="the openai client", max_tokens=4, temperature=0,
                                            stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == whole.choices[0].text  # greedy: the same text
    assert chunks[-1].choices[0].finish_reason == "length"
    messages = [{"role": "user", "content": "the openai client"}]
    chat = client.chat.completions.create(model="glm", messages=messages, max_tokens=4)
    streamed = list(client.chat.completions.create(model="glm", messages=messages, max_tokens=4, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in streamed if c.choices) == chat.choices[0].message.content
    with pytest.raises(openai.NotFoundError, match="The model `nope` does not exist"):
        client.completions.create(model="nope", prompt="hi", max_tokens=4)
    with pytest.raises(openai.BadRequestError, match="max_tokens=300000 cannot be greater than max_model_len=200000"):
        client.completions.create(model="glm", prompt="hi", max_tokens=300000)


def test_rolling_every_instance_under_load_loses_no_request(two_by_two):
    """A new image for every engine, with two instances per role and no outage accepted: each instance in turn is taken
    out of the front door, drained, restarted and put back, decode first; the proxy keeps running."""
    before = proxy_started()
    result, report = under_load("roll of 2 decode and 2 prefill instances", lambda: deploy(BASE, *ROLLED))
    order = re.findall(r"step (\d+) \(wave 0\): take (\S+) out of the front door", result.output)
    assert order == [("2", "decode"), ("3", "decode-b"), ("4", "prefill"), ("5", "prefill-b")]
    assert report["failed"] == 0 and report["sent"] > 100, report["line"]
    assert proxy_started() == before
    images = {node_docker(node, "inspect", "-f", "{{.Config.Image}}", name).stdout.strip()
              for node in NODES.values() for name in containers(node, CLUSTER) if name != "pd-proxy"}
    assert images == {"llmops-engine:rolled"}
    # each restarted prefill served again only after a pair probe with a decode member (stale transfer state)
    log = node_docker(NODES["p0"], "logs", "pd-proxy").stderr
    for prefill in ("10.213.7.41:9081", "10.213.7.42:9081"):
        assert re.search(r"prefill %s: serving \(pair probe with 10\.213\.7\.4[34]:99\d\d passed\)" % re.escape(prefill), log), log[-3000:]
    assert set(door_states().values()) == {"serving"}


def test_a_new_decode_instance_joins_under_load_without_restarting_the_proxy(two_by_two):
    before = proxy_started()
    result, report = under_load("add of decode instance c", lambda: deploy(GROWN, *ROLLED))
    assert "step 1 (wave 0): vllm-ascend-decode-c-dp0 on pd_2p2d_a2_d0c: not running (missing)" in result.output
    assert report["failed"] == 0, report["line"]
    assert proxy_started() == before
    decode = front_door_lists()[1]
    assert "10.213.7.43:9910" in decode and "10.213.7.43:9911" in decode
    received = served("http://10.213.7.43:9910") + served("http://10.213.7.43:9911")
    print("decode instance c answered %d requests of the load" % received)
    assert received > 0


def test_a_retired_instance_leaves_under_load_and_a_restarted_proxy_knows_the_current_ones(two_by_two):
    """Decode instance c's host marked vllm_engine_retired and c no longer declared: one deploy takes c out of the
    front door, drains it and removes its containers, and nothing else restarts."""
    before = proxy_started()
    result, report = under_load("removal of decode instance c", lambda: deploy(RETIRING, *ROLLED))
    assert "pd_2p2d_a2_d0c: retired (vllm_engine_retired)" in result.output
    assert "before step 1: retire vllm-ascend-decode-c-dp0 on pd_2p2d_a2_d0 (no spec of the plan names it)" in result.output
    assert not re.search(r"step \d+ \(wave \d+\): vllm-ascend-\S+ on", result.output)  # nothing (re)started
    assert report["failed"] == 0, report["line"]
    assert proxy_started() == before
    assert sorted(containers(NODES["d0"], CLUSTER)) == ["vllm-ascend-decode-dp0", "vllm-ascend-decode-dp1"]
    planned = (["10.213.7.41:9081", "10.213.7.42:9081"], ["10.213.7.43:9900", "10.213.7.43:9901", "10.213.7.44:9900", "10.213.7.44:9901"])
    # upstream drops a removed member once no request is in flight: the load has ended
    wait_until(lambda: lists_now() == planned, 30, "the front door listing only the plan's members")
    # a proxy restarted later (a reboot) starts with the members file, not the argv it was created with (2P2D + c)
    node_docker(NODES["p0"], "restart", "pd-proxy")
    wait_until(lambda: lists_now() == planned, 60, "the restarted proxy listing the plan's members")


DECODE_B = ["10.213.7.44:9900", "10.213.7.44:9901"]


def restarted_by(result):
    return set(re.findall(r"step \d+ \(wave \d+\): (vllm-ascend-\S+) on", result.output))


def test_a_killed_decode_rank_costs_no_request_and_a_rerun_restarts_its_instance_only(two_by_two):
    """kill -9 of one rank of decode-b: the front door ejects it and sends its share elsewhere; left alone, nothing
    fails; the re-run restarts its DP group only, and the front door serves it again after its pair probes."""
    before = proxy_started()
    result, report, _figures = fault_under_load(
        "kill -9 of decode-b rank 1", lambda: node_docker(NODES["d1"], "kill", "vllm-ascend-decode-b-dp1"),
        DECODE_B[1:], lambda: deploy(BASE, *ROLLED))
    assert restarted_by(result) == {"vllm-ascend-decode-b-dp0", "vllm-ascend-decode-b-dp1"}  # its instance only
    assert proxy_started() == before
    assert report["failed"] == 0 and report["sent"] > 100, report["line"]


def test_a_killed_decode_instance_and_a_killed_prefill_instance_cost_no_request(two_by_two):
    for what, node, names, members in (
            ("kill -9 of decode instance decode-b", "d1", ["vllm-ascend-decode-b-dp0", "vllm-ascend-decode-b-dp1"], DECODE_B),
            ("kill -9 of prefill instance prefill-b", "p1", ["vllm-ascend-prefill-b-dp0"], ["10.213.7.42:9081"])):
        result, report, _figures = fault_under_load(
            what, lambda node=node, names=names: node_docker(NODES[node], "kill", *names), members, lambda: deploy(BASE, *ROLLED))
        assert restarted_by(result) == set(names)
        assert report["failed"] == 0 and report["sent"] > 100, report["line"]


def test_a_hung_decode_engine_is_ejected_and_serves_again_once_it_answers(two_by_two):
    """docker pause freezes every process of rank 0 of decode (hung, not dead: its port still accepts); its requests
    in flight are moved, and once unpaused it serves again after its pair probes."""
    _result, report, _figures = fault_under_load(
        "SIGSTOP (docker pause) of decode rank 0", lambda: node_docker(NODES["d0"], "pause", "vllm-ascend-decode-dp0"),
        ["10.213.7.43:9900"], lambda: node_docker(NODES["d0"], "unpause", "vllm-ascend-decode-dp0"))
    assert report["failed"] == 0 and report["sent"] > 100, report["line"]
    with Load(PROXY, model="glm", requests=200, seconds=60, workers=4, key=CLIENT_KEY) as after:
        after.wait()
    assert after.failed() == [] and after.sent() > 0
    assert set(door_states().values()) == {"serving"}


def test_status_logs_and_stop_name_every_instance(two_by_two, tmp_path):
    """status has an instance column, the logs bundle says which container is which instance's, and stop stops every
    instance, the proxy first."""
    shown = run_playbook("status.yml", LAB, *BASE, *ON, *ROLLED, check=False)
    assert shown.returncode == 0, shown.output[-3000:]
    rows = re.findall(r"(pd_2p2d_a2_\w+)\s+(vllm-ascend-\S+)\s+(prefill|decode)\s+(\S+)\s+\d", shown.output)
    assert {(container, instance) for _host, container, _role, instance in rows} == {
        ("vllm-ascend-prefill-dp0", "prefill"), ("vllm-ascend-prefill-b-dp0", "prefill-b"), ("vllm-ascend-decode-dp0", "decode"),
        ("vllm-ascend-decode-dp1", "decode"), ("vllm-ascend-decode-b-dp0", "decode-b"), ("vllm-ascend-decode-b-dp1", "decode-b")}
    run_playbook("logs.yml", LAB, *BASE, *ON, *ROLLED, "-e", "llmops_logs_dir=%s" % tmp_path)
    bundle = next(path for path in tmp_path.iterdir() if path.is_dir())
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["containers"]["pd_2p2d_a2_d1/vllm-ascend-decode-b-dp1"] == {
        "kind": "engine", "role": "decode", "instance": "decode-b", "dp_ranks": [1]}
    assert {path.split("/containers/")[1][:-len(".log")] for path in manifest["files"] if path.endswith(".log")} == \
        {name.split("/")[1] for name in manifest["containers"]}
    run_playbook("stop.yml", LAB, *BASE, *ON, *ROLLED, "-e", "llmops_stop_timeout=10")
    found = {(node, name): up for node in NODES.values() for name, (_started, up) in containers(node, CLUSTER).items()}
    assert len(found) == 7 and not any(found.values())
    engines = [finished_at(name, node) for node, name in found if name != "pd-proxy"]
    assert finished_at("pd-proxy", NODES["p0"]) < min(engines)  # the proxy went first
