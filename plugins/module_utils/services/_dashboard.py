# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Grafana dashboard of a cluster, from its launch specs: what an operator of a PD cluster looks at,
per role and per instance (the labels monitoring's targets carry): requests running and waiting, time to first
token and time per output token (p50, p99), KV cache use, prefix and external (connector) hit rates, the pool
service's counters, the front door's members (serving, out, retries, ejections, answers by outcome), and which
targets are up.

Every panel's PromQL reads series real vLLM exposes (vLLM 0.32's names, vllm/v1/metrics/loggers.py; the
simulator's are checked against it) with the labels of monitoring's targets, so it works on the Prometheus that
scrapes monitoring.yml's targets. The JSON is Grafana's dashboard model (schemaVersion 39), with a Prometheus data
source chosen at import (${DS_PROMETHEUS}).
"""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

BY = "llmops_role, llmops_instance"
WINDOW = "5m"
# the engine series the panels read, beside monitoring's ENGINE_SERIES (histograms by their _bucket series)
PANEL_SERIES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
                "vllm:time_to_first_token_seconds_bucket", "vllm:request_time_per_output_token_seconds_bucket",
                "vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total",
                "vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total")


def _quantiles(histogram: str, selector: str, unit_label: str) -> list[tuple[str, str]]:
    return [("%s p%d" % (unit_label, int(q * 100)),
             "histogram_quantile(%s, sum by (le, %s) (rate(%s_bucket{%s}[%s])))" % (q, BY, histogram, selector, WINDOW))
            for q in (0.5, 0.99)]


def _ratio(hits: str, queries: str, selector: str) -> str:
    return ("sum by (%s) (rate(%s{%s}[%s])) / sum by (%s) (rate(%s{%s}[%s]))"
            % (BY, hits, selector, WINDOW, BY, queries, selector, WINDOW))


def panels(specs: list[LaunchSpec], cluster: str) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """[(title, unit, [(legend suffix, expr)])] of the cluster's dashboard; the pool panels only with a pool."""
    engines = 'llmops_cluster="%s",llmops_role!="service"' % cluster
    found = [
        ("Requests running", "short", [("running", "sum by (%s) (vllm:num_requests_running{%s})" % (BY, engines))]),
        ("Requests waiting", "short", [("waiting", "sum by (%s) (vllm:num_requests_waiting{%s})" % (BY, engines))]),
        ("Time to first token", "s", _quantiles("vllm:time_to_first_token_seconds", engines, "TTFT")),
        ("Time per output token", "s", _quantiles("vllm:request_time_per_output_token_seconds", engines, "TPOT")),
        ("KV cache usage", "percentunit", [("used", "max by (%s) (vllm:kv_cache_usage_perc{%s})" % (BY, engines))]),
        ("Prefix cache hit rate", "percentunit",
         [("local", _ratio("vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", engines))]),
        ("External (KV connector) hit rate", "percentunit",
         [("connector", _ratio("vllm:external_prefix_cache_hits_total", "vllm:external_prefix_cache_queries_total", engines))]),
    ]
    services = 'llmops_cluster="%s",llmops_role="service"' % cluster
    if any(spec_meta.pool_backend(spec) == "mooncake" for spec in specs):
        # mooncake_master's own series (its master_metric_manager): keys held, puts and lookups per second
        found.append(("Mooncake pool", "short", [
            ("keys", "sum by (llmops_container, llmops_host) (master_key_count{%s})" % services),
            ("puts/s", "sum by (llmops_container, llmops_host) (rate(master_put_start_requests_total{%s}[%s]))" % (services, WINDOW)),
            ("lookups/s", "sum by (llmops_container, llmops_host) (rate(master_exist_key_requests_total{%s}[%s]))" % (services, WINDOW))]))
    if any(spec_meta.kind(spec) == "proxy" and spec_meta.metrics_url(spec) for spec in specs):
        # the front door's view of its members (roles/pd_proxy/files/front_door_health.py)
        door = 'llmops_cluster="%s"' % cluster
        found.append(("Front door: members serving", "short", [
            ("{{role}} serving", "sum by (role) (llmops_front_door_serving_members{%s})" % door),
            ("{{role}} out", 'sum by (role) (llmops_front_door_member_state{%s,state!="serving"})' % door)]))
        found.append(("Front door: retries, ejections and answers", "short", [
            ("{{role}} retries/s", "sum by (role) (rate(llmops_front_door_retries_total{%s}[%s]))" % (door, WINDOW)),
            ("{{role}} ejections/s", "sum by (role) (rate(llmops_front_door_member_ejections_total{%s}[%s]))" % (door, WINDOW)),
            ("{{outcome}}/s", "sum by (outcome) (rate(llmops_front_door_requests_total{%s}[%s]))" % (door, WINDOW))]))
    found.append(("Targets up", "short", [("up", 'up{llmops_cluster="%s"}' % cluster)]))
    return found


def legend_format(title: str, legend: str) -> str:
    """A series' legend: a legend naming its labels as is (the front door's), a service's by its host and container,
    an engine's by its role and instance."""
    if "{{" in legend:
        return legend
    if title in ("Targets up", "Mooncake pool"):
        return "{{llmops_host}} {{llmops_container}} %s" % legend
    return "{{llmops_role}} {{llmops_instance}} %s" % legend


def dashboard(specs: list[LaunchSpec], cluster: str) -> dict[str, t.Any]:
    """The Grafana dashboard JSON (a dict) of the cluster."""
    items = []
    for index, (title, unit, targets) in enumerate(panels(specs, cluster)):
        items.append({
            "id": index + 1, "type": "timeseries", "title": title,
            "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
            "gridPos": {"h": 8, "w": 12, "x": 12 * (index % 2), "y": 8 * (index // 2)},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"refId": chr(ord("A") + number), "expr": expr, "legendFormat": legend_format(title, legend)}
                        for number, (legend, expr) in enumerate(targets)],
        })
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource", "pluginId": "prometheus"}],
        "title": "llmops %s" % cluster, "uid": ("llmops-%s" % cluster)[:40], "tags": ["llmops", cluster],
        "schemaVersion": 39, "time": {"from": "now-1h", "to": "now"}, "refresh": "30s", "panels": items,
    }


def expressions(board: dict[str, t.Any]) -> list[tuple[str, str]]:
    """Every PromQL expression of a dashboard, with its panel's title."""
    return [(panel["title"], target["expr"]) for panel in board["panels"] for target in panel["targets"]]
