# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several instances per role (xPyD): each its own DP group, named, with ids and ports unique across the cluster,
and the mistakes an operator makes with them refused naming the variable and host."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.operations import _rollout as rollout
from ansible_collections.llmops.inference.plugins.module_utils.operations import _verify as verify
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import InputError
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_fabric as preflight_fabric

sys.path.insert(0, os.path.dirname(__file__))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position
from rule_cases import cpu_pd, problems_of, single_problem  # noqa: E402  pylint: disable=wrong-import-position
from test_rollout import states  # noqa: E402  pylint: disable=wrong-import-position

ENGINE = {"image": "img:1", "model": "/m", "container_name": "vllm-ascend", "args": {"served-model-name": "glm"},
          "env": {}, "driver": {"devices": [], "volumes": []}, "headless_ready_log": seeds.HEADLESS_READY_LOG}


def two_p_two_d(**decode_b):
    """pd_pool_a2 (1P1D on four A2 nodes) grown to 2P2D: instance b of each role on four more nodes."""
    cluster = seeds.pd_pool_a2()
    cluster["instances"] = {"prefill": {"b": {}}, "decode": {"b": dict(decode_b)}}
    for index, host in enumerate(("p2", "p3", "d2", "d3")):
        role = "prefill" if host.startswith("p") else "decode"
        cluster["nodes"].append({"host": "pd_a2_" + host, "address": "192.0.2.%d" % (51 + index), "nic": "eth0", "role": role,
                                 "instance": "b", "local_ranks": 1 if role == "prefill" else 4, "pythonhashseed": "0",
                                 "tenant_id": "default", "headless": host == "p3"})
    return cluster


def by_instance(plan, field):
    found = {}
    for rank in plan["ranks"]:
        found.setdefault(rank["instance"], []).append(rank[field])
    return found


def test_each_instance_is_its_own_dp_group_with_its_own_master():
    plan = plan_cluster(two_p_two_d())
    assert by_instance(plan, "dp_rank") == {"decode": list(range(8)), "decode-b": list(range(8)),
                                            "prefill": [0, 1], "prefill-b": [0, 1]}
    masters = {(r["instance"], r["host"]) for r in plan["ranks"] if r["dp_master"]}
    assert masters == {("decode", "pd_a2_d0"), ("decode-b", "pd_a2_d2"), ("prefill", "pd_a2_p0"), ("prefill-b", "pd_a2_p2")}
    assert set(by_instance(plan, "dp_address")["decode-b"]) == {"192.0.2.53"}  # its own master, not D0
    groups = {p["key"]: p["dp_group"] for p in plan["processes"]}
    assert groups["decode-b-dp0"] == "192.0.2.53:12325" and groups["decode-dp0"] == "192.0.2.43:12325"


def test_ids_and_lookup_ports_stay_unique_without_being_spelt_out():
    plan = plan_cluster(two_p_two_d())
    ids = by_instance(plan, "engine_id")
    assert ids["prefill"] == ["glm53-flash-prefill-dp0", "glm53-flash-prefill-dp1"]
    assert ids["prefill-b"] == ["glm53-flash-prefill-dp0-b", "glm53-flash-prefill-dp1-b"]
    lookups = by_instance(plan, "lookup_rpc_port")
    assert lookups["prefill-b"] == [37002, 37003] and lookups["decode-b"] == list(range(37108, 37116))


def test_the_proxy_gets_every_instance_and_containers_are_named_by_instance():
    plan = plan_cluster(two_p_two_d())
    assert [e["address"] for e in plan["proxy"]["prefill"]] == ["192.0.2.41", "192.0.2.51"]  # the API ranks of both
    assert len(plan["proxy"]["decode"]) == 16
    specs = launch.engine_specs(plan, ENGINE)
    names = sorted(s["name"] for s in specs if s["host"] == "pd_a2_d2")
    assert names == ["vllm-ascend-decode-b-dp%d" % rank for rank in range(4)]
    meta = {s["name"]: s["meta"]["instance"] for s in specs}
    assert meta["vllm-ascend-decode-b-dp0"] == "decode-b" and meta["vllm-ascend-decode-dp0"] == "decode"


