# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Recovery of a KV-pool cluster: the lab's pd_pool_a2 (004 5.4, real mooncake_master) on
four harness nodes. When the master's host reboots (its Docker engine restarts), the front door and the metrics
relay come back by themselves (their restart policy); re-running deploy restarts the master and then every engine
(a restarted master has lost what they registered, Mooncake #2246), in the deployment's order, and leaves the
front door alone. A real Prometheus scrapes the cluster with monitoring.yml's targets, and every query of its
dashboard answers."""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

import pytest
import yaml
from conftest import LAB, ROOT, run_playbook
from harness import (
    CLIENT_KEY,
    POOL_ATTACKER,
    SYSTEM_CONTAINER,
    attacker,
    containers,
    free_port,
    http_json,
    http_text,
    lock_holder,
    machine_pip_mounts,
    node_docker,
    recap_changed,
    tcp_from,
    tcp_from_container_on,
    wait_http,
    wait_until,
)

sys.path.insert(0, str(ROOT / "tests" / "harness"))
from load import Load  # noqa: E402  pylint: disable=wrong-import-position

INVENTORY = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2"
ADDRESSES = {"pd_pool_a2_p0": "10.213.7.61", "pd_pool_a2_p1": "10.213.7.62", "pd_pool_a2_d0": "10.213.7.63", "pd_pool_a2_d1": "10.213.7.64"}
NODES = {"pd_pool_a2_p0": "llmops-pool-a2-p0", "pd_pool_a2_p1": "llmops-pool-a2-p1",
         "pd_pool_a2_d0": "llmops-pool-a2-d0", "pd_pool_a2_d1": "llmops-pool-a2-d1"}
MASTER_NODE, MASTER_NODE_HOST = "llmops-pool-a2-p0", "pd_pool_a2_p0"
PROXY = "http://10.213.7.61:8081"  # the front door on P0


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


def restart_policies(node):
    """{container: Docker's restart policy} of the cluster's containers on a node."""
    names = node_docker(node, "ps", "-a", "--filter", "label=llmops.cluster=pd_pool_a2", "--format", "{{.Names}}").stdout.split()
    lines = node_docker(node, "inspect", "-f", "{{.Name}} {{.HostConfig.RestartPolicy.Name}}", *names).stdout.splitlines()
    return dict(line.strip("/").split(" ", 1) for line in lines)


def test_running_containers_without_their_restart_policy_get_it_in_place(cluster):
    """As a cluster deployed before restart policies: deploy sets them with docker update, restarting nothing."""
    planned = restart_policies(MASTER_NODE)
    assert node_docker(MASTER_NODE, "update", "--restart", "no", "pd-proxy", "metrics-relay").returncode == 0
    before = started()
    again = recap_changed(deploy().output)
    assert {host: again.get(host) for host in NODES} == {host: int(host == MASTER_NODE_HOST) for host in NODES}, again
    assert restart_policies(MASTER_NODE) == planned and started() == before


def test_a_rebooted_host_brings_back_what_restarts_alone_and_deploy_the_master_then_every_engine(cluster):
    before = started()
    assert "mooncake-master" in before and "metrics-relay" in before and len(before) == 13
    # the master without HA and a rank of the two-node prefill group wait for a deploy, which restarts them in order
    assert restart_policies(MASTER_NODE) == {"mooncake-master": "no", "vllm-ascend-prefill-dp0": "no",
                                             "pd-proxy": "unless-stopped", "metrics-relay": "unless-stopped"}
    begun = time.monotonic()
    subprocess.run(["docker", "restart", "--time", "20", MASTER_NODE], check=True, capture_output=True, timeout=120)

    def alone_back():
        found = containers(MASTER_NODE, "pd_pool_a2")
        return all(found.get(name, ("", False))[1] for name in ("pd-proxy", "metrics-relay"))
    wait_until(alone_back, 120, "pd-proxy and metrics-relay running again on the rebooted %s" % MASTER_NODE)
    wait_http("http://10.213.7.61:8081/healthcheck", seconds=60)
    print("host %s rebooted: its front door answered again %.1f s after the reboot began, with no deploy"
          % (MASTER_NODE, time.monotonic() - begun))
    rebooted = containers(MASTER_NODE, "pd_pool_a2")
    assert not rebooted["mooncake-master"][1] and not rebooted["vllm-ascend-prefill-dp0"][1], rebooted
    result = deploy()
    steps = [line.strip() for line in result.output.splitlines() if "step " in line and " (wave " in line]
    assert "vllm-ascend-decode-dp3 on pd_pool_a2_d0: restarted after mooncake-master (not running (stopped)): " \
           "engines register with it" in result.output, "\n".join(steps) or result.output[-3000:]
    after = started()
    engines = [name for name in after if name.startswith("vllm-ascend-")]
    assert all(after[name] != before[name] for name in engines + ["mooncake-master"])
    # back by themselves, and left alone by the deploy (they register with nothing)
    assert after["pd-proxy"] == rebooted["pd-proxy"][0] != before["pd-proxy"]
    assert after["metrics-relay"] == rebooted["metrics-relay"][0] != before["metrics-relay"]
    decode = [after[name] for name in engines if "-decode-" in name]
    prefill = [after[name] for name in engines if "-prefill-" in name]
    # the 5.4 order: master, then decode, then prefill, each wave waited for
    assert after["mooncake-master"] < min(decode) and max(decode) < min(prefill)
    result = run_playbook("verify.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode == 0, result.output[-3000:]
    assert "mooncake-master (pd_pool_a2_p0)" in result.output
    assert "the same greedy prompt to vllm-ascend-prefill-dp0 (pd_pool_a2_p0) alone: the same answer" in result.output


def started_server(argv, log_path, ready_url, seconds=120):
    """argv started with its output in log_path, once ready_url answers; the caller terminates it."""
    with open(log_path, "w", encoding="utf-8") as log:  # the child keeps its own descriptor of it
        server = subprocess.Popen(  # pylint: disable=consider-using-with  # it outlives this function
            argv, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
            env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
                     ANSIBLE_CONNECTION_PLUGINS=str(ROOT / "tests" / "integration" / "connection_plugins")))

    def answers():
        try:
            return bool(http_text(ready_url))
        except OSError:
            assert server.poll() is None, "%s exited:\n%s" % (argv[0], log_path.read_text()[-3000:])
            return False
    try:
        wait_until(answers, seconds, "%s answering %s" % (argv[0], ready_url))
    except AssertionError:
        server.terminate()
        raise AssertionError("%s did not answer %s:\n%s" % (argv[0], ready_url, log_path.read_text()[-3000:])) from None
    return server


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
    server = started_server(["prometheus", "--config.file=%s" % (tmp_path / "prometheus.yml"),
                             "--storage.tsdb.path=%s" % (tmp_path / "data"), "--web.listen-address=127.0.0.1:%d" % port],
                            tmp_path / "prometheus.log", api + "status/buildinfo")
    try:
        scraped(api, tmp_path)
        panels_answer(api, tmp_path)
    finally:
        server.terminate()
        server.wait(timeout=60)


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
    written = [rule["alert"] for rule in yaml.safe_load((tmp_path / "pd_pool_a2-rules.yml").read_text())["groups"][0]["rules"]]
    assert [rule["name"] for rule in rules] == written, rules
    assert all(rule["health"] == "ok" and rule["state"] == "inactive" for rule in rules), rules


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


HEAL_HOST = "llmops-heal-host"
HARNESS_SSH = pathlib.Path(os.environ.get("LLMOPS_HARNESS_DIR", ROOT / ".build" / "harness")) / "ssh"


@pytest.fixture
def heal_host():
    """A Debian 12 host with systemd as its init (tests/harness/images.sh's llmops-systemd-base), for the healing
    rulebook's service. It shares this machine's network, so it reaches the nodes from their gateway as the
    controller does (the host firewall lets that address in), and has this machine's pip set-up read-only, as a
    fresh machine of this kind has it."""
    subprocess.run(["docker", "rm", "-f", "-v", HEAL_HOST], capture_output=True, check=False)
    subprocess.run(["docker", "run", "-d", "--name", HEAL_HOST, "--network", "host", *SYSTEM_CONTAINER, "--tmpfs", "/run/lock",
                    *machine_pip_mounts(), "llmops-systemd-base:test", "/lib/systemd/systemd"], check=True, capture_output=True)

    def booted():
        state = subprocess.run(["docker", "exec", HEAL_HOST, "systemctl", "is-system-running"], capture_output=True, text=True,
                               check=False).stdout.strip()
        return state in ("running", "degraded")
    wait_until(booted, 120, "systemd on %s" % HEAL_HOST)
    (inventory := pathlib.Path(tempfile.mkdtemp(prefix="llmops-heal-host-")) / "hosts.yml").write_text(json.dumps(
        {"all": {"hosts": {"heal_host": {"ansible_connection": "community.docker.docker", "ansible_host": HEAL_HOST,
                                         "ansible_python_interpreter": "/usr/bin/python3"}}}}))
    yield inventory
    subprocess.run(["docker", "rm", "-f", "-v", HEAL_HOST], capture_output=True, check=False)
    shutil.rmtree(inventory.parent)


def on_heal_host(*argv):
    return subprocess.run(["docker", "exec", HEAL_HOST, *argv], capture_output=True, text=True, check=False)


def reached_over_ssh(where, attempts):
    """What the rulebook's host adds to the lab's and the harness's inventories: it reaches the nodes over SSH, by
    address, as a real rulebook host would (their sshd, the harness key, the host keys nodes.py recorded), and heals a
    group at most ``attempts`` times."""
    (where / "group_vars").mkdir(parents=True)
    (where / "group_vars" / "harness_nodes.yml").write_text(
        (INVENTORY / "group_vars" / "harness_nodes.yml").read_text().replace(
            "ansible_connection: community.docker.docker\n",
            "ansible_connection: ansible.builtin.ssh\nansible_user: root\n"
            "ansible_ssh_common_args: -o UserKnownHostsFile={{ inventory_dir }}/ssh/known_hosts\n"))
    (where / "host_vars").mkdir()
    for host, address in ADDRESSES.items():
        (where / "host_vars" / (host + ".yml")).write_text(json.dumps({"ansible_host": address}))
    (where / "ssh").mkdir()
    shutil.copy(HARNESS_SSH / "known_hosts", where / "ssh" / "known_hosts")
    (where / "heal.yml").write_text(json.dumps({"all": {"vars": {"llmops_heal_attempts": attempts}}}))
    return where


def heal_service(host_inventory, *extra):
    return run_playbook("heal_service.yml", host_inventory, "-e", "llmops_heal_host=heal_host", *extra)


def test_a_dead_decode_rank_is_healed_by_the_rulebook_service_without_a_person_until_it_keeps_dying(cluster, heal_host,
                                                                                                    tmp_path):
    """heal_service.yml installs the rulebook as a systemd service on a host of its own, with the lab's and the
    harness's inventories (reaching the nodes over SSH), and a second run changes nothing. Then kill -9 of one decode
    rank under a steady load, and nobody runs anything: Debian's Prometheus scrapes the cluster with monitoring.yml's
    targets and rules (down for 5 s, llmops_monitoring_down_for), its Alertmanager sends the firing LlmopsMetricsDown to
    the service, whose ansible-rulebook runs heal.yml, which restarts the decode DP group in order. The record counts
    the attempt, and the service serves it as a metric. The death's other alert, fired while the group restarted, does
    not count as a new death. Then the decode node reboots (its Docker engine restarts with it) under the same load:
    its ranks, which wait for their group, are healed the same way, the group's second attempt; the alerts of that
    outage fired during the restart do not give up on the group. Then the rank dies again after its start: the bound
    (llmops_heal_attempts 2 here) is reached, healing gives up on the group and says so (its line, LlmopsHealGaveUp),
    and a person's deploy brings it back. heal_service.yml then removes the service and keeps the record."""
    subprocess.run(["bash", str(ROOT / "tests" / "harness" / "prometheus.sh")], check=True, capture_output=True, timeout=900)
    run_playbook("monitoring.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2",
                 "-e", "llmops_monitoring_dir=%s" % tmp_path, "-e", "llmops_monitoring_down_for=5s")
    heal_port, alerts_port, prometheus_port = free_port(), free_port(), free_port()
    service = ("-e", json.dumps({
        "heal_rulebook_inventory": [str(LAB), str(INVENTORY), str(reached_over_ssh(tmp_path / "over-ssh", attempts=2))],
        "heal_rulebook_port": heal_port, "heal_rulebook_ssh_key": str(HARNESS_SSH / "id_ed25519"),
        "heal_rulebook_vault_password_file": str(LAB / "vault-password")}))
    install_began = time.monotonic()
    heal_service(heal_host, *service)
    installed = time.monotonic() - install_began
    again = heal_service(heal_host, *service)
    assert recap_changed(again.output) == {"heal_host": 0}, again.output[-3000:]
    assert on_heal_host("systemctl", "is-enabled", "llmops-heal").stdout.strip() == "enabled"
    print("heal_service.yml: the rulebook installed and serving on a fresh systemd host in %.1f s; its re-run changed "
          "nothing" % installed)

    def heal_record():
        found = on_heal_host("cat", "/var/lib/llmops/heal/pd_pool_a2.json")
        return json.loads(found.stdout) if found.returncode == 0 else None
    (tmp_path / "alertmanager.yml").write_text(json.dumps({
        "route": {"receiver": "heal", "group_by": ["alertname", "llmops_cluster", "llmops_container", "member"],
                  "group_wait": "1s", "group_interval": "5s", "repeat_interval": "1h"},
        "receivers": [{"name": "heal", "webhook_configs": [{"url": "http://127.0.0.1:%d/alerts" % heal_port}]}]}))
    (tmp_path / "prometheus.yml").write_text(json.dumps({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(tmp_path / "pd_pool_a2-rules.yml")],
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": ["127.0.0.1:%d" % alerts_port]}]}]},
        "scrape_configs": [{"job_name": "llmops", "file_sd_configs": [{"files": [str(tmp_path / "*-targets.json")]}]},
                           {"job_name": "llmops-heal", "static_configs": [{"targets": ["127.0.0.1:%d" % heal_port]}]}]}))
    servers = []
    try:
        servers.append(started_server(
            ["prometheus-alertmanager", "--config.file=%s" % (tmp_path / "alertmanager.yml"),
             "--storage.path=%s" % (tmp_path / "alertmanager"), "--web.listen-address=127.0.0.1:%d" % alerts_port,
             "--cluster.listen-address="], tmp_path / "alertmanager.log", "http://127.0.0.1:%d/-/ready" % alerts_port))
        api = "http://127.0.0.1:%d/api/v1/" % prometheus_port
        servers.append(started_server(
            ["prometheus", "--config.file=%s" % (tmp_path / "prometheus.yml"), "--storage.tsdb.path=%s" % (tmp_path / "data"),
             "--web.listen-address=127.0.0.1:%d" % prometheus_port], tmp_path / "prometheus.log", api + "status/buildinfo"))
        victim, node = "vllm-ascend-decode-dp5", NODES["pd_pool_a2_d1"]
        scraped_up = urllib.parse.quote('up{llmops_container="%s"} == 1' % victim)

        def kill_when_scraped(label):
            wait_until(lambda: http_json(api + "query?query=" + scraped_up)["data"]["result"], 120, "%s scraped (%s)" % (victim, label))
            before = containers(node, "pd_pool_a2")[victim][0]
            node_docker(node, "kill", victim)
            return before, time.monotonic()

        def serving_again(before):  # the node's Docker engine may not answer yet after its reboot
            when, up = containers(node, "pd_pool_a2").get(victim, (before, False))
            return up and when != before and http_json(api + "query?query=" + scraped_up)["data"]["result"]

        def ended(count):  # heal.yml records its result after the restarted group is ready
            found = heal_record()
            acted = [a for a in (found or {}).get("attempts", []) if a["result"] != "nothing to do"]
            return found if len(acted) >= count and all(a["result"] != "started" for a in found["attempts"]) else None

        with Load(PROXY, model="glm", requests=3000, seconds=240, workers=4, key=CLIENT_KEY, timeout=60) as load:
            before, killed = kill_when_scraped("first death")
            wait_until(lambda: serving_again(before), 300, "%s restarted by the rulebook and scraped again" % victim)
            seconds = time.monotonic() - killed
        report = load.report("kill -9 of %s, healed by the rulebook" % victim)
        wait_until(lambda: ended(1), 120, "heal.yml's record of its attempt")
        record = ended(1)
        results = [(attempt["cause"], attempt["group"], attempt["result"]) for attempt in record["attempts"]]
        print("kill -9 of %s: healed without a person, serving again %.1f s after the kill (its alert fires after 5 s "
              "down); heal.yml's attempts: %s" % (victim, seconds, results))
        print(report["line"])
        # the first of the death's alerts to fire heals it (the rank's /metrics, or the front door taking its member out),
        # both counted against the rank's DP group
        causes = {"LlmopsMetricsDown (%s on pd_pool_a2_d1)" % victim, "LlmopsFrontDoorMemberOut (10.213.7.64:9901)"}
        assert results[0][0] in causes and results[0][1:] == ("decode", "healed"), results
        assert {group for _cause, group, _result in results} == {"decode"}, results
        assert not record["gave_up"]
        # One decode instance: while its DP group restarts no decode member serves, and the front door says so (503 with
        # Retry-After, or 502 naming the members it tried while none answered yet); before the restart its failover
        # keeps every request of the dead rank (none fails), and after it every request is answered.
        down_from, down_until = killed - load.started, killed + seconds - load.started
        outside = [r for r in load.failed() if not down_from <= r["end"] <= down_until + 2]
        assert not outside and all(r["error"].startswith(("HTTP 503", "HTTP 502")) for r in load.failed()), (report["line"], outside[:3])
        first_failure = min(r["end"] for r in load.failed()) - down_from if load.failed() else None
        print("failed requests: %d, all while the decode group restarted (the first %s s after the kill; served again at "
              "%.1f s)" % (len(load.failed()), "%.1f" % first_failure if first_failure is not None else "-", seconds))
        healed = urllib.parse.quote('llmops_heal_attempts_total{result="healed",llmops_cluster="pd_pool_a2"}')
        wait_until(lambda: http_json(api + "query?query=" + healed)["data"]["result"], 30, "the heal metric scraped")

        # the decode node reboots: the Docker engine on it comes back with the node, the group's ranks do not, the
        # rulebook restarts their group
        with Load(PROXY, model="glm", requests=3000, seconds=240, workers=4, key=CLIENT_KEY, timeout=60) as load:
            wait_until(lambda: http_json(api + "query?query=" + scraped_up)["data"]["result"], 120, "%s scraped" % victim)
            before, rebooted = containers(node, "pd_pool_a2")[victim][0], time.monotonic()
            subprocess.run(["docker", "restart", "--time", "20", node], check=True, capture_output=True, timeout=120)
            wait_until(lambda: serving_again(before) and ended(2), 300, "%s healed after its node's reboot" % victim)
            seconds = time.monotonic() - rebooted
        report = load.report("reboot of %s, healed by the rulebook" % node)
        print("reboot of %s (docker restart of the node, its Docker engine with it): its decode group serving again %.1f s "
              "after the reboot began, without a person" % (node, seconds))
        print(report["line"])
        assert all(r["error"].startswith(("HTTP 503", "HTTP 502")) for r in load.failed()), report["line"]
        # it dies again: past the bound, the new death gives up; the reboot's alerts, fired while it healed, did not
        assert not heal_record()["gave_up"], heal_record()
        kill_when_scraped("third death")
        wait_until(lambda: "decode" in heal_record()["gave_up"], 180, "healing giving up")
        gave_up = urllib.parse.quote('ALERTS{alertname="LlmopsHealGaveUp",alertstate="firing",group="decode"}')
        wait_until(lambda: http_json(api + "query?query=" + gave_up)["data"]["result"], 60, "LlmopsHealGaveUp firing")
        assert not containers(node, "pd_pool_a2")[victim][1]  # left for a person
        record = heal_record()
        print("it died after each start: healed %d times, then healing gave up on the group (LlmopsHealGaveUp firing); "
              "attempts %s" % (len([a for a in record["attempts"] if a["result"] == "healed"]),
                               [(a["cause"], a["result"]) for a in record["attempts"]]))
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=60)
    rulebook = on_heal_host("journalctl", "-u", "llmops-heal", "-o", "cat", "--no-pager").stdout  # its runs, as it printed them
    assert "PLAY [Decide whether to heal]" in rulebook and "healing restarts dead DP groups only" not in rulebook, rulebook[-3000:]
    assert "gives up on it and leaves it for a person" in rulebook, rulebook[-3000:]
    deploy()  # the person
    assert containers(node, "pd_pool_a2")[victim][1]
    heal_service(heal_host, *service, "-e", "heal_rulebook_state=absent")
    assert on_heal_host("systemctl", "cat", "llmops-heal").returncode != 0
    assert on_heal_host("test", "-e", "/opt/llmops-heal").returncode != 0
    assert heal_record()["gave_up"]  # the record stays


def test_heal_and_a_persons_deploy_at_once_take_turns_on_the_cluster_lock(cluster, tmp_path):
    """A decode rank dies; a person runs the deploy and, while it holds the cluster's lock, heal.yml starts as the
    rulebook would run it. heal.yml waits for the lock, then finds the rank the deploy restarted and does nothing."""
    victim, node = "vllm-ascend-decode-dp4", NODES["pd_pool_a2_d1"]
    before = containers(node, "pd_pool_a2")[victim][0]
    node_docker(node, "kill", victim)
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        person = pool.submit(deploy)
        wait_until(lambda: (lock_holder(NODES.values(), "pd_pool_a2") or {}).get("play") == "deploy" or person.done(), 120, "the deploy holding the lock")
        assert not person.done(), person.result().output[-3000:]
        heal = pool.submit(run_playbook, "heal.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_pool_a2",
                           "-e", "llmops_heal_state_dir=%s" % tmp_path)
        person_output, heal_output = person.result().output, heal.result().output
    when, up = containers(node, "pd_pool_a2")[victim]
    assert up and when != before
    waited = re.search(r"cluster pd_pool_a2: waiting up to \d+ s for the lock, held by deploy by \S+ from \S+ \(pid \d+\)", heal_output)
    taken = re.search(r"cluster pd_pool_a2: locked for heal after (\d+) s", heal_output)
    assert waited and taken, heal_output[-4000:]
    assert "waiting up to" not in person_output
    record = json.loads((tmp_path / "pd_pool_a2.json").read_text())
    assert [attempt["result"] for attempt in record["attempts"]] == ["nothing to do"], record
    assert lock_holder(NODES.values(), "pd_pool_a2") is None
    print("deploy and heal.yml at once: heal.yml waited %s s for the deploy's lock, then had nothing to do" % taken.group(1))


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
