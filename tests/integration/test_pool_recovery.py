# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recovery of a KV-pool cluster: the lab's pd_pool_a2 (004 5.4, real mooncake_master) on
four harness nodes. When the master dies, re-running deploy restarts it and then every engine
(a restarted master has lost what they registered, Mooncake #2246), in the deployment's order;
the proxy keeps running. A real Prometheus scrapes the cluster with monitoring.yml's targets, and every query
of its dashboard answers."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse

import pytest
from conftest import LAB, ROOT, run_playbook
from harness import (
    POOL_ATTACKER,
    attacker,
    containers,
    free_port,
    http_json,
    node_docker,
    recap_changed,
    tcp_from,
    tcp_from_container_on,
    wait_http,
)

INVENTORY = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2"
NODES = {"pd_pool_a2_p0": "llmops-pool-a2-p0", "pd_pool_a2_p1": "llmops-pool-a2-p1",
         "pd_pool_a2_d0": "llmops-pool-a2-d0", "pd_pool_a2_d1": "llmops-pool-a2-d1"}
MASTER_NODE = "llmops-pool-a2-p0"


def deploy():
    return run_playbook("pd_pool_a2.yml", LAB, "-i", str(INVENTORY))


def started():
    """{container: StartedAt} across the nodes (RFC 3339, same precision: comparable as text)."""
    return {name: when for node in NODES.values() for name, (when, _up) in containers(node, "pd_pool_a2").items()}


@pytest.fixture(scope="module")
def cluster(pool_nodes):  # pylint: disable=unused-argument,redefined-outer-name  # the nodes, shared with test_pool_ha
    deploy()
    yield
    run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2",
                 "-e", "llmops_confirm_teardown=pd_pool_a2", check=False)


def test_a_second_run_changes_nothing(cluster):
    """The idempotence a molecule scenario checks (this cluster's is left to the lane that has its nodes)."""
    before = started()
    again = recap_changed(deploy().output)
    assert set(NODES) <= set(again) and set(again.values()) == {0}, again
    assert started() == before


def test_a_dead_master_is_restarted_first_then_every_engine_after_it(cluster):
    before = started()
    assert "mooncake-master" in before and "metrics-relay" in before and len(before) == 13
    node_docker(MASTER_NODE, "kill", "mooncake-master")
    result = deploy()
    steps = [line.strip() for line in result.output.splitlines() if "step " in line and " (wave " in line]
    assert "vllm-ascend-decode-dp3 on pd_pool_a2_d0: restarted after mooncake-master (not running (stopped)): " \
           "engines register with it" in result.output, "\n".join(steps) or result.output[-3000:]
    after = started()
    engines = [name for name in after if name.startswith("vllm-ascend-")]
    assert all(after[name] != before[name] for name in engines + ["mooncake-master"])
    assert after["pd-proxy"] == before["pd-proxy"] and after["metrics-relay"] == before["metrics-relay"]  # no registration
    decode = [after[name] for name in engines if "-decode-" in name]
    prefill = [after[name] for name in engines if "-prefill-" in name]
    # the 5.4 order: master, then decode, then prefill, each wave waited for
    assert after["mooncake-master"] < min(decode) and max(decode) < min(prefill)
    result = run_playbook("verify.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode == 0, result.output[-3000:]
    assert "mooncake-master (pd_pool_a2_p0)" in result.output
    assert "the same greedy prompt to vllm-ascend-prefill-dp0 (pd_pool_a2_p0) alone: the same answer" in result.output


def test_prometheus_scrapes_every_target_of_monitoring_yml_with_its_labels(cluster, tmp_path):
    """Debian's Prometheus, on loopback, reads the targets and rules monitoring.yml wrote for the harness
    inventory: every API engine, the real mooncake_master and the front door answer, the engines' series carry the labels,
    and no alert fires on the healthy cluster."""
    subprocess.run(["bash", str(ROOT / "tests" / "harness" / "prometheus.sh")], check=True, capture_output=True,
                   timeout=900)
    run_playbook("monitoring.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2",
                 "-e", "llmops_monitoring_dir=%s" % tmp_path)
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(tmp_path / "pd_pool_a2-rules.yml")],
              "scrape_configs": [{"job_name": "llmops", "file_sd_configs": [{"files": [str(tmp_path / "*-targets.json")]}]}]}
    (tmp_path / "prometheus.yml").write_text(json.dumps(config))
    port = free_port()
    api = "http://127.0.0.1:%d/api/v1/" % port
    with open(tmp_path / "prometheus.log", "w", encoding="utf-8") as log, subprocess.Popen(
            ["prometheus", "--config.file=%s" % (tmp_path / "prometheus.yml"), "--storage.tsdb.path=%s" % (tmp_path / "data"),
             "--web.listen-address=127.0.0.1:%d" % port], stdout=log, stderr=subprocess.STDOUT) as server:
        try:
            scraped(api, tmp_path)
            panels_answer(api, tmp_path)
        finally:
            server.terminate()


