# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""monitoring.yml on the lab inventory (no host contacted): its targets, and its rules checked and
fired by Debian's promtool against series shaped as the targets label them. The real scrape of a
running cluster is in test_pool_recovery.py."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from conftest import LAB, NO_CONNECT, ROOT, run_playbook


@pytest.fixture(scope="module")
def promtool():
    subprocess.run(["bash", str(ROOT / "tests" / "harness" / "prometheus.sh")], check=True, capture_output=True,
                   timeout=900)
    return "promtool"


def monitoring(cluster, directory):
    result = run_playbook("monitoring.yml", LAB, "-i", str(NO_CONNECT), "-e", "llmops_cluster=%s" % cluster,
                          "-e", "llmops_monitoring_dir=%s" % directory)
    assert "TRIPWIRE" not in result.output
    targets = json.loads((directory / ("%s-targets.json" % cluster)).read_text())
    return targets, directory / ("%s-rules.yml" % cluster)


def series(name, target, values, **extra):
    labels = dict(target["labels"], job="llmops", instance=target["targets"][0], **extra)
    return {"series": "%s{%s}" % (name, ",".join('%s="%s"' % item for item in sorted(labels.items()))), "values": values}


def alerts(name, at, *expected):
    return {"eval_time": at, "alertname": name, "exp_alerts": list(expected)}


def test_targets_are_every_api_engine_and_the_pool_master(tmp_path):
    targets, _rules = monitoring("pd_pool_a2", tmp_path)
    roles = sorted(group["labels"]["llmops_role"] for group in targets)
    assert roles == ["decode"] * 8 + ["prefill"] * 1 + ["service"] * 2  # prefill dp1 is headless: dp0's /metrics counts it
    services = {group["labels"]["llmops_container"]: group["targets"][0] for group in targets
                if group["labels"]["llmops_role"] == "service"}
    assert services["mooncake-master"].endswith(":9003") and services["pd-proxy"].endswith(":8081")  # the front door's
    assert all(group["targets"][0].startswith("192.0.2.") for group in targets)


def test_each_engine_target_names_its_instance(tmp_path):
    targets, _rules = monitoring("pd_2p2d_a3", tmp_path)
    instances = sorted({group["labels"]["llmops_instance"] for group in targets if group["labels"]["llmops_role"] != "service"})
    assert instances == ["decode", "decode-b", "prefill", "prefill-b"]
    assert sum(group["labels"].get("llmops_instance") == "decode-b" for group in targets) == 8  # every rank of it has its API


def test_promtool_accepts_the_rules_and_they_fire_as_documented(tmp_path, promtool):
    targets, rules = monitoring("pd_pool_a2", tmp_path)
    checked = subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    decode = next(group for group in targets if group["labels"]["llmops_role"] == "decode")
    prefill = next(group for group in targets if group["labels"]["llmops_role"] == "prefill")
    where = {key: decode["labels"][key] for key in ("llmops_cluster", "llmops_host", "llmops_container", "llmops_role", "llmops_instance")}
    # promtool compares annotations whole: each expected alert gives its summary as rendered (labels, value)
    # and the rule's fixed description
    described = {rule["alert"]: rule["annotations"]["description"] for rule in yaml.safe_load(rules.read_text())["groups"][0]["rules"]}

    def fired(name, labels, summary):
        return {"exp_labels": labels, "exp_annotations": {"summary": summary, "description": described[name]}}

    test = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [
            series("up", decode, "1 0x5"),
            series("up", prefill, "1x6"),
            series("vllm:num_requests_waiting", prefill, "3x12", engine="0", model_name="glm"),
            series("vllm:num_requests_waiting", decode, "0x12", engine="0", model_name="glm"),
            series("vllm:kv_cache_usage_perc", decode, "0.97x12", engine="0", model_name="glm"),
        ],
        "alert_rule_test": [
            alerts("LlmopsMetricsDown", "1m"),
            alerts("LlmopsMetricsDown", "3m", {
                "exp_labels": dict(decode["labels"], severity="critical", job="llmops", instance=decode["targets"][0]),
                "exp_annotations": {
                    "summary": "%s/%s of cluster pd_pool_a2: /metrics does not answer" % (where["llmops_host"],
                                                                                          where["llmops_container"]),
                    "description": "status.yml -e llmops_cluster=pd_pool_a2 shows the container's state; logs.yml -e "
                                   "llmops_cluster=pd_pool_a2 collects its log; the cluster's playbook restarts it "
                                   "and its DP group."}}),
            alerts("LlmopsRequestsQueued", "4m"),
            alerts("LlmopsRequestsQueued", "6m", fired(
                "LlmopsRequestsQueued", dict(prefill["labels"], severity="warning"),
                "pd_pool_a2_p0/vllm-ascend-prefill-dp0 of cluster pd_pool_a2: 3 requests waiting for 5m")),
            alerts("LlmopsKvCacheFull", "6m", fired(
                "LlmopsKvCacheFull", dict(where, severity="warning"),
                "%s/%s of cluster pd_pool_a2: KV cache 97%% full" % (where["llmops_host"], where["llmops_container"]))),
            alerts("LlmopsPrefillBottleneck", "5m"),
            alerts("LlmopsPrefillBottleneck", "11m", fired(
                "LlmopsPrefillBottleneck", {"severity": "warning"},
                "cluster pd_pool_a2: requests wait on prefill while decode has none waiting")),
            alerts("LlmopsDecodeBottleneck", "11m"),
        ],
    }]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    fired = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert fired.returncode == 0, fired.stdout + fired.stderr


