# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mooncake HA on etcd: the layout, the masters' flags by release, and the mistakes refused."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.operations import _readiness
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.services import _pool_ha as pool_ha

NODES = [{"host": "p0", "address": "10.0.0.1"}, {"host": "p1", "address": "10.0.0.2"},
         {"host": "d0", "address": "10.0.0.3"}, {"host": "d1", "address": "10.0.0.4"}]
SETTINGS = {"nodes": NODES, "single_host": "", "port": 50088, "metrics_port": 9003, "etcd_client_port": 2379,
            "etcd_peer_port": 2380, "version": "0.3.13.post1", "args": ["--client_ttl=120"], "engine_env": {}}
SPECS = {"master_image": "img", "master_name": "mooncake-master", "args": ["--client_ttl=120"], "metrics_port": 9003,
         "etcd_image": "etcd-img", "etcd_name": "mooncake-etcd", "etcd_data_dir": "/var/lib/llmops/etcd",
         "etcd_client_port": 2379, "etcd_peer_port": 2380, "store_wave": 0, "pool_wave": 1}


def _problems(ha, **settings):
    with pytest.raises(PlanError) as err:
        pool_ha.layout("pool", ha, dict(SETTINGS, **settings))
    return [str(p) for p in err.value.problems]


def test_deployed_etcd_gives_the_engines_every_member_and_each_master_its_own_rpc_address():
    found = pool_ha.layout("pd_pool", {"hosts": ["p0", "10.0.0.2"], "etcd_hosts": ["p0", "p1", "d0"]}, SETTINGS)
    assert found["client_address"] == "etcd://10.0.0.1:2379;10.0.0.2:2379;10.0.0.3:2379"
    assert found["cluster_id"] == "llmops_pd_pool" and found["oplog"] and found["warnings"] == []
    assert found["flags"]["p1"] == ["--port", "50088", "--rpc_address", "10.0.0.2", "--metrics_port", "9003", "--enable_ha=true",
                                    "--cluster_id", "llmops_pd_pool", "--ha_backend_type=etcd",
                                    "--ha_backend_connstring=10.0.0.1:2379;10.0.0.2:2379;10.0.0.3:2379", "--enable_oplog=true"]
    assert [(s["name"], s["host"], s["ports"]) for s in found["services"]] == [
        ("mooncake_master", "p0", [50088, 9003]), ("mooncake_master", "p1", [50088, 9003]),
        ("mooncake_etcd", "p0", [2379, 2380]), ("mooncake_etcd", "p1", [2379, 2380]), ("mooncake_etcd", "d0", [2379, 2380])]


def test_releases_pick_the_etcd_flag_and_whether_a_failover_keeps_the_pool():
    old = pool_ha.layout("c", {"hosts": ["p0", "p1"], "etcd_endpoints": ["e1:2379"]}, dict(SETTINGS, version="0.3.9"))
    assert "--etcd_endpoints=e1:2379" in old["flags"]["p0"] and not old["oplog"]
    pinned = pool_ha.layout("c", {"hosts": ["p0", "p1"], "etcd_endpoints": ["e1:2379"], "cluster_id": "x"},
                            dict(SETTINGS, version="0.3.11.post1"))
    assert "--ha_backend_connstring=e1:2379" in pinned["flags"]["p0"] and "--enable_oplog=true" not in pinned["flags"]["p0"]
    assert "not found again" in pinned["warnings"][0] and pinned["etcd"] == {"deployed": False, "members": [], "endpoints": ["e1:2379"]}
    off = pool_ha.layout("c", {"hosts": ["p0", "p1"], "etcd_endpoints": ["e1:2379"], "oplog": False}, SETTINGS)
    assert not off["oplog"]


@pytest.mark.parametrize("ha, settings, wanted", [
    ({"hosts": ["p0"], "etcd_hosts": ["p0", "p1", "d0"]}, {}, "mooncake_master_ha.hosts: HA needs two or more masters, got only p0"),
    ({"hosts": ["p0", "p1"], "etcd_hosts": ["p0", "p1"]}, {}, "mooncake_master_ha.etcd_hosts: 2 members: an even count"),
    ({"hosts": ["p0", "p1"], "etcd_hosts": ["p0"], "etcd_endpoints": ["e:2379"]}, {}, "gives both etcd_endpoints"),
    ({"hosts": ["p0", "p1"]}, {}, "gives no etcd"),
    ({"hosts": ["p0", "x9"], "etcd_endpoints": ["e:2379"]}, {}, "'x9' is neither a host of the cluster"),
    ({"hosts": ["p0", "p1"], "etcd_endpoints": ["etcd://e:2379"]}, {}, "'etcd://e:2379' is not host:port"),
    ({"hosts": ["p0", "p1"], "etcd_endpoints": ["e:2379"]}, {"single_host": "p0"}, "mooncake_master_host: places the single master"),
    ({"hosts": ["p0", "p1"], "etcd_endpoints": ["e:2379"]}, {"args": ["--cluster_id=a"]}, "mooncake_master_args: sets --cluster_id"),
    ({"hosts": ["p0", "p1"], "etcd_endpoints": ["e:2379"], "cluster_id": "a"},
     {"engine_env": {"vllm_engine_role_env.decode": {"MC_STORE_CLUSTER_ID": "b"}}},
     "vllm_engine_role_env.decode: MC_STORE_CLUSTER_ID is 'b' but the masters run with cluster id 'a'"),
    ({"hosts": ["p0", "p1"], "etcd_endpoints": ["e:2379"]}, {"engine_env": {"vllm_engine_env": {"MOONCAKE_MASTER": "p0:50088"}}},
     "vllm_engine_env: MOONCAKE_MASTER (p0:50088) wins over"),
    ({"hosts": ["p0", "p1"], "etcd_endpoints": ["e:2379"], "etcd": 1}, {}, "mooncake_master_ha.etcd: is no setting"),
])
def test_mistakes_are_refused_naming_the_variable_and_the_fix(ha, settings, wanted):
    problems = _problems(ha, **settings)
    assert any(wanted in p and "Fix:" in p for p in problems), problems