def scraped(api, tmp_path):
    """Checks what the Prometheus at api scraped: every planned target up, labelled; every rule evaluated, quiet."""
    wait_http(api + "status/buildinfo", seconds=60)
    planned = {group["labels"]["llmops_container"]: group for group in
               json.loads((tmp_path / "pd_pool_a2-targets.json").read_text())}
    assert "mooncake-master" in planned and "pd-proxy" in planned  # the front door's /metrics: its members' state
    deadline = time.monotonic() + 60
    while True:
        active = http_json(api + "targets?state=active")["data"]["activeTargets"]
        if len(active) == len(planned) and all(target["health"] == "up" for target in active):
            break
        assert time.monotonic() < deadline, [(t["scrapeUrl"], t["health"], t["lastError"]) for t in active]
        time.sleep(1)
    # through the metrics relay (the harness names this machine a monitoring network): each target its own path on the
    # relay's address, its endpoint as its instance
    assert {target["labels"]["llmops_container"]: (target["scrapeUrl"], target["labels"]["instance"]) for target in active} == \
        {name: ("http://10.213.7.61:9410/metrics/%s/%s" % (group["labels"]["llmops_host"], name), group["labels"]["instance"])
         for name, group in planned.items()}
    # every engine's own series carry the labels the alert rules select on
    query = urllib.parse.quote('count by (llmops_container, llmops_role) (vllm:num_requests_running{llmops_cluster="pd_pool_a2"})')
    labelled = {(row["metric"]["llmops_container"], row["metric"]["llmops_role"])
                for row in http_json(api + "query?query=" + query)["data"]["result"]}
    assert labelled == {(name, group["labels"]["llmops_role"]) for name, group in planned.items()
                        if group["labels"]["llmops_role"] != "service"}
    while True:  # every rule evaluated (each second), none firing or pending on the healthy cluster
        rules = http_json(api + "rules")["data"]["groups"][0]["rules"]
        if all(rule["health"] == "ok" for rule in rules) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert len(rules) == 7 and all(rule["health"] == "ok" and rule["state"] == "inactive" for rule in rules), rules


def panels_answer(api, tmp_path):
    """Every PromQL expression of the dashboard monitoring.yml wrote returns data from this Prometheus (the rates and
    quantiles once two scrapes are in their window; a quantile of no new requests is NaN, still an answer)."""
    board = json.loads((tmp_path / "pd_pool_a2-dashboard.json").read_text())
    expressions = [(panel["title"], target["expr"]) for panel in board["panels"] for target in panel["targets"]]
    assert len(expressions) >= 12
    deadline, empty = time.monotonic() + 60, expressions
    while empty and time.monotonic() < deadline:
        time.sleep(1)
        empty = [(title, expr) for title, expr in empty
                 if not http_json(api + "query?query=" + urllib.parse.quote(expr))["data"]["result"]]
    assert empty == [], empty
    print("dashboard: %d panel queries of %d panels answered" % (len(expressions), len(board["panels"])))


MASTER = ["10.213.7.61:50088", "10.213.7.61:9003"]  # the Mooncake master's RPC and metrics ports (mooncake_master role)
RELAY, PREFILL_API = "10.213.7.61:9410", "10.213.7.61:9081"  # the metrics relay beside the front door; P0's engine API


