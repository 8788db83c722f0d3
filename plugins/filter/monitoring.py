# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that turn a cluster's launch specs into Prometheus configuration and a Grafana dashboard (monitoring.yml)."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.services import _dashboard as dashboard
from ansible_collections.llmops.inference.plugins.module_utils.services import _monitoring as monitoring


def prometheus_targets(specs, cluster):
    """Prometheus file_sd target groups: every /metrics endpoint of the plan, labelled."""
    return monitoring.scrape_targets(specs, cluster)


def grafana_dashboard(specs, cluster):
    """A Grafana dashboard (JSON model) of the cluster, per role and instance."""
    return dashboard.dashboard(specs, cluster)


def prometheus_rules(specs, cluster, down_for=monitoring.DOWN_FOR):
    """A Prometheus rule file of the cluster's alerts."""
    return monitoring.alert_rules(specs, cluster, down_for)


class FilterModule:
    def filters(self):
        return {"prometheus_targets": prometheus_targets, "prometheus_rules": prometheus_rules, "grafana_dashboard": grafana_dashboard}
