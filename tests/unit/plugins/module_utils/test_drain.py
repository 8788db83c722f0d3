# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stop's drain: which engines it asks, how it reads them, what it tells the operator."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.operations import _drain as drain
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", ".."))
import argv_meta  # noqa: E402  pylint: disable=wrong-import-position  # meta as the plan gives it, read from argv
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-order


def spec(**fields):
    """A hand-made spec with the meta the plan would give it."""
    return argv_meta.with_meta(launch.new_spec(**fields))


ENGINE = {"image": "img", "model": "/m", "container_name": "vllm", "driver": {"devices": [], "volumes": []},
          "headless_ready_log": seeds.HEADLESS_READY_LOG}


def test_only_the_api_engines_of_the_wave_are_asked_on_every_host():
    specs = launch.engine_specs(plan_cluster(seeds.pd_a2()), ENGINE)  # engine_specs alone: every engine in wave 0
    proxy = spec(name="pd-proxy", host="pd_a2_p0", image="i", command=["python", "proxy.py"], wave=1,
                 ready={"http": "http://192.0.2.41:8081/healthcheck"})
    targets = drain.drain_targets(specs + [proxy], 0)
    assert len(targets) == 9 and targets["pd_a2_d0/vllm-decode-dp0"] == "http://192.0.2.43:9900/metrics"
    assert targets["pd_a2_p0/vllm-prefill-dp0"] == "http://192.0.2.41:9081/metrics"  # speaks for headless dp1 on p1
    assert not any(name.startswith("pd_a2_p1/") for name in targets)
    assert drain.drain_targets(specs + [proxy], 1) == {}  # the proxy drains itself on SIGTERM


def test_requests_in_flight_are_running_plus_waiting_over_every_rank():
    page = "\n".join([
        "# HELP vllm:num_requests_running Number of requests in model execution batches.",
        'vllm:num_requests_running{engine="0",model_name="glm"} 2',
        'vllm:num_requests_running{engine="1",model_name="glm"} 1',
        'vllm:num_requests_waiting{engine="1",model_name="glm"} 3',
        'vllm:prefix_cache_hits_total{engine="0",model_name="glm"} 700'])
    assert drain.in_flight(page) == 6
    assert drain.in_flight('vllm:num_requests_running{engine="0"} 0') == 0
    assert drain.in_flight("other_metric 5") is None  # no gauge: nothing to wait for


def test_the_line_says_what_was_waited_for_or_what_is_aborted():
    assert drain.summary({"h/a": 0, "h/b": None}, {}, 0.0, 60) == "no request in flight"
    assert drain.summary({"h/a": 2, "h/b": 0}, {}, 3.25, 60) == "waited 3.2 s for the requests in flight to finish (h/a 2)"
    line = drain.summary({"h/a": 2}, {"h/a": 1}, 60.1, 60)
    assert line.startswith("stopping after 60 s with requests still in flight, which vLLM aborts: h/a 1.")
    assert "llmops_stop_drain_timeout" in line


def test_an_engine_too_busy_to_answer_is_waited_for_one_not_there_is_not():
    def answering(url, timeout):
        return 200, b'vllm:num_requests_running{engine="0"} 4'

    def failing(error):
        def get(url, timeout):
            raise error
        return get

    url = "http://192.0.2.41:9081/metrics"
    assert drain.reading(answering, url, 5) == 4
    assert drain.reading(failing(TimeoutError("timed out")), url, 5) == drain.NO_ANSWER
    assert drain.reading(failing(ConnectionRefusedError()), url, 5) is None
    assert drain.reading(failing(OSError(113, "No route to host")), url, 5) is None
    assert drain.reading(lambda url, timeout: (404, b""), url, 5) is None
    readings = {"h/a": drain.NO_ANSWER, "h/b": 0, "h/c": None}
    assert drain.busy(readings) == {"h/a": drain.NO_ANSWER}
    line = drain.summary({"h/a": drain.NO_ANSWER, "h/b": 3}, readings, 60.0, 60)
    assert "h/a (no answer)" in line and line.startswith("stopping after 60 s")
