# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Draining engines before they stop: vLLM aborts the requests it holds on SIGTERM (its
--shutdown-timeout defaults to 0), so stop waits until the API engines of a wave hold none.

An API engine's /metrics counts the requests of every DP rank behind it
(vllm:num_requests_running and vllm:num_requests_waiting, one series per engine label), so the
API engines of a wave speak for its headless ranks too.
"""

from __future__ import annotations

import http.client
from collections.abc import Callable

from ansible_collections.llmops.inference.plugins.module_utils._text import parse_metrics
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.plan._spec_meta import is_engine, metrics_url

IN_FLIGHT = ("vllm:num_requests_running", "vllm:num_requests_waiting")
# The reading of an engine that is up but did not answer in time. An engine busy with many requests on
# few cores can be slow to answer /metrics: it counts as busy, so stop waits for it rather than past it.
NO_ANSWER = -1


def drain_targets(specs: list[LaunchSpec], wave: int) -> dict[str, str]:
    """{host/container: metrics URL} of the API engines of a wave, on every host (one already stopped
    does not answer, and holds nothing to wait for)."""
    return {"%s/%s" % (spec["host"], spec["name"]): url for spec in specs
            if spec["wave"] == wave and is_engine(spec) and (url := metrics_url(spec))}


def in_flight(metrics_text: str | None) -> int | None:
    """Requests an engine holds (running + waiting, over all its DP ranks); None when it shows neither gauge."""
    totals = parse_metrics(metrics_text)
    if not any(name in totals for name in IN_FLIGHT):
        return None
    return int(sum(totals.get(name, 0.0) for name in IN_FLIGHT))


def reading(get: Callable[..., tuple[int, bytes]], url: str, timeout: float) -> int | None:
    """Requests an engine holds: a count; None when it is not there (refused, unreachable) or shows no
    gauge, so holds nothing to wait for; NO_ANSWER when its /metrics did not answer within timeout."""
    try:
        status, body = get(url, timeout=timeout)
    except TimeoutError:
        return NO_ANSWER
    except (OSError, http.client.HTTPException):
        return None
    return in_flight(body.decode(errors="replace")) if status == 200 else None


def busy(readings: dict[str, int | None]) -> dict[str, int]:
    """{engine: requests} of the engines still holding requests, or that did not answer (NO_ANSWER)."""
    return {name: count for name, count in readings.items() if count is not None and count != 0}


def held(readings: dict[str, int | None]) -> str:
    """"host/engine count" for each busy engine, "host/engine (no answer)" for one that did not answer."""
    return ", ".join("%s %s" % (name, "(no answer)" if count == NO_ANSWER else count)
                     for name, count in sorted(busy(readings).items()))


def summary(first: dict[str, int | None], left: dict[str, int | None], waited: float, timeout: float) -> str:
    """One line for the operator: what was in flight, and whether it finished before the stop."""
    if not busy(first):
        return "no request in flight"
    if not left:
        return "waited %.1f s for the requests in flight to finish (%s)" % (waited, held(first))
    return ("stopping after %d s with requests still in flight, which vLLM aborts: %s. Raise llmops_stop_drain_timeout "
            "to wait longer" % (timeout, held(left)))