def test_an_instance_may_run_its_own_image_and_the_role_keeps_the_clusters():
    cluster = two_p_two_d(image="img:canary")
    images = {s["name"]: s["image"] for s in launch.engine_specs(plan_cluster(cluster), ENGINE)}
    assert images["vllm-ascend-decode-b-dp5"] == "img:canary" and images["vllm-ascend-decode-dp5"] == "img:1"


def test_instances_of_different_sizes_behind_nixl():
    cluster = cpu_pd()
    cluster["instances"] = {"decode": {"wide": {"dp_size": 2, "api_port": 8300, "kv_port": 5800}}}
    cluster["nodes"].append({"host": "box3", "address": "192.0.2.92", "role": "decode", "instance": "wide", "local_ranks": 2})
    plan = plan_cluster(cluster)
    assert by_instance(plan, "dp_rank") == {"decode": [0], "decode-wide": [0, 1], "prefill": [0, 1]}
    assert sorted(p["key"] for p in plan["processes"]) == ["decode", "decode-wide", "prefill-dp0", "prefill-dp1"]


def test_an_instance_without_hosts_is_named():
    cluster = two_p_two_d()
    cluster["instances"]["decode"]["c"] = {}
    assert single_problem(cluster) == ("cluster pd_pool_a2: vllm_engine_instances.decode.c: no host has vllm_engine_role decode and "
                                       "vllm_engine_instance c. Fix: set vllm_engine_instance: c on the hosts of this instance, "
                                       "or remove it.")


def test_a_retired_host_is_planned_nothing_but_keeps_its_machine():
    cluster = two_p_two_d()
    del cluster["instances"]["decode"]
    for node in cluster["nodes"]:
        node["retired"] = node.get("instance") == "b" and node["role"] == "decode"
    plan = plan_cluster(cluster)
    assert plan["retired"] == ["pd_a2_d2", "pd_a2_d3"]
    assert not {"pd_a2_d2", "pd_a2_d3"} & {p["host"] for p in plan["processes"]}
    assert plan["machines"]["pd_a2_d3"] == "192.0.2.54" and plan["machines"]["pd_a2_d0"] == "192.0.2.43"
    assert by_instance(plan, "dp_rank")["decode"] == list(range(8))
    # still declared, the instance has no host left: the planner says so
    cluster["instances"]["decode"] = {"b": {}}
    assert "vllm_engine_instances.decode.b: no host has vllm_engine_role decode" in single_problem(cluster)


def test_a_service_on_a_retired_host_is_refused():
    cluster = two_p_two_d()
    cluster["nodes"][0]["retired"] = True  # pd_a2_p0, the proxy's and the pool service's host
    assert any("pd_proxy host: 'pd_a2_p0' is retired (vllm_engine_retired), so it runs nothing of the cluster" in p
               for p in problems_of(cluster))


def test_a_host_naming_an_undeclared_instance_is_named():
    cluster = two_p_two_d()
    cluster["nodes"][-1]["instance"] = "c"
    found = problems_of(cluster)
    assert found[0].startswith("cluster pd_pool_a2, host pd_a2_d3: vllm_engine_instance: c is not an instance of role decode "
                               "(its instances: b). Fix: declare vllm_engine_instances.decode.c")


def test_two_instances_claiming_one_device_are_refused():
    cluster = two_p_two_d()
    cluster["nodes"][-1]["address"] = "192.0.2.44"  # d3 is D1's machine: both want devices 0-7
    found = problems_of(cluster)
    assert any("host pd_a2_d3: vllm_engine_device_offset: devices 0-7 overlap devices 0-7 of host pd_a2_d1" in p for p in found), found