def test_the_dashboards_queries_are_valid_promql(tmp_path, promtool):
    """Each panel's query of the dashboard monitoring.yml writes, as a recording rule that promtool checks; that each
    returns data from a Prometheus scraping a running cluster is test_pool_recovery's."""
    monitoring("pd_pool_a2", tmp_path)
    board = json.loads((tmp_path / "pd_pool_a2-dashboard.json").read_text())
    exprs = [target["expr"] for panel in board["panels"] for target in panel["targets"]]
    assert [panel["title"] for panel in board["panels"]][-4:] == [
        "Mooncake pool", "Front door: members serving", "Front door: retries, ejections and answers", "Targets up"]
    rules = {"groups": [{"name": "panels", "rules": [{"record": "llmops:panel_%d" % i, "expr": e} for i, e in enumerate(exprs)]}]}
    (tmp_path / "panels.yml").write_text(yaml.safe_dump(rules))
    checked = subprocess.run([promtool, "check", "rules", str(tmp_path / "panels.yml")], capture_output=True, text=True, check=False)
    assert checked.returncode == 0 and "SUCCESS: %d rules found" % len(exprs) in checked.stdout, checked.stdout + checked.stderr


def test_the_front_doors_member_alerts_fire_on_its_own_metrics(tmp_path, promtool):
    """A member out of rotation alerts with its engine's instance when Prometheus scrapes that engine (healing counts
    both alerts of a death against one DP group), and without it when nothing scrapes the engine."""
    targets, rules = monitoring("pd_a2", tmp_path)
    door = next(group for group in targets if group["labels"]["llmops_container"] == "pd-proxy")
    member = {"role": "decode", "member": "192.0.2.43:9900"}
    engine = next(group for group in targets if group["labels"].get("instance", group["targets"][0]) == member["member"])
    described = {rule["alert"]: rule["annotations"]["description"] for rule in yaml.safe_load(rules.read_text())["groups"][0]["rules"]}
    labels = dict(door["labels"], job="llmops", instance=door["targets"][0])

    def fired(name, severity, summary, **extra):
        return {"exp_labels": dict(labels, severity=severity, **extra),
                "exp_annotations": {"summary": summary, "description": described[name]}}

    door_series = [series("llmops_front_door_member_state", door, "0 1x6", state="ejected", **member),
                   series("llmops_front_door_member_state", door, "1 0x6", state="serving", **member),
                   series("llmops_front_door_serving_members", door, "1 0x6", role="decode")]
    ejected = "cluster pd_a2: decode member 192.0.2.43:9900 is ejected at the front door"
    test = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [
        {"interval": "1m",  # the decode member is ejected from 1m on, and with it the last decode member serving
         "input_series": door_series,
         "alert_rule_test": [
             alerts("LlmopsFrontDoorMemberOut", "1m"),
             alerts("LlmopsFrontDoorMemberOut", "3m", fired("LlmopsFrontDoorMemberOut", "warning", ejected, state="ejected", **member)),
             alerts("LlmopsFrontDoorRoleDown", "2m", fired(
                 "LlmopsFrontDoorRoleDown", "critical", "cluster pd_a2: no decode member is serving", role="decode")),
         ]},
        {"interval": "1m",  # the same, its engine scraped (and down)
         "input_series": door_series + [series("up", engine, "1 0x6")],
         "alert_rule_test": [
             alerts("LlmopsFrontDoorMemberOut", "3m", fired("LlmopsFrontDoorMemberOut", "warning", ejected, state="ejected",
                                                            llmops_instance=engine["labels"]["llmops_instance"], **member)),
         ]},
    ]}
    assert engine["labels"]["llmops_instance"] == "decode"
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    checked = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_alert_of_a_group_healing_gave_up_on_fires_from_the_rulebooks_metrics(tmp_path, promtool):
    """heal.yml's record as the rulebook's event source serves it (its own scrape job, no target labels)."""
    _targets, rules = monitoring("pd_a2", tmp_path)
    described = {rule["alert"]: rule["annotations"]["description"] for rule in yaml.safe_load(rules.read_text())["groups"][0]["rules"]}
    labels = {"job": "llmops-heal", "instance": "192.0.2.9:5001", "llmops_cluster": "pd_a2", "group": "decode"}
    test = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [{
        "interval": "1m",
        "input_series": [{"series": "llmops_heal_gave_up{%s}" % ",".join('%s="%s"' % item for item in sorted(labels.items())),
                          "values": "0 0 1 1"}],
        "alert_rule_test": [
            alerts("LlmopsHealGaveUp", "1m"),
            alerts("LlmopsHealGaveUp", "2m", {"exp_labels": dict(labels, severity="critical"), "exp_annotations": {
                "summary": "cluster pd_a2: healing gave up on decode", "description": described["LlmopsHealGaveUp"]}}),
        ],
    }]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    checked = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_cluster_without_pd_gets_no_balance_alert(tmp_path, promtool):
    targets, rules = monitoring("cpu_dp", tmp_path)
    assert [group["labels"]["llmops_container"] for group in targets] == ["vllm-cpu"]  # DP rank 1 is headless
    names = [rule["alert"] for rule in yaml.safe_load(rules.read_text())["groups"][0]["rules"]]
    assert names == ["LlmopsMetricsDown", "LlmopsRequestsQueued", "LlmopsKvCacheFull", "LlmopsHealGaveUp"]
    assert subprocess.run([promtool, "check", "rules", str(rules)], capture_output=True, check=False).returncode == 0


