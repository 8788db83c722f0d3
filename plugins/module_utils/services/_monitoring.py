# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus for a cluster, from its launch specs: where its /metrics are (file_sd target groups) and
the alerts an operator of a DP or PD cluster wants (an endpoint down, requests queuing, one side of a
PD pair the bottleneck, the KV cache full, and with Mooncake masters in HA no leader or no standby).

Every API engine serves vLLM's /metrics, which counts the requests of every DP rank behind it (one
series per `engine` label), so headless ranks need no target of their own. The KV pool services are
scraped where their readiness probe already reads /metrics (mooncake_master). The PD proxy's front door,
with failover on, has a /metrics of its own: each member's state as it sees it, which its alerts read (a
member out of rotation, a role with no serving member).
"""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.services import _metrics_relay as metrics_relay

# How long a condition must hold before its alert fires.
DOWN_FOR = "1m"
QUEUED_FOR = "5m"
IMBALANCE_FOR = "10m"
KV_CACHE_FULL = 0.95  # vllm:kv_cache_usage_perc, a fraction
# The labels scrape_targets gives each target, by which the rules group what they report.
TARGET_LABELS = "llmops_cluster, llmops_host, llmops_container, llmops_role, llmops_instance"
# The engine series the rules read (vLLM 0.32's names; the simulator's are checked against it).
ENGINE_SERIES = ("vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")


def scrape_targets(specs: list[LaunchSpec], cluster: str) -> list[dict[str, t.Any]]:
    """Prometheus file_sd target groups, one per /metrics endpoint, labelled with the cluster, inventory
    host, container and role (prefill, decode, colocated, service), and an engine's instance (its DP group by
    name: the role for the role's first instance, else <role>-<instance>). Through the metrics relay when the cluster
    has one (its address, the endpoint's path on it as __metrics_path__, the endpoint as instance)."""
    groups = []
    relay = metrics_relay.relay_of(specs)
    for spec in sorted(specs, key=lambda s: (s["host"], s["name"])):
        if spec_meta.metrics_url(spec):
            target, how = metrics_relay.scrape_target(spec, relay)
            labels = {"llmops_cluster": cluster, "llmops_host": spec["host"], "llmops_container": spec["name"],
                      "llmops_role": spec_meta.role(spec)}
            if instance := spec_meta.instance(spec):
                labels["llmops_instance"] = instance
            if ha := spec_meta.ha(spec):  # a service in HA: the pool's masters and etcd members, which the HA rules read
                labels["llmops_ha"] = ha["service"]
            groups.append({"targets": [target], "labels": dict(labels, **how)})
    return groups


def alert(name: str, expr: str, duration: str, severity: str, summary: str, description: str) -> dict[str, t.Any]:
    return {"alert": name, "expr": expr, "for": duration, "labels": {"severity": severity},
            "annotations": {"summary": summary, "description": description}}


def alert_rules(specs: list[LaunchSpec], cluster: str, down_for: str = DOWN_FOR) -> dict[str, t.Any]:
    """A Prometheus rule file ({"groups": [...]}) for the cluster; the PD balance alerts only when it has
    both prefill and decode engines. ``down_for``: how long something is down before its alert fires (the alerts
    healing acts on; llmops_monitoring_down_for)."""
    selector = 'llmops_cluster="%s"' % cluster
    where = "{{ $labels.llmops_host }}/{{ $labels.llmops_container }}"
    verbs = "-e llmops_cluster=%s" % cluster
    rules = [
        alert("LlmopsMetricsDown", "up{%s} == 0" % selector, down_for, "critical",
              "%s of cluster %s: /metrics does not answer" % (where, cluster),
              "status.yml %s shows the container's state; logs.yml %s collects its log; the cluster's playbook "
              "restarts it and its DP group." % (verbs, verbs)),
        alert("LlmopsRequestsQueued",
              "sum by (%s) (vllm:num_requests_waiting{%s}) > 0" % (TARGET_LABELS, selector), QUEUED_FOR, "warning",
              "%s of cluster %s: {{ $value }} requests waiting for %s" % (where, cluster, QUEUED_FOR),
              "Its DP ranks take no more requests: more load than they can serve, or a rank of the group is stuck."),
        alert("LlmopsKvCacheFull", "max by (%s) (vllm:kv_cache_usage_perc{%s}) > %s" % (TARGET_LABELS, selector, KV_CACHE_FULL),
              QUEUED_FOR, "warning",
              "%s of cluster %s: KV cache {{ $value | humanizePercentage }} full" % (where, cluster),
              "Requests are preempted and recomputed; a larger --gpu-memory-utilization, fewer --max-num-seqs or "
              "more DP ranks help."),
    ]
    rules.append(heal_gave_up_rule(selector, cluster, verbs))
    roles = {spec_meta.role(spec) for spec in specs if spec_meta.is_engine(spec)}
    if {"prefill", "decode"} <= roles:
        for busy, idle in (("prefill", "decode"), ("decode", "prefill")):
            rules.append(alert(
                "Llmops%sBottleneck" % busy.capitalize(),
                'sum(vllm:num_requests_waiting{%s,llmops_role="%s"}) > 0 and on() '
                'sum(vllm:num_requests_waiting{%s,llmops_role="%s"}) == 0' % (selector, busy, selector, idle),
                IMBALANCE_FOR, "warning",
                "cluster %s: requests wait on %s while %s has none waiting" % (cluster, busy, idle),
                "The %s side limits the cluster: more %s DP ranks (or fewer %s ones) would balance it." % (busy, busy, idle)))
    if any((spec_meta.ha(spec) or {}).get("service") == "mooncake_master" for spec in specs):
        rules += ha_rules(selector, cluster, verbs, down_for)
    if any(spec_meta.kind(spec) == "proxy" and spec_meta.metrics_url(spec) for spec in specs):
        rules += front_door_rules(selector, cluster, verbs, down_for)
    return {"groups": [{"name": "llmops-%s" % cluster, "rules": rules}]}


def heal_gave_up_rule(selector: str, cluster: str, verbs: str) -> dict[str, t.Any]:
    """heal.yml's record, as the rulebook's event source serves it (operations/_heal.py): a group it gave up on."""
    return alert("LlmopsHealGaveUp", "llmops_heal_gave_up{%s} == 1" % selector, "0s", "critical",
                 "cluster %s: healing gave up on {{ $labels.group }}" % cluster,
                 "heal.yml restarted it llmops_heal_attempts times within llmops_heal_window and it died again; it is left "
                 "for a person. logs.yml %s collects its logs; once its cause is fixed, the cluster's playbook restarts it, "
                 "and removing the group from gave_up in <llmops_heal_state_dir>/%s.json lets healing act on it again."
                 % (verbs, cluster))


def front_door_rules(selector: str, cluster: str, verbs: str, down_for: str = DOWN_FOR) -> list[dict[str, t.Any]]:
    """The front door's view of its members (roles/pd_proxy/files/front_door_health.py): a member out of rotation
    (ejected, or on probation while its pair probes fail), and a role with none serving (clients get 503)."""
    out = 'llmops_front_door_member_state{%s,state!="serving"} == 1' % selector
    # The member's instance, from its engine's scrape target (its API endpoint is the target's instance label), so
    # healing bounds a member's alerts and its engine's /metrics alerts as one DP group; a member no target names
    # (Prometheus does not scrape its engine) alerts without it.
    engines = 'label_replace(up{%s,llmops_instance!=""}, "member", "$1", "instance", "(.+)")' % selector
    with_instance = "(%s) * on(member) group_left(llmops_instance) (0 * %s + 1) or on(member, role, state) (%s)" % (
        out, engines, out)
    return [
        alert("LlmopsFrontDoorMemberOut", with_instance, down_for,
              "warning", "cluster %s: {{ $labels.role }} member {{ $labels.member }} is {{ $labels.state }} at the front "
                         "door" % cluster,
              "It gets no request. The front door probes it every second and serves it again once its /health answers "
              "and a prefill-to-decode probe through it passes. status.yml %s shows its container; the cluster's "
              "playbook restarts a dead DP group." % verbs),
        alert("LlmopsFrontDoorRoleDown", "llmops_front_door_serving_members{%s} == 0" % selector, "30s", "critical",
              "cluster %s: no {{ $labels.role }} member is serving" % cluster,
              "The front door answers every completion with 503 and Retry-After until one serves again. status.yml %s "
              "shows the containers; the cluster's playbook restarts the dead ones." % verbs),
    ]


def ha_rules(selector: str, cluster: str, verbs: str, down_for: str = DOWN_FOR) -> list[dict[str, t.Any]]:
    """Mooncake masters in HA: their ha_standby_state gauge (0 STOPPED: the leader's, whose standby service stopped
    when it was promoted; 3 WATCHING: a standby following it; Mooncake's master_metric_manager)."""
    masters = '%s,llmops_ha="mooncake_master"' % selector
    return [
        alert("LlmopsPoolNoLeader", "absent(ha_standby_state{%s} == 0)" % masters, down_for, "critical",
              "cluster %s: no Mooncake master leads" % cluster,
              "The KV pool takes no put or lookup: engines keep serving without it. status.yml %s shows each master's role; "
              "the cluster's playbook restarts the dead ones." % verbs),
        alert("LlmopsPoolNoStandby", "absent(ha_standby_state{%s} == 3)" % masters, down_for, "warning",
              "cluster %s: no standby Mooncake master is ready" % cluster,
              "A failure of the leader would stop the KV pool. status.yml %s shows each master's role; the cluster's "
              "playbook restarts the dead ones (as standbys; no engine restarts)." % verbs),
    ]