def test_instances_sharing_a_machine_need_their_own_ports():
    cluster = cpu_pd()
    cluster["instances"] = {"decode": {"b": {}}}
    # a second decode instance on decode's machine (one address): it inherits the role's API and side-channel ports
    cluster["nodes"].append({"host": "box2b", "address": "192.0.2.91", "role": "decode", "instance": "b", "local_ranks": 1})
    found = problems_of(cluster)
    assert "cluster cpu_pd, host box2b: vllm_engine_api_port / vllm_engine_instances.decode.b.api_port: decode-b engine API (8200) " \
           "overlaps decode engine API of host box2 (8200). Fix: move one of them; also check vllm_engine_api_port / " \
           "vllm_engine_groups.decode.api_port." in found
    assert any("vllm_engine_instances.decode.b.kv_port: decode-b rank 0 NIXL side channel (5700)" in p for p in found), found
    cluster["instances"]["decode"]["b"] = {"api_port": 8300, "kv_port": 5800}
    assert plan_cluster(cluster)["ports"]["box2b"]


def test_an_override_the_plan_cannot_honour_is_refused():
    found = problems_of(two_p_two_d(launch="per_node", max_num_seqs=8))
    assert "cluster pd_pool_a2: vllm_engine_instances.decode.b.launch: instances of role decode share launch. Fix: set it in " \
           "vllm_engine_groups.decode.launch for every instance, or remove it." in found
    assert any(p.startswith("cluster pd_pool_a2: vllm_engine_instances.decode.b.max_num_seqs: unknown key") for p in found), found


def test_mooncake_instances_must_share_the_topology_every_peer_reads():
    found = problems_of(two_p_two_d(tp_size=4, dp_size=4))
    assert any(p.startswith("cluster pd_pool_a2: vllm_engine_instances.decode.b.dp_size: instance b of role decode is "
                            "{'dp_size': 4, 'tp_size': 4}, but MooncakeConnectorV2's extra config") for p in found), found


def test_a_role_whose_hosts_all_name_instances_has_no_first_instance():
    cluster = two_p_two_d()
    for node in cluster["nodes"]:
        if node["role"] == "decode" and "instance" not in node:
            node["instance"] = "b"
    assert any("vllm_engine_instance: every host of role decode names an instance" in p for p in problems_of(cluster))


@pytest.mark.parametrize("instances,message", [
    ({"decode": {"Bad_Name": {}}}, "an instance name is 1-32 lower-case letters"),
    ({"decode": {"prefill": {}}}, "an instance name is 1-32 lower-case letters, digits and dashes, and no role's name"),
    ({"decode": {"dp0": {}}}, "nor dp<number>, got 'dp0'"),
    ({"colocated": {"b": {}}}, "role colocated has no vllm_engine_groups.colocated"),
    ({"decode": {"b": {"dp_size": "four"}}}, "vllm_engine_instances.decode.b: dp_size must be int"),
])
def test_malformed_instances(instances, message):
    cluster = seeds.pd_a2()
    cluster["instances"] = instances
    with pytest.raises(InputError, match=message):
        plan_cluster(cluster)


def test_preflight_pings_from_every_prefill_instance_to_every_decode_instance():
    specs = launch.engine_specs(plan_cluster(two_p_two_d()), ENGINE)
    hosts = sorted({s["host"] for s in specs})
    facts = {host: {"facts": {"fabric": {"npus": {str(n): {"ip": "10.9.%d.%d" % (i, n)} for n in range(8)}}}}
             for i, host in enumerate(hosts)}
    targets = preflight_fabric.ping_targets(facts, specs)
    pairs = {(source, ping["peer"]) for source, pings in targets.items() for ping in pings}
    prefill = [h for h in hosts if "_p" in h]
    decode = [h for h in hosts if "_d" in h]
    assert {(p, d) for p in prefill for d in decode} <= pairs  # pd_a2_p2 (prefill-b) to pd_a2_d0 (decode) too
    assert ("pd_a2_d2", "pd_a2_d3") in pairs and ("pd_a2_d1", "pd_a2_d2") not in pairs  # within a DP group, not across


