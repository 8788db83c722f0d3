# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy run restarts (whole DP groups, engines after a pool service, rolled groups) and why."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.operations import _rollout as rollout
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster

sys.path.insert(0, os.path.dirname(__file__))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position

ENGINE = {"image": "img:1", "model": "/m", "container_name": "vllm", "args": {"served-model-name": "glm", "max-model-len": 4096},
          "env": {"A": "1"}, "driver": {"devices": ["/dev/davinci0"], "volumes": []}, "headless_ready_log": seeds.HEADLESS_READY_LOG}


def cluster(seed, with_pool_service=False):
    plan = plan_cluster(seed)
    specs = launch.engine_specs(plan, ENGINE)
    waves = launch.engine_waves(plan)
    if with_pool_service:
        specs.insert(0, launch.new_spec(name="master", host=specs[0]["host"], image="mc", command=["mooncake_master"], wave=waves["pool"]))
    specs.append(launch.new_spec(name="proxy", host=specs[0]["host"], image="img:1", command=["python", "proxy.py"], wave=waves["proxy"]))
    return specs, launch.wave_numbers(plan)


def states(specs, status=None, down=(), changes=None, restart=()):
    """container_state results by host: every container up and ok unless said otherwise."""
    status = status or {}
    result = {}
    for spec in specs:
        state = result.setdefault(spec["host"], {"status": {}, "running": [], "restart": [], "changes": {}})
        name = spec["name"]
        state["status"][name] = status.get(name, "ok")
        if name not in down and state["status"][name] != "missing":
            state["running"].append(name)
        if name in (changes or {}):
            state["changes"][name] = changes[name]
        if name in restart:
            state["restart"].append(name)
    return result


def why(plan, name):
    """The reason given for the container of that name (unique in these clusters)."""
    (reason,) = [text for key, text in plan["why"].items() if key.endswith("/" + name)]
    return reason


def started(plan):
    return [name for step in plan["steps"] for name in step["start"]]


def test_nothing_changed_starts_nothing_and_waits_for_nothing():
    specs, waves = cluster(seeds.pd_a2())
    plan = rollout.launch_steps(states(specs), specs, waves)
    assert started(plan) == [] and plan["lines"] == []
    # a no-op run walks through no step (status.yml probes readiness); one dead proxy gets the steps up to its wave
    assert plan["steps"] == []
    proxy = rollout.launch_steps(states(specs, {"proxy": "stopped"}, down=["proxy"]), specs, waves)
    assert [step["wave"] for step in proxy["steps"]] == waves and proxy["steps"][-1]["start"] == ["proxy"]


def test_one_dead_decode_rank_restarts_its_whole_dp_group_on_every_host_and_nothing_else():
    specs, waves = cluster(seeds.pd_a2())
    plan = rollout.launch_steps(states(specs, {"vllm-decode-dp5": "stopped"}, down=["vllm-decode-dp5"]), specs, waves)
    decode = sorted(s["name"] for s in specs if "-decode-" in s["name"])
    assert sorted(started(plan)) == decode
    assert {s["host"] for s in specs if s["name"] in decode} == {"pd_a2_d0", "pd_a2_d1"}
    step = next(step for step in plan["steps"] if step["start"])
    assert not step["rolling"] and "vllm-decode-dp5" not in step["restart"] and "vllm-decode-dp0" in step["restart"]
    assert why(plan, "vllm-decode-dp0") == "restarted with its DP group (vllm-decode-dp5: not running (stopped))"
    assert "pd_a2_d1" in next(line for line in plan["lines"] if "vllm-decode-dp5 on" in line)


def test_a_restarted_pool_service_restarts_the_engines_after_it_in_their_waves():
    specs, waves = cluster(seeds.pd_pool_a2(), with_pool_service=True)
    plan = rollout.launch_steps(states(specs, {"master": "missing"}), specs, waves)
    engines = [s for s in specs if s["command"][:2] == ["vllm", "serve"]]
    assert sorted(started(plan)) == sorted(["master"] + [s["name"] for s in engines])
    order = {name: number for number, step in enumerate(plan["steps"]) for name in step["start"]}
    assert all(order[s["name"]] > order["master"] for s in engines)
    assert "proxy" not in order  # the proxy holds no registration
    assert why(plan, "vllm-decode-dp0").startswith("restarted after master (not running (missing))")
    # the running engines are stopped before the master starts, so none registers with the new one
    (first,) = [step for step in plan["steps"] if "master" in step["start"]]
    assert sorted(first["stop"]) == sorted(s["name"] for s in engines) and plan["lines"][0].endswith(
        "first (it registered with a service that restarts)")
    assert all(not step["stop"] for step in plan["steps"] if step is not first)
    assert sum(len(mine["stop"]) for mine in first["hosts"].values()) == len(engines)