def test_etcd_members_start_before_the_masters_and_keep_their_data():
    found = pool_ha.layout("pd", {"hosts": ["p0", "p1"], "etcd_hosts": ["p0", "p1", "d0"]}, SETTINGS)
    fields = pool_ha.launch_fields(found, SPECS)
    etcd, masters = fields[:3], fields[3:]
    assert [f["host"] for f in etcd] == ["p0", "p1", "d0"] and {f["wave"] for f in etcd} == {0}
    assert "etcd-p0=http://10.0.0.1:2380,etcd-p1=http://10.0.0.2:2380,etcd-d0=http://10.0.0.3:2380" in etcd[2]["command"]
    assert etcd[2]["meta"]["data"] == ["/var/lib/llmops/etcd"] and etcd[2]["ready"] == {"http": "http://10.0.0.3:2379/health"}
    assert [f["host"] for f in masters] == ["p0", "p1"] and {f["wave"] for f in masters} == {1}
    assert masters[1]["command"][-1] == "--client_ttl=120" and masters[1]["ready"] == {
        "http": "http://10.0.0.2:9003/health", "ha": "mooncake_master", "peers": ["http://10.0.0.1:9003/health"]}


LEADER = {"status": "ok", "role": "leader", "ha_state": "serving", "service_ready": True}
WARMING = {"status": "ok", "role": "leader", "ha_state": "leader_warmup", "service_ready": False}
STANDBY = {"status": "ok", "role": "standby", "ha_state": "standby", "service_ready": False}


@pytest.mark.parametrize("health, role", [(LEADER, "leader"), (WARMING, "warmup"), (STANDBY, "standby"), ({"status": "ok"}, None)])
def test_a_masters_role_is_read_from_its_health(health, role):
    # /health of mooncake_master 0.3.13.post1 in HA mode, as it answered on this machine
    assert pool_ha.master_role(health) == role


@pytest.mark.parametrize("health, peers, ready", [
    (LEADER, [None], True),
    (WARMING, [STANDBY], False),  # engines started now fail their store's setup ("Client not available")
    (STANDBY, [WARMING], False),
    (STANDBY, [STANDBY], False),  # before the election every master is a standby
    (STANDBY, [None, LEADER], True),
])
def test_a_master_is_ready_leading_and_serving_or_as_a_standby_of_a_serving_leader(health, peers, ready):
    assert pool_ha.master_ready(health, peers) == ready


def test_the_readiness_probe_asks_a_standby_master_and_its_peers(monkeypatch):
    answers = {"http://a:9003/health": b'{"role":"standby"}', "http://b:9003/health": b'{"role":"leader","service_ready":false}'}
    monkeypatch.setattr(_readiness, "http_get", lambda url, ca_path=None, body=None: (200, answers[url]))
    spec = {"name": "m", "ready": {"http": "http://a:9003/health", "ha": "mooncake_master", "peers": ["http://b:9003/health"]}}
    assert not _readiness.probe(None, spec)
    answers["http://b:9003/health"] = b'{"role":"leader","service_ready":true}'
    assert _readiness.probe(None, spec)


def _master(etcd, deployed, oplog=True, version="0.3.13.post1"):
    return {"name": "mooncake-master", "host": "p0", "meta": {"kind": "pool_service", "ha": {
        "service": "mooncake_master", "etcd": etcd, "etcd_deployed": deployed, "oplog": oplog, "version": version}}}


def _facts(**by_host):
    return {host: {"facts": {"etcd": {ep: {"reachable": state != "down", "healthy": state == "ok"} for ep, state in seen.items()}}}
            for host, seen in by_host.items()}


def test_preflight_wants_every_host_to_reach_an_etcd_the_operator_runs_and_a_quorum():
    from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_pool import pool_ha_checks
    eps = ["e1:2379", "e2:2379", "e3:2379"]
    rows, warnings = pool_ha_checks(_facts(p0={e: "ok" for e in eps}, d0={"e1:2379": "ok", "e2:2379": "down", "e3:2379": "ok"}),
                                    [_master(eps, False)])
    assert [(r["host"], r["check"], r["found"]) for r in rows] == [("d0", "etcd", "e2:2379 does not answer")] and warnings == []
    rows, _warnings = pool_ha_checks(_facts(p0={"e1:2379": "ok", "e2:2379": "down", "e3:2379": "sick"}), [_master(eps, False)])
    assert rows[-1]["check"] == "etcd quorum" and rows[-1]["found"] == "1 of 3 members healthy"


def test_preflight_of_deployed_members_waits_for_them_to_run_and_warns_what_a_failover_loses():
    from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_pool import pool_ha_checks
    eps = ["a:2379", "b:2379", "c:2379"]
    first_deploy, warnings = pool_ha_checks(_facts(p0={e: "down" for e in eps}), [_master(eps, True, oplog=False, version="0.3.11.post1")])
    assert first_deploy == [] and "0.3.11.post1 keeps no oplog" in warnings[0] and "not found again" in warnings[0]
    rerun, said = pool_ha_checks(_facts(p0={"a:2379": "ok", "b:2379": "down", "c:2379": "down"}), [_master(eps, True)])
    assert rerun == [] and said == ["etcd: 1 of 3 members healthy (b:2379, c:2379 not); this deploy restarts the dead ones"]
    assert pool_ha_checks(_facts(p0={}), []) == ([], [])
