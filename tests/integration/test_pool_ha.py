# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The KV pool survives its master: the lab's pd_pool_a2 with its Mooncake masters in HA on the
pd_pool_a2 harness nodes (tests/harness/inventories/pd_pool_a2_ha): the real mooncake_master of the wheel on P0 and
P1, a three-member etcd (Debian's etcd-server) on P0, P1 and D0, the simulated engines using the real Mooncake store
client through etcd://. Under a bounded shared-prefix load through the front door, the leader is killed (-9): a
standby takes over, no engine restarts, and blocks stored before the kill are still found (Mooncake 0.3.13 keeps an
oplog). Then an etcd member is killed (the cluster keeps serving), a re-run brings both back (the master as a
standby, engines untouched), and a second re-run changes nothing. A changed master spec and a new etcd image roll
one container at a time, the standby master and the etcd followers first. Figures are printed."""

from __future__ import annotations

import json
import re
import socket
import sys
import time
import urllib.error
import urllib.request

import pytest
from conftest import LAB, ROOT, run_playbook
from harness import CLIENT_KEY, POOL_ATTACKER, containers, finished_at, http_json, http_text, metric, node_docker, node_exec, tcp_from, wait_until

sys.path.insert(0, str(ROOT / "tests" / "harness"))
from load import Load  # noqa: E402  pylint: disable=wrong-import-position

INVENTORY = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2"
HA = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2_ha"
ON = ("-i", str(INVENTORY), "-i", str(HA))
NODES = {"pd_pool_a2_p0": "llmops-pool-a2-p0", "pd_pool_a2_p1": "llmops-pool-a2-p1",
         "pd_pool_a2_d0": "llmops-pool-a2-d0", "pd_pool_a2_d1": "llmops-pool-a2-d1"}
MASTERS = {"pd_pool_a2_p0": "10.213.7.61", "pd_pool_a2_p1": "10.213.7.62"}
PROXY = "http://10.213.7.61:8081"
PREFILL_API = {"pd_pool_a2_p0": "http://10.213.7.61:9081", "pd_pool_a2_p1": "http://10.213.7.62:9082"}
EXTERNAL_HITS = "vllm:external_prefix_cache_hits_total"
SHARED = " ".join("shared%d" % (i % 89) for i in range(256))  # two 128-token blocks every request finds locally


# the seed's master flags with a shorter --client_ttl: what the rolling test changes the masters to
CHANGED_MASTERS = ("-e", json.dumps({"mooncake_master_args": [
    "--eviction_high_watermark_ratio", "0.9", "--eviction_ratio", "0.1", "--default_kv_lease_ttl", "11000",
    "--enable_offload=false", "--client_ttl=60"]}))


def shared_prefix(number):
    """The load's prompt: the shared prefix and a block of its own, which the engine looks up in the pool and puts."""
    return SHARED + " " + " ".join("r%d_%d" % (number, i) for i in range(128))


def deploy(*extra):
    return run_playbook("pd_pool_a2.yml", LAB, *ON, *extra)


def started():
    """{host/container: StartedAt} of the cluster's containers on every node."""
    return {"%s/%s" % (host, name): when for host, node in NODES.items()
            for name, (when, _up) in containers(node, "pd_pool_a2").items()}


def roles():
    """{host: the master's role now} (leader, warmup, standby, or down)."""
    found = {}
    for host, address in MASTERS.items():
        try:
            health = http_json("http://%s:9003/health" % address, timeout=2)
            found[host] = "warmup" if health["role"] == "leader" and not health["service_ready"] else health["role"]
        except OSError:
            found[host] = "down"
    return found


def leader():
    (host,) = [host for host, role in roles().items() if role == "leader"]
    return host


def external_hits(host):
    return metric(http_text(PREFILL_API[host] + "/metrics"), EXTERNAL_HITS)


def etcd_api(address, path):
    """etcd's JSON gateway, asked from an engine's node: the host firewall keeps etcd to the masters' and the engines'
    hosts (Mooncake's etcd client takes no certificates), not this machine, which is only an extra cluster network."""
    code = ("import sys, urllib.request\n"
            "request = urllib.request.Request(sys.argv[1], data=b'{}', headers={'Content-Type': 'application/json'})\n"
            "print(urllib.request.urlopen(request, timeout=10).read().decode())")
    run = node_exec("llmops-pool-a2-d1", "python3", "-c", code, "http://%s:2379%s" % (address, path))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def refused_here(address, port):
    """Whether a TCP connection from this machine is refused (the firewall's reset)."""
    try:
        socket.create_connection((address, port), timeout=5).close()
    except ConnectionRefusedError:
        return True
    return False


def complete(url, prompt):
    """A completion from url: the front door (its client key) or an engine (the cluster's hosts reach it keyless)."""
    return http_json(url + "/v1/completions", {"model": "glm", "prompt": prompt, "max_tokens": 2},
                     headers={"Authorization": "Bearer " + CLIENT_KEY})


@pytest.fixture(scope="module")
def ha_cluster(pool_nodes):  # pylint: disable=unused-argument  # the nodes, shared with test_pool_recovery
    result = deploy()
    yield result
    if started():  # the last test tears the cluster down itself, unless it failed before
        run_playbook("teardown.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", "-e", "llmops_confirm_teardown=pd_pool_a2",
                     "-e", "llmops_purge=true", check=False)


def test_one_leader_serves_a_standby_is_ready_and_engines_find_each_others_blocks(ha_cluster):
    now = roles()
    assert sorted(now.values()) == ["leader", "standby"]
    # what monitoring's LlmopsPoolNoLeader / NoStandby read: the real master's ha_standby_state, 0 leading, 3 watching
    states = {host: metric(http_text("http://%s:9003/metrics" % MASTERS[host]), "ha_standby_state") for host in MASTERS}
    assert {now[host]: state for host, state in states.items()} == {"leader": 0, "standby": 3}
    members = etcd_api("10.213.7.63", "/v3/cluster/member/list")["members"]
    assert sorted(m["name"] for m in members) == ["etcd-pd-pool-a2-d0", "etcd-pd-pool-a2-p0", "etcd-pd-pool-a2-p1"]
    # this machine runs verify and status (an extra cluster network): the masters' metrics, but neither etcd nor their RPC
    assert refused_here("10.213.7.63", 2379) and refused_here(MASTERS["pd_pool_a2_p0"], 50088)
    assert not refused_here(MASTERS["pd_pool_a2_p0"], 9003)
    shown = run_playbook("status.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert shown.returncode == 0, shown.output[-3000:]
    assert sorted(re.findall(r"mooncake-master\s+master (\w+)", shown.output)) == ["leader", "standby"]
    assert len(re.findall(r"mooncake-etcd\s+etcd (?:leader|follower)", shown.output)) == 3
    result = run_playbook("verify.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode == 0, result.output[-3000:]
    assert "KV pool shared: vllm-ascend-prefill-dp1 found the blocks vllm-ascend-prefill-dp0 stored" in result.output
    assert sorted(re.findall(r"mooncake-master \(pd_pool_a2_p\d\)\s+master (\w+)\s+ok", result.output)) == ["leader", "standby"]


def test_preflight_wants_every_host_to_reach_an_etcd_the_operator_runs(ha_cluster):
    """The same masters pointed at an etcd "the operator runs": two of the members deployed here, and an endpoint where
    nothing listens. Every host is told that one does not answer; two of three healthy is still a quorum."""
    theirs = {"mooncake_master_ha": {"hosts": ["pd_pool_a2_p0", "pd_pool_a2_p1"],
                                     "etcd_endpoints": ["10.213.7.61:2379", "10.213.7.62:2379", "10.213.7.64:2379"]}}
    result = run_playbook("preflight.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", "-e", json.dumps(theirs), check=False)
    assert result.returncode != 0
    rows = re.findall(r"(pd_pool_a2_\w+)\s+etcd\s+10\.213\.7\.64:2379 does not answer", result.output)
    assert sorted(rows) == sorted(NODES), result.output[-3000:]
    assert "etcd quorum" not in result.output


def test_killing_the_leader_under_load_hands_over_to_the_standby_and_restarts_no_engine(ha_cluster):
    before, old = started(), leader()
    standby = next(host for host in MASTERS if host != old)
    # blocks stored through P0's prefill before the kill, looked up from P1's after it
    kept = " ".join("kept%d" % i for i in range(512))
    complete(PREFILL_API["pd_pool_a2_p0"], kept)
    with Load(PROXY, model="glm", requests=3000, seconds=120, workers=4, prompt=shared_prefix, timeout=60, key=CLIENT_KEY) as load:
        time.sleep(3)
        killed = time.monotonic()
        node_docker(NODES[old], "kill", "-s", "KILL", "mooncake-master")
        wait_until(lambda: roles()[standby] == "leader", 60, "the standby on %s leading and serving" % standby)
        took = time.monotonic() - killed
        time.sleep(5)  # the clients re-read the leader and go on
    report = load.report("kill -9 of the leading master")
    print(report["line"])
    print("failover: %s led and served %.1f s after the leader on %s was killed" % (standby, took, old))
    hits_before = external_hits("pd_pool_a2_p1")
    complete(PREFILL_API["pd_pool_a2_p1"], kept)
    found = external_hits("pd_pool_a2_p1") - hits_before
    print("blocks stored before the failover, found after it by the other prefill engine: %d of 512 tokens" % found)
    after = started()
    engines = [key for key in before if "/vllm-ascend-" in key or key.endswith("/pd-proxy")]
    assert [key for key in engines if after[key] != before[key]] == []  # no engine and not the proxy restarted
    # serving never stopped: at most the pool calls in flight at the kill fail, one per worker
    assert report["failed"] <= 4, report["line"]
    late = [r for r in load.results if "end" in r and r["start"] > took + 3 and not r.get("error")]
    assert late, "nothing answered after the failover"
    assert found > 0  # the installed Mooncake (0.3.13.post1) replicates the metadata through its oplog


def test_from_outside_every_port_of_the_ha_pool_is_refused_and_the_monitoring_gets_metrics_alone(ha_cluster):
    """The attack catalogue's TCP part on the pool in HA: from a container on the harness network that is no node, every
    port the plan binds is refused (etcd's client and peer ports, both masters' RPC and metrics, the engine APIs, the
    front door, the relay); this machine, a monitoring network, reads etcd's and the masters' /metrics through the relay
    and nothing else of them through it (etcd's key-value API, a master's key listing)."""
    etcd = ["10.213.7.61", "10.213.7.62", "10.213.7.63"]
    ports = (["%s:%d" % (a, p) for a in etcd for p in (2379, 2380)] + ["%s:%d" % (a, p) for a in MASTERS.values() for p in (50088, 9003)]
             + ["10.213.7.61:9081", "10.213.7.62:9082", "10.213.7.63:9900", "10.213.7.61:8081", "10.213.7.61:9410"])
    outside = tcp_from("attacker", ports, POOL_ATTACKER)
    print("from outside the cluster: %s" % outside)
    assert outside == dict.fromkeys(ports, "refused")
    relay = "http://10.213.7.61:9410"
    # the master leading now: the previous test killed the one that led (either, as elected), dead until a re-run
    master = "/metrics/%s/mooncake-master" % leader()
    seen = [("GET" if body is None else "POST", path, status_of(relay + path, body)) for path, body in (
        ("/metrics/pd_pool_a2_d0/mooncake-etcd", None), (master, None),
        ("/v3/kv/range", b'{"key": "AA=="}'), ("/v3/kv/put", b'{"key": "AA==", "value": "AA=="}'),
        ("/metrics/pd_pool_a2_d0/mooncake-etcd/../../v3/kv/range", None), ("/get_all_keys", None),
        (master, b"{}"))]
    for method, path, code in seen:
        print("through the relay: %-4s %-60s -> %s" % (method, path, code))
    assert [code for _method, _path, code in seen] == [200, 200, 405, 405, 404, 404, 405]


def status_of(url, body=None):
    """The HTTP status of a GET (or, with a body, a POST) from this machine."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code


def test_a_dead_etcd_member_stops_nothing_and_a_rerun_brings_back_what_died_and_nothing_else(ha_cluster):
    node_docker(NODES["pd_pool_a2_d0"], "kill", "-s", "KILL", "mooncake-etcd")
    with Load(PROXY, model="glm", requests=400, seconds=30, workers=4, prompt=shared_prefix, key=CLIENT_KEY) as load:
        load.wait()
    report = load.report("one etcd member dead")
    print(report["line"])
    assert report["failed"] == 0 and report["sent"] > 0
    shown = run_playbook("status.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert "etcd member down: mooncake-etcd on pd_pool_a2_d0" in shown.output
    assert "no standby Mooncake master" in shown.output  # the killed leader of the test before
    before = started()
    result = deploy()
    assert "etcd: 2 of 3 members healthy (10.213.7.63:2379 not); this deploy restarts the dead ones" in result.output
    changed = {key for key, when in started().items() if when != before.get(key)}
    assert changed == {"pd_pool_a2_d0/mooncake-etcd", next("%s/mooncake-master" % h for h in MASTERS if roles()[h] == "standby")}, \
        result.output[-3000:]
    assert sorted(roles().values()) == ["leader", "standby"]  # the killed master is back as the standby
    again = started()
    deploy()
    assert started() == again  # a re-run afterwards changes nothing


def test_changed_masters_and_etcd_members_roll_one_at_a_time_their_leaders_last(ha_cluster):
    """One deploy changes both: the masters get a new flag (the seed's flags and a shorter --client_ttl), the etcd
    members a new image. Each member, then each master, restarts in a step of its own, the followers and the standby
    first, so etcd keeps its quorum and the pool's leadership moves at most once; no engine restarts and the front door
    keeps answering."""
    for node in ("llmops-pool-a2-p0", "llmops-pool-a2-p1", "llmops-pool-a2-d0"):
        node_docker(node, "tag", "llmops-engine:test", "llmops-engine:etcd-rolled")
    members = {host: MASTERS.get(host, "10.213.7.63") for host in ("pd_pool_a2_p0", "pd_pool_a2_p1", "pd_pool_a2_d0")}
    status = {host: etcd_api(address, "/v3/maintenance/status") for host, address in members.items()}
    (etcd_leader,) = [host for host, seen in status.items() if seen["leader"] == seen["header"]["member_id"]]
    old = leader()
    standby = next(host for host in MASTERS if host != old)
    before = started()
    with Load(PROXY, model="glm", requests=4000, seconds=200, workers=4, prompt=shared_prefix, timeout=60, key=CLIENT_KEY) as load:
        result = deploy(*CHANGED_MASTERS, "-e", "mooncake_master_etcd_image=llmops-engine:etcd-rolled")
    report = load.report("rolling change of the three etcd members and both masters")
    print(report["line"])
    rolled = re.findall(r"step \d+ \(wave (\d), rolled\): (mooncake-\w+) on (\w+)", result.output)
    etcd = [host for wave, name, host in rolled if name == "mooncake-etcd"]
    assert sorted(etcd) == sorted(members) and etcd[-1] == etcd_leader, result.output[-3000:]
    assert [host for wave, name, host in rolled if name == "mooncake-master"] == [standby, old], result.output[-3000:]
    after = started()
    assert {key for key in before if after[key] != before[key]} == (
        {"%s/mooncake-etcd" % host for host in members} | {"%s/mooncake-master" % host for host in MASTERS})
    # a leader again and a standby: the restarted leader's lease lapses (5 s) while it starts anew, so either may win
    assert sorted(roles().values()) == ["leader", "standby"]
    assert report["failed"] <= 4, report["line"]


def test_logs_name_every_master_and_member_and_stop_stops_etcd_last(ha_cluster, tmp_path):
    """logs.yml bundles each master's and member's log; stop.yml stops the cluster in reverse start order, so the etcd
    members go after the masters, which go after every engine."""
    run_playbook("logs.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", "-e", "llmops_logs_dir=%s" % tmp_path)
    bundle = next(path for path in tmp_path.iterdir() if path.is_dir())
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert {key: value["kind"] for key, value in manifest["containers"].items() if "mooncake" in key} == {
        "pd_pool_a2_p0/mooncake-etcd": "pool_store", "pd_pool_a2_p1/mooncake-etcd": "pool_store",
        "pd_pool_a2_d0/mooncake-etcd": "pool_store", "pd_pool_a2_p0/mooncake-master": "pool_service",
        "pd_pool_a2_p1/mooncake-master": "pool_service"}
    logs = {path for path in manifest["files"] if path.endswith(".log")}
    assert any(path.endswith("/containers/mooncake-etcd.log") and "pd_pool_a2_d0" in path for path in logs), sorted(logs)
    run_playbook("stop.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", "-e", "llmops_stop_timeout=10")
    stopped = {(node, name): finished_at(name, node) for node in NODES.values() for name in containers(node, "pd_pool_a2")}
    assert not any(up for node in NODES.values() for _started, up in containers(node, "pd_pool_a2").values())
    etcd = [when for (_node, name), when in stopped.items() if name == "mooncake-etcd"]
    masters = [when for (_node, name), when in stopped.items() if name == "mooncake-master"]
    engines = [when for (_node, name), when in stopped.items() if name.startswith("vllm-ascend-")]
    assert max(engines) < min(masters) and max(masters) < min(etcd)


def test_a_purged_teardown_removes_the_etcd_data_and_an_unpurged_one_keeps_it(ha_cluster):
    data = "/var/lib/llmops/etcd"
    assert node_exec(NODES["pd_pool_a2_p0"], "test", "-d", data + "/member").returncode == 0
    run_playbook("teardown.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", "-e", "llmops_confirm_teardown=pd_pool_a2")
    assert node_exec(NODES["pd_pool_a2_p0"], "test", "-d", data + "/member").returncode == 0
    run_playbook("teardown.yml", LAB, *ON, "-e", "llmops_cluster=pd_pool_a2", "-e", "llmops_confirm_teardown=pd_pool_a2",
                 "-e", "llmops_purge=true")
    assert node_exec(NODES["pd_pool_a2_p0"], "test", "-e", data).returncode != 0
    assert json.dumps(started()) == "{}"