def test_ha_masters_and_etcd_members_restart_alone_and_roll_one_at_a_time():
    """Mooncake masters in HA hand over to a standby: no engine restarts for one, and changed running
    masters or etcd members roll one by one, each waited for, so a leader and a quorum stay."""
    specs, waves = cluster(seeds.pd_pool_a2())
    hosts = sorted({s["host"] for s in specs})
    ha = [launch.new_spec(name="mooncake-etcd", host=h, image="etcd", command=["etcd"], wave=waves[0],
                          meta={"kind": "pool_store", "ha": {"service": "etcd"}}) for h in hosts[:3]]
    ha += [launch.new_spec(name="mooncake-master", host=h, image="mc", command=["mooncake_master"], wave=waves[1],
                           meta={"kind": "pool_service", "ha": {"service": "mooncake_master"}}) for h in hosts[:2]]
    specs = ha + specs
    plan = rollout.launch_steps(states(specs, {"mooncake-master": "missing"}), specs, waves)
    assert started(plan) == ["mooncake-master", "mooncake-master"] and all(not step["stop"] for step in plan["steps"])
    changed = rollout.launch_steps(states(specs, {"mooncake-master": "changed", "mooncake-etcd": "changed"}), specs, waves)
    rolled = [(step["start"], sorted(step["hosts"])) for step in changed["steps"] if step["start"]]
    assert rolled == [(["mooncake-etcd"], [h]) for h in hosts[:3]] + [(["mooncake-master"], [h]) for h in hosts[:2]]
    assert all(step["rolling"] and step["wait"] == step["start"] for step in changed["steps"] if step["start"])
    # the leaders roll last, so a roll fails over once
    states_now = states(specs, {"mooncake-master": "changed", "mooncake-etcd": "changed"})
    states_now[hosts[0]]["ha_roles"] = {"mooncake-master": "leader", "mooncake-etcd": "leader"}
    states_now[hosts[1]]["ha_roles"] = {"mooncake-master": "standby", "mooncake-etcd": "follower"}
    led = rollout.launch_steps(states_now, specs, waves)
    order = [(step["start"][0], sorted(step["hosts"])[0]) for step in led["steps"] if step["start"]]
    assert order == [("mooncake-etcd", hosts[1]), ("mooncake-etcd", hosts[2]), ("mooncake-etcd", hosts[0]),
                     ("mooncake-master", hosts[1]), ("mooncake-master", hosts[0])]


def test_changed_running_groups_roll_one_at_a_time_in_start_order():
    specs, waves = cluster(seeds.pd_a2())
    engines = [s["name"] for s in specs if s["command"][:2] == ["vllm", "serve"]]
    change = {name: ["image: img:1 -> img:2"] for name in engines}
    plan = rollout.launch_steps(states(specs, dict.fromkeys(engines, "changed"), changes=change), specs, waves)
    rolled = [step for step in plan["steps"] if step["rolling"]]
    assert len(rolled) == 2  # the prefill DP group, then the decode DP group, each its own step
    assert all({rollout.dp_group(s) for s in specs if s["name"] in step["start"]} == {rollout.dp_group(next(
        s for s in specs if s["name"] == step["start"][0]))} for step in rolled)
    assert [step["wait"] for step in rolled] == [step["start"] for step in rolled]
    # before its own step a rolled group still runs its old spec: no earlier step waits for it with the new probe
    for index, step in enumerate(plan["steps"]):
        later = {name for other in plan["steps"][index + 1:] if other["rolling"] for name in other["start"]}
        assert not later & set(step["wait"]), step
    assert rolled[0]["restart"] == []  # recreated for their new spec, not restarted besides
    assert why(plan, "vllm-prefill-dp0") == "image: img:1 -> img:2"
    # the proxy runs on, untouched: the rolls are the last steps, no step of its wave follows them to wait for it
    assert plan["steps"][-1] is rolled[-1] and all(step["wave"] < waves[-1] for step in plan["steps"])


def test_a_group_partly_down_is_recovered_not_rolled():
    specs, waves = cluster(seeds.pd_a2())
    status = {"vllm-decode-dp0": "changed", "vllm-decode-dp5": "missing"}
    plan = rollout.launch_steps(states(specs, status, changes={"vllm-decode-dp0": ["--max-model-len: 4096 -> 8192"]}), specs, waves)
    assert not any(step["rolling"] for step in plan["steps"])
    assert why(plan, "vllm-decode-dp0") == "--max-model-len: 4096 -> 8192"