def test_the_pool_service_answers_only_the_cluster_behind_the_host_firewall(cluster):
    """host_firewall, on by default, on a KV-pool cluster: the master's RPC and metrics ports are the cluster's; a
    monitoring network (the attacker's address listed as one) reaches the metrics relay alone, which answers GET of a
    planned /metrics and refuses the rest; host_firewall_enabled: false opens them (the collection's table removed),
    and the default closes them again."""
    ports = MASTER + [PREFILL_API, RELAY]
    outside, inside = tcp_from("attacker", ports, POOL_ATTACKER), tcp_from("llmops-pool-a2-d1", ports)
    print("the master's ports, P0's API and the relay from the attacker: %s; from pd_pool_a2_d1: %s" % (outside, inside))
    assert outside == dict.fromkeys(ports, "refused")
    # inside: the pool's ports and the relay are the cluster's; an engine's API the front door's and the relay's host's
    assert inside == dict(dict.fromkeys(ports, "connected"), **{PREFILL_API: "refused"})
    # a container on D1's own Docker bridge: its own node's engine API refuses it (a bridge address is no cluster host);
    # to the other hosts it is D1 (Docker masquerades it), which the firewall trusts as it trusts the host
    own = "10.213.7.64:9900"
    beside = tcp_from_container_on("llmops-pool-a2-d1", [own] + ports)
    print("from a container on pd_pool_a2_d1's bridge: %s" % beside)
    assert beside == dict(inside, **{own: "refused"})
    monitored = {"host_firewall_monitoring_networks": [POOL_ATTACKER + "/32"]}
    run_playbook("pd_pool_a2.yml", LAB, "-i", str(INVENTORY), "-e", json.dumps(monitored))
    assert tcp_from("attacker", ports, POOL_ATTACKER) == dict(dict.fromkeys(ports, "refused"), **{RELAY: "connected"})
    seen = attacker("--relay", "http://" + RELAY, "--relay-route", "/metrics/pd_pool_a2_p0/mooncake-master",
                    address=POOL_ATTACKER)["attempts"]
    for attempt in seen:
        print("from the monitoring network: %-55s -> %s" % (attempt["attempt"], attempt["status"]))
    assert seen[0]["status"] == 200  # Prometheus's own request
    assert [a for a in seen[1:] if a["status"] not in (404, 405)] == [] and len(seen) == 13
    opened = run_playbook("pd_pool_a2.yml", LAB, "-i", str(INVENTORY), "-e", json.dumps({"host_firewall_enabled": False}))
    assert "cluster pd_pool_a2, open by choice: host_firewall_enabled is false" in " ".join(opened.output.split())
    assert set(tcp_from("attacker", MASTER, POOL_ATTACKER).values()) == {"connected"}  # open to anyone that routes to the nodes
    deploy()  # the default again: the table back
    assert tcp_from("attacker", MASTER, POOL_ATTACKER) == dict.fromkeys(MASTER, "refused")


def test_verify_names_the_pairs_whose_decode_reads_the_kv_otherwise_than_the_prefill_wrote(cluster):
    """A decode that reads the prefill's KV with another layout answers other text with HTTP 200 (vllm-ascend #14545;
    the simulator's VLLM_SIM_KV_LAYOUT_MISMATCH on decode): verify compares the greedy answers with the prefill's own
    and names every pair and the front door (the first test saw it pass with the layouts equal). Last: the cluster is left
    garbled for the module's teardown."""
    garbled = {"vllm_engine_role_env": {"decode": {"PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True,pin_memory_expandable_segments:True",
                                                   "VLLM_SIM_KV_LAYOUT_MISMATCH": "1"}}}
    run_playbook("pd_pool_a2.yml", LAB, "-i", str(INVENTORY), "-e", json.dumps(garbled))
    result = run_playbook("verify.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode != 0
    said = " ".join(result.output.split())
    assert ("KV pair prefill -> decode (vllm-ascend-prefill-dp0 (pd_pool_a2_p0) to vllm-ascend-decode-dp0 (pd_pool_a2_d0)): "
            "the decode answers other text than the prefill alone to the same greedy prompt, from character") in said
    assert "the completion through pd-proxy (pd_pool_a2_p0) answers other text than vllm-ascend-prefill-dp0 (pd_pool_a2_p0) alone" in said
