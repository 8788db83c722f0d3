# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""monitoring.yml's Grafana dashboard: its panels, their PromQL and the series they read."""

from __future__ import annotations

import os
import re
import sys

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.services import _dashboard as dashboard

sys.path.insert(0, os.path.dirname(__file__))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position

ENGINE = {"image": "img:1", "model": "/m", "container_name": "vllm", "args": {"served-model-name": "glm"}, "env": {},
          "driver": {"devices": [], "volumes": []}, "headless_ready_log": seeds.HEADLESS_READY_LOG}
MASTER = launch.new_spec(name="mooncake-master", host="pd_pool_a2_p0", image="i", command=["mooncake_master", "--port", "50088"],
                         wave=0, meta={"kind": "pool_service", "backend": "mooncake", "metrics_url": "http://192.0.2.61:9003/metrics"})


def test_a_pd_cluster_gets_the_engine_panels_by_role_and_instance_and_the_targets_up():
    board = dashboard.dashboard(launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE), "pd_a2")
    titles = [panel["title"] for panel in board["panels"]]
    assert titles == ["Requests running", "Requests waiting", "Time to first token", "Time per output token", "KV cache usage",
                      "Prefix cache hit rate", "External (KV connector) hit rate", "Targets up"]
    ttft = board["panels"][2]["targets"]
    assert [t["expr"] for t in ttft] == [
        'histogram_quantile(%s, sum by (le, llmops_role, llmops_instance) (rate(vllm:time_to_first_token_seconds_bucket'
        '{llmops_cluster="pd_a2",llmops_role!="service"}[5m])))' % q for q in ("0.5", "0.99")]
    assert all('llmops_cluster="pd_a2"' in expr for _title, expr in dashboard.expressions(board))
    assert board["uid"] == "llmops-pd_a2" and board["__inputs"][0]["pluginId"] == "prometheus"


def test_a_mooncake_pool_adds_its_masters_counters():
    specs = [MASTER] + launch.engine_specs(plan_cluster(seeds.pd_pool_a2()), ENGINE)
    pool = next(panel for panel in dashboard.dashboard(specs, "pd_pool_a2")["panels"] if panel["title"] == "Mooncake pool")
    read = [re.findall(r"master_[a-z_]+", t["expr"]) for t in pool["targets"]]
    # the names mooncake_master 0.3.13.post1 serves on /metrics (its master_metric_manager)
    assert read == [["master_key_count"], ["master_put_start_requests_total"], ["master_exist_key_requests_total"]]
    assert all('llmops_role="service"' in t["expr"] for t in pool["targets"])


def test_every_engine_series_a_panel_reads_is_one_the_engine_parity_test_checks():
    board = dashboard.dashboard(launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE), "pd_a2")
    read = {name for _title, expr in dashboard.expressions(board) for name in re.findall(r"vllm:[a-z_]+", expr)}
    assert read == set(dashboard.PANEL_SERIES)


def test_a_front_door_watching_its_members_gets_their_panels():
    specs = launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE)
    door = {"name": "pd-proxy", "host": "pd_a2_p0", "meta": {"kind": "proxy", "metrics_url": "http://192.0.2.41:8081/metrics"}}
    titles = [panel["title"] for panel in dashboard.dashboard(specs + [door], "pd_a2")["panels"]]
    assert titles[-3:] == ["Front door: members serving", "Front door: retries, ejections and answers", "Targets up"]
    assert "Front door: members serving" not in [p["title"] for p in dashboard.dashboard(specs, "pd_a2")["panels"]]
    served = next(panel for panel in dashboard.dashboard(specs + [door], "pd_a2")["panels"] if panel["title"].startswith("Front door: m"))
    assert [t["legendFormat"] for t in served["targets"]] == ["{{role}} serving", "{{role}} out"]
