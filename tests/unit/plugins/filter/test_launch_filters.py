# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters the roles build launch specs with."""

from __future__ import annotations

import os
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.filter import compose, launch, preflight
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position

NODES = [{"host": "p0", "address": "192.0.2.41"}, {"host": "d0", "address": "192.0.2.43"}]


def test_inventory_host_accepts_a_host_or_its_address():
    assert compose.inventory_host("d0", NODES) == "d0"
    assert compose.inventory_host("192.0.2.43", NODES) == "d0"
    assert compose.inventory_host("192.0.2.99", NODES) == "192.0.2.99"  # left for the planner to refuse


def test_paths_outside_mounts():
    volumes = ["/data/ucm:/data/ucm", "/etc/llmops/ucm/x.yaml:/workspace/x.yaml:ro", "/root/.cache:/root/.cache"]
    assert preflight.paths_outside_mounts(["/data/ucm/cache", "/data/ucm", "/root/.cache/"], volumes) == []
    assert preflight.paths_outside_mounts(["/data/ucmx", "/cache", ""], volumes) == ["/data/ucmx", "/cache"]


def test_launch_spec_refuses_unknown_keys_and_hashes_stably():
    spec = compose.launch_spec({"name": "a", "host": "h", "image": "i", "env": {"N": 1}})
    assert spec["env"] == {"N": "1"} and spec["wave"] == 0 and spec["network_mode"] == "host"
    assert launch.launch_labels(spec, "c") == launch.launch_labels(dict(reversed(list(spec.items()))), "c")
    assert launch.launch_labels(spec, "c")["llmops.spec-hash"] != launch.launch_labels(dict(spec, image="j"), "c")["llmops.spec-hash"]
    with pytest.raises(ValueError, match="unknown launch spec keys"):
        compose.launch_spec({"name": "a", "imgae": "i"})