def test_a_rewritten_config_file_restarts_the_container_and_its_group():
    specs, waves = cluster(seeds.dp_a2())
    name = specs[0]["name"]
    plan = rollout.launch_steps(states(specs, {name: "changed"}, restart=[name]), specs, waves)
    step = next(step for step in plan["steps"] if step["start"])
    # the helper marks the name on both nodes (dp_a2 runs one name on each): both are rewritten
    assert name in step["restart"] and set(plan["why"].values()) == {"a config file it mounts was rewritten"}


def test_spec_changes_name_the_flag_env_mount_and_image():
    old = launch.new_spec(name="a", image="img:1", command=["vllm", "serve", "/m", "--port", "1", "--enforce-eager"],
                          env={"A": "1", "B": "2"}, volumes=["/x:/x"], files={"/etc/f": "one"})
    new = launch.new_spec(name="a", image="img:2", command=["vllm", "serve", "/m", "--port", "2", "--seed", "7"],
                          env={"A": "1", "C": "3"}, volumes=["/y:/y"], files={"/etc/f": "two"})
    record = rollout.decode_record(rollout.encode_record(old))
    assert rollout.spec_changes(record, rollout.spec_record(new)) == [
        "image: img:1 -> img:2", "--port: 1 -> 2", "--enforce-eager: (set) -> (unset)", "--seed: (unset) -> 7",
        "env B: 2 -> (unset)", "env C: (unset) -> 3", "volume added: /y:/y", "volume removed: /x:/x", "file /etc/f: content changed"]
    assert rollout.spec_changes(None, rollout.spec_record(new)) == ["spec changed (the container records no earlier spec)"]
    assert "," not in rollout.encode_record(old)  # docker ps joins labels with commas
    assert rollout.decode_record("not base64!") is None


def test_record_lines_show_one_setting_per_line_for_diff():
    spec = launch.new_spec(name="a", image="i", command=["python", "p.py", "--hosts", "a", "b"], env={"A": "1"},
                           secret_env={"names": ["K"], "role": "decode", "digest": "abc"})
    assert rollout.record_lines(rollout.spec_record(spec)) == [
        "image: i", "command python p.py", "--hosts a b", "env A=1", "secret env digest: abc", "network_mode: host"]


def test_containers_of_one_name_on_two_hosts_are_told_apart():
    """dp_a2 runs vllm-ascend on both nodes: node0's dead rank restarts both, each on its own host."""
    specs, waves = cluster(seeds.dp_a2())
    engines = [s for s in specs if s["command"][0] == "vllm"]
    assert len({s["name"] for s in engines}) == 1 and len(engines) == 2
    result = states(specs)
    result["dp_a2_node0"]["status"]["vllm"] = "stopped"
    result["dp_a2_node0"]["running"].remove("vllm")
    plan = rollout.launch_steps(result, specs, waves)
    (step,) = [step for step in plan["steps"] if step["start"]]
    assert step["hosts"]["dp_a2_node0"]["start"] == ["vllm"] and step["hosts"]["dp_a2_node0"]["restart"] == []
    assert step["hosts"]["dp_a2_node1"]["start"] == ["vllm"] and step["hosts"]["dp_a2_node1"]["restart"] == ["vllm"]
    assert plan["why"] == {"dp_a2_node0/vllm": "not running (stopped)",
                           "dp_a2_node1/vllm": "restarted with its DP group (vllm: not running (stopped))"}
    assert plan["lines"] == ["step 1 (wave 0): vllm on dp_a2_node0: not running (stopped)",
                             "step 1 (wave 0): vllm on dp_a2_node1: restarted with its DP group (vllm: not running (stopped))"]