def test_without_a_directory_it_stops_before_planning(tmp_path):
    result = run_playbook("monitoring.yml", LAB, "-i", str(NO_CONNECT), "-e", "llmops_cluster=pd_a2", check=False)
    assert result.returncode != 0
    assert "llmops_monitoring_dir is not set. Fix: add -e llmops_monitoring_dir=" in result.output
    assert "Describe this node" not in result.output


HA = ROOT / "tests" / "harness" / "inventories" / "pd_pool_a2_ha"


def test_ha_masters_get_the_no_leader_and_no_standby_alerts(tmp_path, promtool):
    """pd_pool_a2 with its masters in HA (the harness overlay, planned without a host): masters and etcd members are
    targets labelled llmops_ha, and the rules fire on Mooncake's ha_standby_state (0: the leader, 3: a standby)."""
    result = run_playbook("monitoring.yml", LAB, "-i", str(HA), "-i", str(NO_CONNECT), "-e", "llmops_cluster=pd_pool_a2",
                          "-e", "llmops_monitoring_dir=%s" % tmp_path)
    assert "TRIPWIRE" not in result.output
    targets = json.loads((tmp_path / "pd_pool_a2-targets.json").read_text())
    ha = sorted((group["labels"]["llmops_ha"], group["targets"][0]) for group in targets if "llmops_ha" in group["labels"])
    assert ha == [("etcd", "192.0.2.61:2379"), ("etcd", "192.0.2.62:2379"), ("etcd", "192.0.2.63:2379"),
                  ("mooncake_master", "192.0.2.61:9003"), ("mooncake_master", "192.0.2.62:9003")]
    rules = tmp_path / "pd_pool_a2-rules.yml"
    described = {rule["alert"]: rule["annotations"] for rule in yaml.safe_load(rules.read_text())["groups"][0]["rules"]}
    p0, p1 = [group for group in targets if group["labels"].get("llmops_ha") == "mooncake_master"]

    def fired(name, severity):
        return {"exp_labels": {"severity": severity}, "exp_annotations": described[name]}

    test = {"rule_files": [rules.name], "evaluation_interval": "1m", "tests": [
        {"interval": "1m",  # the standby dies at 2m (a failed scrape marks its series stale): no standby from then on, the leader keeps leading
         "input_series": [series("ha_standby_state", p0, "0x8"), series("ha_standby_state", p1, "3 3 stale")],
         "alert_rule_test": [alerts("LlmopsPoolNoStandby", "2m"), alerts("LlmopsPoolNoStandby", "4m", fired("LlmopsPoolNoStandby", "warning")),
                             alerts("LlmopsPoolNoLeader", "6m")]},
        {"interval": "1m",  # the leader dies at 3m and the standby stays one: no leader
         "input_series": [series("ha_standby_state", p0, "0 0 0 stale"), series("ha_standby_state", p1, "3x8")],
         "alert_rule_test": [alerts("LlmopsPoolNoLeader", "3m"), alerts("LlmopsPoolNoLeader", "5m", fired("LlmopsPoolNoLeader", "critical")),
                             alerts("LlmopsPoolNoStandby", "6m")]},
    ]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    checked = subprocess.run([promtool, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
