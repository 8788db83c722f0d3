# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's members through a deploy: an instance that restarts while another of its role serves is taken
out of the running proxy, drained and put back; a removed instance's containers are retired; the proxy's members
are live parts of its spec, so growing or shrinking the cluster does not restart it."""

from __future__ import annotations

import http.server
import json
import os
import sys
import threading

from ansible_collections.llmops.inference.plugins.module_utils.operations import _container_state as container_state
from ansible_collections.llmops.inference.plugins.module_utils.operations import _rollout as rollout
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.services import _front_door as front_door
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members

sys.path.insert(0, os.path.dirname(__file__))
from test_instances import ENGINE, two_p_two_d  # noqa: E402  pylint: disable=wrong-import-position
from test_rollout import states  # noqa: E402  pylint: disable=wrong-import-position

SETTINGS = {"script": "/up/proxy.py", "bind": "0.0.0.0", "port": 8081, "address": "192.0.2.41", "config_dir": "/etc/llmops/pd_proxy",
            "container_name": "pd-proxy",
            "launcher": "# launcher\n", "client_keys": [], "admin_keys": ["admin-5d0e2b7c9f41aa3c8e1f07b2"], "open_front_door": True, "tls_cert": "",
            "tls_key": "", "tls_ca": ""}


def cluster_specs(cluster):
    """The engines of a cluster and its proxy, as the pd_proxy role describes it."""
    plan = plan_cluster(cluster)
    engines = launch.engine_specs(plan, ENGINE)
    proxy = launch.new_spec(name="pd-proxy", host="pd_a2_p0", image="img:1", wave=max(s["wave"] for s in engines) + 1,
                            **front_door.proxy_fields(SETTINGS, plan["proxy"], {"secret_env": {}}, "pd_pool_a2"))
    return engines + [proxy]


def with_fields(spec, **fields):
    """A copy of spec with fields replaced."""
    found = dict(spec)
    found.update(fields)
    return launch.new_spec(**found)


def test_growing_the_cluster_changes_the_proxys_members_but_not_what_restarts_it():
    small = cluster_specs(two_p_two_d())[-1]
    one = with_fields(small, command=small["command"][:small["command"].index("--decoder-hosts")]
                      + ["--decoder-hosts", "192.0.2.43", "--decoder-ports", "9900"],
                      files=dict(small["files"], **{"/etc/llmops/pd_proxy/instances.json": "{}"}))
    assert one["command"] != small["command"]
    assert launch.spec_hash(one) == launch.spec_hash(small)  # the members are live: no restart for them
    assert rollout.spec_record(one) == rollout.spec_record(small)
    other = with_fields(small, command=small["command"] + ["--workers", "2"])
    assert launch.spec_hash(other) != launch.spec_hash(small)  # a real flag still restarts it
    # the members file rewritten on the host restarts nothing; the launcher rewritten does
    compared = container_state.compare([small], {"pd-proxy": launch.spec_hash(small)},
                                       {"pd-proxy": {"state": "running", "labels": {container_state.HASH_LABEL: launch.spec_hash(small)}}},
                                       ["/etc/llmops/pd_proxy/instances.json"])
    assert compared["status"] == {"pd-proxy": "ok"}
    compared = container_state.compare([small], {"pd-proxy": launch.spec_hash(small)},
                                       {"pd-proxy": {"state": "running", "labels": {container_state.HASH_LABEL: launch.spec_hash(small)}}},
                                       ["/etc/llmops/pd_proxy/front_door.py"])
    assert compared["restart"] == ["pd-proxy"]


def test_a_rolled_instance_is_taken_out_drained_and_put_back_while_the_other_serves():
    specs = cluster_specs(two_p_two_d())
    engines = [s for s in specs if s["meta"]["kind"] == "engine"]
    changed = {s["name"]: ["image: img:0 -> img:1"] for s in engines if s["meta"]["instance"] == "decode-b"}
    plan = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed), specs,
                                sorted({s["wave"] for s in specs}))
    door = plan["front_door"]
    assert {k: v for k, v in door.items() if k not in ("members", "secret_env")} == {
        "host": "pd_a2_p0", "url": "http://192.0.2.41:8081", "ca": ""}
    assert door["secret_env"]["sources"] == {"LLMOPS_FRONT_DOOR_ADMIN_KEYS": ["front_door", "admin_keys"]}  # its admin key
    (step,) = [s for s in plan["steps"] if s["start"]]
    assert step["rolling"] and step["out"] == {"prefill": [], "decode": ["192.0.2.53:%d" % p for p in range(9900, 9904)]
                                               + ["192.0.2.54:%d" % p for p in range(9900, 9904)]}
    assert sorted(step["drain"].values()) == sorted("http://%s/metrics" % m for m in step["out"]["decode"])
    assert "take decode-b out of the front door and let it finish its requests first; put it back once ready" in " ".join(plan["lines"])
    # no proxy running (a first deploy): nothing to take out
    down = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed, down=["pd-proxy"]), specs,
                                sorted({s["wave"] for s in specs}))
    assert down["front_door"] is None and all(s["out"] == {} for s in down["steps"])
    # a proxy about to restart (new keys, TLS) runs other settings than planned: its admin API is not used
    changed["pd-proxy"] = ["env LLMOPS_FRONT_DOOR_TLS_CERT: (unset) -> /run/llmops-front-door-tls/tls.crt"]
    restarting = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed), specs,
                                      sorted({s["wave"] for s in specs}))
    assert restarting["front_door"] is None


def test_the_only_instance_of_a_role_or_one_that_never_ran_is_not_taken_out():
    specs = cluster_specs(two_p_two_d())
    engines = [s for s in specs if s["meta"]["kind"] == "engine"]
    # both decode instances changed in one group each: rolled one after the other, the other serving each time
    changed = {s["name"]: ["image: img:0 -> img:1"] for s in engines if s["meta"]["role"] == "decode"}
    plan = rollout.launch_steps(states(specs, dict.fromkeys(changed, "changed"), changes=changed), specs,
                                sorted({s["wave"] for s in specs}))
    assert [bool(s["out"]) for s in plan["steps"] if s["start"]] == [True, True]
    # a new instance (its containers missing): the proxy does not list it yet, so nothing goes out for it
    new = {s["name"]: "missing" for s in engines if s["meta"]["instance"] == "prefill-b"}
    plan = rollout.launch_steps(states(specs, new, down=list(new)), specs, sorted({s["wave"] for s in specs}))
    assert all(s["out"] == {} for s in plan["steps"])


def test_containers_no_spec_names_are_retired_unless_another_host_on_their_machine_plans_them():
    specs = cluster_specs(two_p_two_d())
    found = states(specs)
    found["pd_a2_d1"]["extra"] = ["vllm-ascend-decode-c-dp0"]
    found["pd_a2_d0"]["extra"] = ["vllm-ascend-decode-dp4"]  # pd_a2_d1's, on the same machine below
    plan = rollout.launch_steps(found, specs, sorted({s["wave"] for s in specs}), {"pd_a2_d0": "192.0.2.43", "pd_a2_d1": "192.0.2.43"})
    assert plan["retire"] == {"pd_a2_d1": ["vllm-ascend-decode-c-dp0"]}
    assert any(line.startswith("before step 1: retire vllm-ascend-decode-c-dp0 on pd_a2_d1") for line in plan["lines"])
    alone = rollout.launch_steps(found, specs, sorted({s["wave"] for s in specs}))
    assert alone["retire"]["pd_a2_d0"] == ["vllm-ascend-decode-dp4"]  # no machine said: each host is its own


def test_a_retired_host_gets_its_machines_containers_once_and_leaves_its_neighbours_alone():
    specs = cluster_specs(two_p_two_d())
    found = states(specs)
    # pd_a2_d9, retired, shares pd_a2_d1's machine: both see the retired instance's container, only one removes it,
    # and what pd_a2_d1 plans there stays
    found["pd_a2_d9"] = {"status": {}, "running": [], "extra": ["vllm-ascend-decode-c-dp0", "vllm-ascend-decode-dp4"]}
    found["pd_a2_d1"]["extra"] = ["vllm-ascend-decode-c-dp0"]
    machines = {"pd_a2_d1": "192.0.2.44", "pd_a2_d9": "192.0.2.44", "pd_a2_d8": "192.0.2.59"}
    plan = rollout.launch_steps(found, specs, sorted({s["wave"] for s in specs}), machines)
    assert plan["retire"] == {"pd_a2_d1": ["vllm-ascend-decode-c-dp0"]}
    # a retired host alone on its machine: all its containers go
    found["pd_a2_d8"] = {"status": {}, "running": [], "extra": ["vllm-ascend-decode-c-dp1"]}
    plan = rollout.launch_steps(found, specs, sorted({s["wave"] for s in specs}), machines)
    assert plan["retire"]["pd_a2_d8"] == ["vllm-ascend-decode-c-dp1"]


def test_members_on_no_machine_of_the_inventory_are_named():
    taken = {"prefill": ["192.0.2.60:9081"], "decode": ["192.0.2.44:9900", "192.0.2.70:9900"]}
    assert members.unreached(taken, ["192.0.2.41", "192.0.2.44"]) == {"prefill": ["192.0.2.60:9081"], "decode": ["192.0.2.70:9900"]}
    assert members.count(members.unreached(taken, ["192.0.2.60", "192.0.2.44", "192.0.2.70"])) == 0


def test_the_plans_members_against_what_the_proxy_lists():
    specs = cluster_specs(two_p_two_d())
    plan = members.planned(specs)
    assert plan == json.loads(specs[-1]["files"]["/etc/llmops/pd_proxy/instances.json"])  # what the launcher starts with
    current = {"prefill": plan["prefill"][:1] + ["192.0.2.60:9081"], "decode": plan["decode"]}
    assert members.unplanned(current, plan) == {"prefill": ["192.0.2.60:9081"], "decode": []}
    assert members.missing(current, plan) == {"prefill": plan["prefill"][1:], "decode": []}
    assert members.metrics_urls({"prefill": ["192.0.2.60:9081"]}) == {"192.0.2.60:9081": "http://192.0.2.60:9081/metrics"}


class FakeAdminApi:
    """The proxy's admin API on the loopback: every POST is recorded in ``seen`` (path, Authorization, body) and answered
    with ``lists`` (its "current_*_instances"); a key other than ``key`` gets 401. ``url`` while it serves."""

    def __init__(self, lists, key=None):
        self.lists, self.key, self.seen = lists, key, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.seen.append((self.path, self.headers.get("Authorization"), body))
                answer = json.dumps(fake.lists).encode()
                refused = fake.key is not None and self.headers.get("Authorization") != "Bearer " + fake.key
                self.send_response(401 if refused else 200)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]

    def __enter__(self):
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc):
        self.server.shutdown()
        self.server.server_close()  # refused from now on, not left to time out


def test_the_admin_api_client_sends_the_key_and_reads_the_lists():
    lists = {"current_prefill_instances": ["192.0.2.41:9081"], "current_decode_instances": []}
    with FakeAdminApi(lists, key="admin-a") as fake:
        api = members.AdminApi(fake.url, key="admin-a")
        assert api.lists() == {"prefill": ["192.0.2.41:9081"], "decode": []}
        api.remove({"prefill": [], "decode": ["192.0.2.43:9900"]})
        assert fake.seen[-1] == ("/instances/remove", "Bearer admin-a", {"type": "decode", "instances": ["192.0.2.43:9900"]})
        try:
            members.AdminApi(fake.url, key="wrong").lists()
            raise AssertionError("a refused key passed")
        except ValueError as err:
            assert "/instances/add answered 401" in str(err)


def test_a_neighbours_containers_on_a_shared_machine_are_no_extra_ones():
    spec = launch.new_spec(name="vllm-cpu-decode", host="box2", image="img:1")
    running = {name: {"state": "running", "labels": {}} for name in ("vllm-cpu-decode", "vllm-cpu-decode-b", "left-over")}
    found = container_state.compare([spec], {"vllm-cpu-decode": "x"}, running, (), ["vllm-cpu-decode-b"])
    assert found["extra"] == ["left-over"]


def test_a_run_that_starts_nothing_waits_for_nothing_but_a_wave_before_a_start_is_waited_for():
    specs = cluster_specs(two_p_two_d())
    nothing = rollout.launch_steps(states(specs), specs, sorted({s["wave"] for s in specs}))
    assert nothing["steps"] == []
    proxy_down = rollout.launch_steps(states(specs, {"pd-proxy": "stopped"}, down=["pd-proxy"]), specs, sorted({s["wave"] for s in specs}))
    first, last = proxy_down["steps"][0], proxy_down["steps"][-1]
    assert first["start"] == [] and len(first["wait"]) == len([s for s in specs if s["wave"] == first["wave"]])  # ready first
    assert last["start"] == ["pd-proxy"] and last["wait"] == ["pd-proxy"]


def test_a_run_is_idle_only_when_nothing_starts_no_file_changes_and_the_front_door_lists_the_plan():
    specs = cluster_specs(two_p_two_d())
    waves = sorted({s["wave"] for s in specs})
    plan = members.planned(specs)

    def looked(door=None, files=()):
        found = states(specs)
        if door is not None:
            found["pd_a2_p0"]["front_door"] = door
        found["pd_a2_p1"]["changed_files"] = list(files)
        return rollout.launch_steps(found, specs, waves)

    read = {"missing": {"prefill": [], "decode": []}, "unplanned": {"prefill": [], "decode": []}}
    assert looked(read)["idle"] and looked(read)["steps"] == []
    assert not looked(None)["idle"]  # the front door was not read: deploy asks it
    assert not looked({"error": "the front door's admin API at ...: refused"})["idle"]
    assert not looked(dict(read, missing={"prefill": plan["prefill"][:1], "decode": []}))["idle"]
    assert not looked(dict(read, unplanned={"prefill": [], "decode": ["192.0.2.99:9900"]}))["idle"]
    # the members file is live: rewritten, it restarts nothing, but the run still has it to write
    idle_but_file = looked(read, files=["/etc/llmops/pd_proxy/instances.json"])
    assert idle_but_file["steps"] == [] and not idle_but_file["idle"]
    down = states(specs, {"pd-proxy": "stopped"}, down=["pd-proxy"])
    assert not rollout.launch_steps(down, specs, waves)["idle"]


def test_only_a_run_with_files_to_write_containers_to_retire_or_members_to_take_out_has_work_before_its_steps():
    specs = cluster_specs(two_p_two_d())
    waves = sorted({s["wave"] for s in specs})
    read = {"missing": {"prefill": [], "decode": []}, "unplanned": {"prefill": [], "decode": []}}

    def before(door=None, files=(), roll=None):
        found = states(specs, roll or {})
        if door is not None:
            found["pd_a2_p0"]["front_door"] = door
        found["pd_a2_d1"]["changed_files"] = list(files)
        return rollout.launch_steps(found, specs, waves)["before_steps"]

    hosts = {s["host"] for s in specs}
    # a roll (a new image on one decode instance) or a first deploy: nothing before the steps on any host
    new_image = {"vllm-ascend-decode-b-dp%d" % rank: "changed" for rank in range(8)}
    rolled = states(specs, new_image)
    rolled["pd_a2_p0"]["front_door"] = read
    assert any(step["rolling"] for step in rollout.launch_steps(rolled, specs, waves)["steps"])
    assert before(read, roll=new_image) == {host: False for host in hosts}
    first = {host: {"status": {s["name"]: "missing" for s in specs if s["host"] == host}} for host in hosts}
    assert not any(rollout.launch_steps(first, specs, waves)["before_steps"].values()) and first
    # a config file to rewrite: on its host only
    assert [h for h, todo in before(read, files=["/etc/llmops/x.json"]).items() if todo] == ["pd_a2_d1"]
    # the running front door lists a member the plan no longer has, or was not read: every host (the tasks run once)
    assert all(before(dict(read, unplanned={"prefill": [], "decode": ["192.0.2.99:9900"]})).values())
    assert all(before({"error": "refused"}).values()) and all(before(None).values())
    unplanned = states(specs)
    unplanned["pd_a2_p0"]["front_door"] = dict(read, unplanned={"prefill": [], "decode": ["192.0.2.99:9900"]})
    assert rollout.launch_steps(unplanned, specs, waves)["door_unplanned"]
    listed = states(specs)
    listed["pd_a2_p0"]["front_door"] = read
    assert not rollout.launch_steps(listed, specs, waves)["door_unplanned"]
    # a container no spec names (a removed instance's): its host, and the front door is asked again
    retired = states(specs)
    retired["pd_a2_d0"]["extra"] = ["vllm-ascend-decode-c-dp0"]
    retired["pd_a2_p0"]["front_door"] = read
    assert [h for h, todo in rollout.launch_steps(retired, specs, waves)["before_steps"].items() if todo] == ["pd_a2_d0"]