def test_a_hosts_changed_config_files_are_written_by_its_first_step_that_starts_something_there():
    specs, waves = cluster(seeds.pd_a2())
    proxy_host = specs[-1]["host"]
    # a first deploy: the proxy's file on its host is new; that host's first step (wave 0, its prefill rank) writes it
    first = {host: {"status": {s["name"]: "missing" for s in specs if s["host"] == host}} for host in {s["host"] for s in specs}}
    first[proxy_host]["changed_files"] = ["/etc/llmops/pd_proxy/front_door.py"]
    plan = rollout.launch_steps(first, specs, waves)
    assert not any(plan["before_steps"].values())
    flagged = [(index, host) for index, step in enumerate(plan["steps"]) for host, mine in step["hosts"].items() if mine.get("files")]
    assert flagged == [(0, proxy_host)] and plan["steps"][0]["hosts"][proxy_host]["start"]
    # every host's first step that starts anything there makes the components' directories: one step per host
    firsts = [(index, host) for index, step in enumerate(plan["steps"]) for host, mine in step["hosts"].items() if mine.get("first")]
    assert sorted(host for _index, host in firsts) == sorted({s["host"] for s in specs})
    assert all(plan["steps"][index]["hosts"][host]["start"] for index, host in firsts)
    # only the proxy restarts for its rewritten file: the step that restarts it writes it
    rewritten = states(specs, restart=["proxy"])
    rewritten[proxy_host]["changed_files"] = ["/etc/llmops/pd_proxy/front_door.py"]
    plan = rollout.launch_steps(rewritten, specs, waves)
    assert not plan["before_steps"][proxy_host]
    assert [mine for step in plan["steps"] for host, mine in step["hosts"].items() if mine["start"] or mine.get("files")] == [
        {"stop": [], "start": ["proxy"], "restart": ["proxy"], "wait": ["proxy"], "first": True, "files": True}]
    # a file no step's start writes on its host (nothing there restarts for it): before the steps, as a round of its own
    idle = states(specs)
    idle[proxy_host]["changed_files"] = ["/etc/llmops/x.json"]
    plan = rollout.launch_steps(idle, specs, waves)
    assert plan["before_steps"][proxy_host] and not plan["steps"]
    # a host with work before its steps anyway (a container to retire) writes its files there too, not in a step
    retiring = dict(first, **{proxy_host: dict(first[proxy_host], extra=["vllm-old"])})
    plan = rollout.launch_steps(retiring, specs, waves)
    assert plan["before_steps"][proxy_host] and not any(mine.get("files") for step in plan["steps"] for mine in step["hosts"].values())


def test_a_hosts_firewall_is_loaded_by_its_first_start_only_where_nothing_of_the_cluster_runs():
    specs, waves = cluster(seeds.pd_a2())
    hosts = sorted({s["host"] for s in specs})
    stale = {"nft": "/usr/sbin/nft", "loaded": False, "file": False, "current": False}
    # a first deploy: no table anywhere and nothing runs, so each host's first start loads its table, in that call
    first = {host: {"status": {s["name"]: "missing" for s in specs if s["host"] == host}, "firewall": dict(stale)} for host in hosts}
    plan = rollout.launch_steps(first, specs, waves)
    assert plan["firewall_in_step"] == hosts
    loading = sorted(host for step in plan["steps"] for host, mine in step["hosts"].items() if mine.get("firewall"))
    assert loading == hosts and all(mine.get("first") for step in plan["steps"] for mine in step["hosts"].values() if mine.get("firewall"))
    # a running cluster whose table changed: the ports listen already, so the role loads it before any step
    running = states(specs, restart=["proxy"])
    for host in hosts:
        running[host]["firewall"] = dict(stale, loaded=True, file=True)
    plan = rollout.launch_steps(running, specs, waves)
    assert plan["firewall_in_step"] == [] and not any(mine.get("firewall") for step in plan["steps"] for mine in step["hosts"].values())
    # a table as planned, or no firewall planned (no "current"): nothing to load anywhere
    for found in ({"loaded": True, "file": True, "current": True}, {"loaded": False, "file": False}):
        as_planned = {host: dict(first[host], firewall=found) for host in hosts}
        assert rollout.launch_steps(as_planned, specs, waves)["firewall_in_step"] == []


def test_healing_may_restart_dead_groups_but_a_changed_spec_file_or_retired_container_is_beyond_it():
    specs, waves = cluster(seeds.pd_a2())
    dead = rollout.launch_steps(states(specs, {"vllm-decode-dp5": "stopped"}, down=["vllm-decode-dp5"]), specs, waves)
    assert dead["steps"] and dead["beyond_healing"] == []
    found = states(specs, {"vllm-prefill-dp0": "changed"}, changes={"vllm-prefill-dp0": ["image: a -> b"]})
    found["pd_a2_d0"]["changed_files"] = ["/etc/llmops/x.yaml"]
    found["pd_a2_d1"]["extra"] = ["vllm-decode-old"]
    changed = rollout.launch_steps(found, specs, waves)
    assert changed["beyond_healing"] == ["/etc/llmops/x.yaml on pd_a2_d0: its file differs from the plan's",
                                         "vllm-prefill-dp0 on pd_a2_p0 runs with other settings than planned (image: a -> b)",
                                         "vllm-decode-old on pd_a2_d1 is no longer planned"]