def test_engine_specs_carry_the_plan_and_the_addons_by_role():
    plan = plan_cluster(seeds.pd_pool_a2())
    addon = {"env": {"MOONCAKE_CONFIG_PATH": "/etc/llmops/mooncake/mooncake.json"},
             "volumes": ["/etc/llmops/mooncake:/etc/llmops/mooncake:ro"],
             "by_role": {"prefill": {"files": {"/etc/llmops/mooncake/mooncake.json": "prefill"}},
                         "decode": {"files": {"/etc/llmops/mooncake/mooncake.json": "decode"}}}}
    engine = {"image": "img", "model": "/m", "container_name": "vllm", "args": {"served-model-name": "glm"},
              "env": {"A": "1"}, "role_env": {"decode": {"A": "2"}}, "volumes": ["/root/.cache:/root/.cache"],
              "driver": {"devices": ["/dev/davinci0"], "volumes": [], "shm_size": "500g"}, "addons": [addon],
              "headless_ready_log": seeds.HEADLESS_READY_LOG}
    specs = {spec["name"]: spec for spec in compose.engine_launch_specs(plan, engine)}
    decode, prefill = specs["vllm-decode-dp5"], specs["vllm-prefill-dp0"]
    assert decode["host"] == "pd_a2_d1" and decode["wave"] == 1 and prefill["wave"] == 2
    assert decode["files"] == {"/etc/llmops/mooncake/mooncake.json": "decode"}
    assert prefill["files"] == {"/etc/llmops/mooncake/mooncake.json": "prefill"}
    assert decode["env"]["A"] == "2" and prefill["env"]["A"] == "1" and decode["env"]["PYTHONHASHSEED"] == "0"
    assert decode["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "2,3"
    assert decode["command"][:3] == ["vllm", "serve", "/m"] and "--served-model-name" in decode["command"]
    assert prefill["ready"] == {"http": "http://192.0.2.41:9081/v1/models"}
    assert specs["vllm-prefill-dp1"]["ready"] == {"log": seeds.HEADLESS_READY_LOG}  # headless: no API to probe
    assert compose.launch_wave_numbers(plan) == [0, 1, 2, 3]


def test_component_parts_keep_the_components_order_and_skip_those_without_the_key():
    outputs = [{"service": {"name": "mooncake_master"}, "planner": {"kv_pool": {}}}, {"service": {"name": "pd_proxy"}},
               {"engine_addon": {"env": {}}}]
    assert compose.component_parts(outputs, "service") == [{"name": "mooncake_master"}, {"name": "pd_proxy"}]
    assert compose.component_parts(outputs, "created_dirs") == [] and compose.component_parts([], "service") == []


def test_cluster_specs_put_the_pool_before_the_engines_and_the_proxy_after():
    engines = [{"name": "decode", "host": "d0", "wave": 1}, {"name": "prefill", "host": "p0", "wave": 2},
               {"name": "decode-2", "host": "d0", "wave": 1}]
    services = [{"name": "proxy", "host": "p0", "wave": 3}, {"name": "master", "host": "p0", "wave": 0}]
    assert [s["name"] for s in compose.cluster_specs(services, engines)] == ["master", "decode", "prefill", "decode-2", "proxy"]
    together = [{"name": "prefill", "host": "p0", "wave": 0}, {"name": "decode", "host": "d0", "wave": 0}]  # 004 5.3: P and D start together
    assert [s["name"] for s in compose.cluster_specs([{"name": "proxy", "host": "p0", "wave": 1}], together)] == ["prefill", "decode", "proxy"]


def test_a_driver_profile_gets_the_npus_of_its_hardware_first_and_keeps_listed_ones_once():
    a3 = compose.driver_container({"hardware": "a3", "devices": ["/dev/davinci_manager"], "volumes": ["/a:/a"], "shm_size": "100g"},
                                  {"shm_size": "64g", "devices": ["ignored"]}, ["/dev/extra"], ["/b:/b"])
    assert a3["devices"] == ["/dev/davinci%d" % n for n in range(16)] + ["/dev/davinci_manager", "/dev/extra"]
    assert a3["volumes"] == ["/a:/a", "/b:/b"] and a3["shm_size"] == "64g"  # overrides change settings, not the devices
    # a profile that lists NPUs of its own (fewer, or an older version's full list) keeps exactly those
    own = compose.driver_container({"hardware": "a2", "devices": ["/dev/davinci0", "/dev/davinci1", "/dev/hisi_hdc"]})
    assert own["devices"] == ["/dev/davinci0", "/dev/davinci1", "/dev/hisi_hdc"]
    assert compose.driver_container({"hardware": "h100", "devices": [], "gpus": True})["devices"] == []
    assert compose.driver_container({"hardware": "cpu", "devices": []})["devices"] == []


COMPONENTS = ["ucm_cache", "mooncake_master", "memcache_pool", "pd_proxy", "host_firewall"]


def test_the_composition_includes_only_the_components_the_cluster_has():
    pd = {"prefill": {"dp_size": 2}, "decode": {"dp_size": 8}}
    # the seeds' shapes: UCM on one node, a PD cluster, a PD cluster with each pool backend
    assert compose.cluster_components(COMPONENTS, connector="ucm", groups={"colocated": {}}) == ["ucm_cache"]
    assert compose.cluster_components(COMPONENTS, connector="mooncake", groups=pd) == ["pd_proxy"]
    assert compose.cluster_components(COMPONENTS, connector="mooncake", kv_pool="mooncake", groups=pd) == ["mooncake_master", "pd_proxy"]
    assert compose.cluster_components(COMPONENTS, connector="mooncake", kv_pool="memcache", groups=pd, firewall=True) == [
        "memcache_pool", "pd_proxy", "host_firewall"]
    # nothing set: a single DP group, no component; the order is the input's
    assert compose.cluster_components(COMPONENTS) == []
    assert compose.cluster_components(["host_firewall", "pd_proxy"], groups=pd, firewall=True) == ["host_firewall", "pd_proxy"]


def test_a_component_without_a_rule_is_refused():
    with pytest.raises(AnsibleFilterError, match=r"no rule for component role.*etcd_cluster"):
        compose.cluster_components(COMPONENTS + ["etcd_cluster"])
