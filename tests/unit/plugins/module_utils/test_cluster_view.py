# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The composed plan as every host's tasks read it: each host's share worked out once, as the playbooks' filters
over the whole cluster gave it before."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.plan import _cluster_view as cluster_view
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_inputs as preflight_inputs
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members

sys.path.insert(0, os.path.dirname(__file__))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position

ENGINE = {"image": "img:1", "model": "/m", "container_name": "vllm-ascend", "args": {"served-model-name": "glm"},
          "env": {}, "driver": {"devices": ["/dev/davinci_manager"], "volumes": ["/data/models:/m:ro"]},
          "headless_ready_log": seeds.HEADLESS_READY_LOG}


def pd_a2_specs():
    plan = plan_cluster(seeds.pd_a2())
    specs = launch.engine_specs(plan, ENGINE)
    proxy = launch.new_spec(name="pd-proxy", host="pd_a2_p0", image="proxy:1", wave=1,
                            meta={"kind": "proxy", "api_url": "http://192.0.2.41:8080"},
                            ready={"http": "http://192.0.2.41:8080/healthcheck"})
    return plan, specs + [proxy]


def test_each_host_gets_the_specs_naming_it_and_what_preflight_looks_at_there():
    plan, specs = pd_a2_specs()
    hosts = ["pd_a2_p0", "pd_a2_p1", "pd_a2_d0", "pd_a2_d1"]
    view = cluster_view.view(specs, hosts, plan, ["/data/ucm/cache"], {"pd_a2_d0": {"text": "table inet llmops_pd_a2 {}"}})
    assert set(view["hosts"]) == set(hosts)
    for host in hosts:
        share = view["hosts"][host]
        mine = [spec for spec in specs if spec["host"] == host]
        assert share["specs"] == mine and mine  # the cluster's order, as selectattr('host', 'eq', host) gave them
        gather = preflight_inputs.gather_inputs(mine, ["/data/ucm/cache"])
        assert (share["paths"], share["npus"]) == (gather["paths"], gather["npus"])
        assert share["neighbours"] == []  # a machine of its own
    assert view["hosts"]["pd_a2_p0"]["images"] == ["img:1", "proxy:1"]  # each once, in the specs' order
    assert view["hosts"]["pd_a2_d0"]["npus"] == list(range(8)) and "/dev/davinci_manager" in view["hosts"]["pd_a2_d0"]["paths"]
    assert view["hosts"]["pd_a2_d0"]["firewall"] == {"text": "table inet llmops_pd_a2 {}"}
    assert view["hosts"]["pd_a2_d1"]["firewall"] is None  # no rules for it: the firewall is off there
    assert view["firewall_rules"] == {"pd_a2_d0": {"text": "table inet llmops_pd_a2 {}"}}
    assert view["cluster"] == plan["cluster"] and view["firewall_table"] == "llmops_" + plan["cluster"].replace("-", "_")
    assert view["waves"] == launch.wave_numbers(plan) and view["created_dirs"] == ["/data/ucm/cache"]
    assert view["front_door"] == members.door_of(specs) and view["front_door"]["host"] == "pd_a2_p0"
    assert view["specs"] == specs and view["etcd"] == [] and view["machines"] == plan["machines"]


def test_two_hosts_on_one_machine_see_each_others_containers_and_a_retired_host_gets_an_empty_share():
    specs = [launch.new_spec(name=name, host=host, image="i") for name, host in
             [("p-dp0", "p0"), ("d-dp0", "d0a"), ("d-dp1", "d0b"), ("d-dp2", "d1")]]
    # d0a and d0b are two instances on one server; p0 and d1 have their own; r0 is retired and plans nothing
    plan = {"cluster": "lab", "start_waves": [["prefill", "decode"]],
            "machines": {"p0": "192.0.2.41", "d0a": "192.0.2.43", "d0b": "192.0.2.43", "d1": "192.0.2.44", "r0": "192.0.2.45"}}
    view = cluster_view.view(specs, ["p0", "d0a", "d0b", "d1", "r0"], plan)
    assert view["hosts"]["d0a"]["neighbours"] == ["d-dp1"] and view["hosts"]["d0b"]["neighbours"] == ["d-dp0"]
    assert view["hosts"]["p0"]["neighbours"] == [] and view["hosts"]["d1"]["neighbours"] == []
    assert view["hosts"]["r0"] == {"specs": [], "neighbours": [], "paths": [], "npus": [], "images": [], "firewall": None}
    assert view["front_door"] is None  # no proxy planned