def test_a_new_image_rolls_one_instance_at_a_time_and_a_dead_rank_restarts_its_instance_only():
    specs = launch.engine_specs(plan_cluster(two_p_two_d()), ENGINE)
    waves = sorted({s["wave"] for s in specs})
    changed = {s["name"]: ["image: img:0 -> img:1"] for s in specs}
    plan = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed), specs, waves)
    rolled = [{s["meta"]["instance"] for s in specs if s["name"] in step["start"]} for step in plan["steps"] if step["start"]]
    assert rolled == [{"decode"}, {"decode-b"}, {"prefill"}, {"prefill-b"}]  # each instance its own step, decode first
    dead = rollout.launch_steps(states(specs, {"vllm-ascend-decode-b-dp5": "stopped"}, down=["vllm-ascend-decode-b-dp5"]),
                                specs, waves)
    restarted = {s["meta"]["instance"] for s in specs if s["name"] in [n for step in dead["steps"] for n in step["start"]]}
    assert restarted == {"decode-b"}  # the other decode instance keeps serving


def test_verify_proves_every_prefill_instance_with_every_decode_instance():
    specs = launch.engine_specs(plan_cluster(two_p_two_d()), ENGINE)
    pairs = verify.kv_pairs(verify.targets(specs))
    assert [(p["name"], d["name"]) for p, d in pairs] == [
        ("vllm-ascend-prefill-dp0", "vllm-ascend-decode-dp0"), ("vllm-ascend-prefill-dp0", "vllm-ascend-decode-b-dp0"),
        ("vllm-ascend-prefill-b-dp0", "vllm-ascend-decode-dp0"), ("vllm-ascend-prefill-b-dp0", "vllm-ascend-decode-b-dp0")]
    assert len(verify.kv_pairs(verify.targets(launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE)))) == 1  # 1P1D: one pair
    line = verify.pair_line({"pair": "prefill-b -> decode", "ok": False, "status": 500, "loaded": 0, "attempts": 2,
                             "why": "the decode answered HTTP 500: cannot reach prefill KV"})
    assert line == ("KV pair prefill-b -> decode: FAILED, the decode answered HTTP 500: cannot reach prefill KV (after 2 tries: "
                    "the first request of a pair opens its KV side channel)")
    request = verify.prefill_request("glm", "a prompt")
    assert request["kv_transfer_params"]["do_remote_decode"] is True and request["max_tokens"] == 1  # as the proxy asks


def test_rolling_the_only_instance_of_a_role_is_an_outage_rolling_one_of_two_is_not():
    two = launch.engine_specs(plan_cluster(two_p_two_d()), ENGINE)
    one = launch.engine_specs(plan_cluster(seeds.pd_pool_a2()), ENGINE)
    for specs, expected in ((two, []), (one, [("decode", ["decode"]), ("prefill", ["prefill"])])):
        changed = {s["name"]: ["image: img:0 -> img:1"] for s in specs}
        plan = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed), specs,
                                    sorted({s["wave"] for s in specs}))
        assert [(o["role"], o["instances"]) for o in plan["outages"]] == expected
    assert plan["outages"][0]["text"] == ("step 2 restarts every serving instance of role decode (decode): nothing of that "
                                          "role serves until it is back")
    assert plan["outages"][0]["text"] in plan["lines"]  # said before anything restarts


def test_a_first_deploy_or_a_dead_group_is_no_outage_but_restarting_both_instances_at_once_is():
    specs = launch.engine_specs(plan_cluster(two_p_two_d()), ENGINE)
    assert rollout.launch_steps(states(specs, dict.fromkeys((s["name"] for s in specs), "missing"),
                                       down=[s["name"] for s in specs]), specs, [0, 1])["outages"] == []
    dead = {"vllm-ascend-decode-dp1": "stopped", "vllm-ascend-decode-b-dp2": "stopped"}
    assert rollout.launch_steps(states(specs, dead, down=list(dead)), specs, [0, 1])["outages"] == []
    # one rank of each decode instance changed (not rolled: their groups restart in the wave's first step, together)
    changed = {"vllm-ascend-decode-dp1": ["env: A: 1 -> 2"], "vllm-ascend-decode-b-dp2": ["env: A: 1 -> 2"]}
    both = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed), specs, [0, 1])
    assert [(o["role"], o["instances"]) for o in both["outages"]] == [("decode", ["decode", "decode-b"])]
