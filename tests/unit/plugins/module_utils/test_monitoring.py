# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""monitoring.yml's Prometheus targets and rules, from launch specs."""

from __future__ import annotations

import json
import os
import re
import sys

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.services import _metrics_relay as metrics_relay
from ansible_collections.llmops.inference.plugins.module_utils.services import _monitoring as monitoring

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-order


def spec(**fields):
    """A hand-made spec with the meta the plan would give it."""
    return argv_meta.with_meta(launch.new_spec(**fields))


ENGINE = {"image": "img", "model": "/m", "container_name": "vllm", "driver": {"devices": [], "volumes": []},
          "headless_ready_log": seeds.HEADLESS_READY_LOG}
MASTER = spec(name="mooncake-master", host="pd_a2_p0", image="i", command=["mooncake_master"], wave=0,
              ready={"http": "http://192.0.2.41:9003/metrics"})
PROXY = spec(name="pd-proxy", host="pd_a2_p0", image="i", command=["python", "proxy.py"], wave=1,
             ready={"http": "http://192.0.2.41:8081/healthcheck"})


def test_every_api_engine_and_the_pool_master_are_targets_the_proxy_and_headless_ranks_not():
    specs = launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE) + [MASTER, PROXY]
    groups = monitoring.scrape_targets(specs, "pd_a2")
    by_container = {group["labels"]["llmops_container"]: group for group in groups}
    assert len(groups) == 10  # 8 decode ranks with their own API, prefill dp0 (speaks for headless dp1), the master
    assert by_container["vllm-prefill-dp0"] == {
        "targets": ["192.0.2.41:9081"],
        "labels": {"llmops_cluster": "pd_a2", "llmops_host": "pd_a2_p0", "llmops_container": "vllm-prefill-dp0",
                   "llmops_role": "prefill", "llmops_instance": "prefill"}}
    assert by_container["vllm-decode-dp5"]["targets"] == ["192.0.2.44:9901"]
    assert by_container["mooncake-master"]["labels"]["llmops_role"] == "service"
    assert "llmops_instance" not in by_container["mooncake-master"]["labels"]  # an engine's DP group, no service has one
    assert "pd-proxy" not in by_container and "vllm-prefill-dp1" not in by_container


def relayed(specs, port=9410):
    settings = {"name": "metrics-relay", "host": "pd_a2_p0", "address": "192.0.2.41", "image": "img", "bind": "0.0.0.0",
                "port": port, "config_dir": "/etc/llmops/metrics_relay/", "script": "# the relay\n"}
    return specs + [launch.new_spec(**metrics_relay.spec_fields(settings, specs))]


def test_with_a_relay_every_target_is_scraped_through_it_by_its_path():
    specs = relayed(launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE) + [MASTER, PROXY])
    relay = specs[-1]
    routes = json.loads(relay["files"]["/etc/llmops/metrics_relay/routes.json"])
    assert routes["/metrics/pd_a2_p0/mooncake-master"] == "http://192.0.2.41:9003/metrics"
    assert routes["/metrics/pd_a2_d1/vllm-decode-dp5"] == "http://192.0.2.44:9901/metrics" and len(routes) == 10
    assert relay["command"] == ["python3", "/etc/llmops/metrics_relay/metrics_relay.py", "--host", "0.0.0.0", "--port", "9410",
                                "--routes", "/etc/llmops/metrics_relay/routes.json"]
    assert relay["wave"] == max(s["wave"] for s in specs) and relay["ready"] == {"http": "http://192.0.2.41:9410/health"}
    assert relay["meta"]["live"]["files"] == ["/etc/llmops/metrics_relay/routes.json"]  # rewritten in place, no restart
    by_container = {group["labels"]["llmops_container"]: group for group in monitoring.scrape_targets(specs, "pd_a2")}
    assert "metrics-relay" not in by_container and len(by_container) == 10
    assert by_container["vllm-decode-dp5"] == {
        "targets": ["192.0.2.41:9410"],
        "labels": {"llmops_cluster": "pd_a2", "llmops_host": "pd_a2_d1", "llmops_container": "vllm-decode-dp5",
                   "llmops_role": "decode", "llmops_instance": "decode", "__metrics_path__": "/metrics/pd_a2_d1/vllm-decode-dp5",
                   "instance": "192.0.2.44:9901"}}
    assert set(routes) == {group["labels"]["__metrics_path__"] for group in by_container.values()}


def test_pd_clusters_get_the_balance_alerts_others_do_not():
    pd_rules = monitoring.alert_rules(launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE), "pd_a2")
    dp_rules = monitoring.alert_rules(launch.engine_specs(plan_cluster(seeds.dp_a2()), ENGINE), "dp_a2")
    names = [rule["alert"] for rule in pd_rules["groups"][0]["rules"]]
    assert names == ["LlmopsMetricsDown", "LlmopsRequestsQueued", "LlmopsKvCacheFull", "LlmopsHealGaveUp",
                     "LlmopsPrefillBottleneck", "LlmopsDecodeBottleneck"]
    assert [rule["alert"] for rule in dp_rules["groups"][0]["rules"]] == names[:4]
    assert all('llmops_cluster="pd_a2"' in rule["expr"] for rule in pd_rules["groups"][0]["rules"])


def test_the_rules_read_only_the_engine_series_checked_against_real_vllm():
    rules = monitoring.alert_rules(launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE), "pd_a2")["groups"][0]["rules"]
    read = {name for rule in rules for name in re.findall(r"vllm:[a-z_]+", rule["expr"])}
    assert read == set(monitoring.ENGINE_SERIES)  # test_engine_parity shows each on real vLLM's /metrics
