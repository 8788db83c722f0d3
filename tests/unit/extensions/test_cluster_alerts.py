# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rulebook's event source: Alertmanager's webhook in, one event per alert of a cluster out; heal.yml's metrics."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import pathlib
import socket
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[3]
SPEC = importlib.util.spec_from_file_location("cluster_alerts", ROOT / "extensions/eda/plugins/event_source/cluster_alerts.py")
cluster_alerts = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(cluster_alerts)

# Alertmanager's webhook payload (version 4), as it sends the collection's alerts
PAYLOAD = {"version": "4", "status": "firing", "receiver": "heal", "alerts": [
    {"status": "firing", "fingerprint": "a1", "startsAt": "2026-12-07T08:00:00Z",
     "labels": {"alertname": "LlmopsMetricsDown", "llmops_cluster": "pd_a2", "llmops_host": "pd_a2_d0",
                "llmops_container": "vllm-ascend-decode-dp2", "llmops_role": "decode", "llmops_instance": "decode"}},
    {"status": "resolved", "fingerprint": "b2", "startsAt": "2026-12-07T07:00:00Z",
     "labels": {"alertname": "LlmopsFrontDoorMemberOut", "llmops_cluster": "pd_a2", "llmops_host": "pd_a2_p0",
                "llmops_container": "pd-proxy", "llmops_role": "service", "role": "decode", "member": "10.0.0.3:9902"}},
    {"status": "firing", "labels": {"alertname": "Watchdog"}},  # no cluster: not ours
]}


def test_each_alert_of_a_cluster_becomes_an_event_with_its_labels():
    found = cluster_alerts.events(PAYLOAD)
    assert [event["llmops"] for event in found] == [
        {"alert": "LlmopsMetricsDown", "status": "firing", "cluster": "pd_a2", "host": "pd_a2_d0",
         "container": "vllm-ascend-decode-dp2", "role": "decode", "instance": "decode", "fingerprint": "a1",
         "starts_at": "2026-12-07T08:00:00Z"},
        {"alert": "LlmopsFrontDoorMemberOut", "status": "resolved", "cluster": "pd_a2", "host": "pd_a2_p0",
         "container": "pd-proxy", "role": "decode", "member": "10.0.0.3:9902", "fingerprint": "b2",
         "starts_at": "2026-12-07T07:00:00Z"}]
    assert found[0]["alert"] is PAYLOAD["alerts"][0]
    assert cluster_alerts.events(PAYLOAD, clusters=["other"]) == []


def test_the_webhook_queues_events_and_metrics_serve_the_records(tmp_path):
    (tmp_path / "pd_a2.prom").write_text('llmops_heal_gave_up{llmops_cluster="pd_a2",group="decode"} 1\n')
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario():
        queue = asyncio.Queue()
        server = asyncio.ensure_future(cluster_alerts.main(queue, {"port": port, "state_dir": str(tmp_path)}))
        loop = asyncio.get_running_loop()

        def ask(path, body=None):
            request = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=body)
            with urllib.request.urlopen(request, timeout=5) as answer:
                return answer.status, answer.read().decode()
        for _attempt in range(50):
            try:
                await loop.run_in_executor(None, ask, "/health")
                break
            except OSError:
                await asyncio.sleep(0.1)
        posted = await loop.run_in_executor(None, ask, "/alerts", json.dumps(PAYLOAD).encode())
        metrics = await loop.run_in_executor(None, ask, "/metrics")
        events = [queue.get_nowait() for _event in range(queue.qsize())]
        server.cancel()
        return posted, metrics, events

    posted, metrics, events = asyncio.run(scenario())
    assert posted[0] == 202 and [e["llmops"]["alert"] for e in events] == ["LlmopsMetricsDown", "LlmopsFrontDoorMemberOut"]
    assert metrics == (200, 'llmops_heal_gave_up{llmops_cluster="pd_a2",group="decode"} 1\n')
