# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""heal.yml's guards: a bounded number of attempts per group and window, a record of each, and its metrics."""

from __future__ import annotations

import json

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.operations import _heal as heal

DECODE = {"alert": "LlmopsMetricsDown", "status": "firing", "cluster": "pd_a2", "host": "pd_a2_d0",
          "container": "vllm-ascend-decode-dp2", "role": "decode", "instance": "decode"}
MEMBER = {"alert": "LlmopsFrontDoorMemberOut", "status": "firing", "cluster": "pd_a2", "member": "10.0.0.3:9902", "role": "decode"}


def test_a_group_is_healed_up_to_its_bound_within_the_window_then_left_for_a_person():
    record = heal.empty("pd_a2")
    for attempt in range(3):
        decision = heal.decide(record, DECODE, 100.0 + attempt, bound=3, window=600)
        assert decision.act and decision.group == "decode" and "attempt %d of 3" % (attempt + 1) in decision.line
        heal.started(record, decision, DECODE, 100.0 + attempt)
        heal.finished(record, heal.HEALED, 100.5 + attempt)
    refused = heal.decide(record, DECODE, 200.0, bound=3, window=600)
    assert not refused.act and refused.gives_up and "gives up on it and leaves it for a person" in refused.line
    heal.gave_up(record, refused, 200.0)
    assert record["gave_up"] == {"decode": 200.0}
    # once given up, later alerts of the group are refused too, even past the window; another group still heals
    assert not heal.decide(record, DECODE, 5000.0, bound=3, window=600).act
    assert heal.decide(record, MEMBER, 200.0, bound=3, window=600).act
    text = heal.metrics(record)
    assert 'llmops_heal_attempts_total{llmops_cluster="pd_a2",group="decode",result="healed"} 3' in text
    assert 'llmops_heal_gave_up{llmops_cluster="pd_a2",group="decode"} 1' in text


def test_attempts_outside_the_window_or_with_nothing_to_do_do_not_count():
    record = heal.empty("pd_a2")
    for at, result in ((0.0, heal.HEALED), (10.0, heal.IDLE), (20.0, heal.IDLE), (700.0, heal.HEALED)):
        heal.started(record, heal.decide(record, DECODE, at, bound=2, window=600), DECODE, at)
        heal.finished(record, result, at + 1.0)
    assert heal.decide(record, DECODE, 710.0, bound=2, window=600).act  # only the one at 700 s counts


def test_an_attempt_ends_with_its_result_and_one_cut_short_by_a_failed_play_is_failed_by_the_next():
    record = heal.empty("pd_a2")
    heal.started(record, heal.decide(record, MEMBER, 1.0, bound=2, window=600), MEMBER, 1.0)
    again = heal.loaded(heal.as_text(record), "pd_a2")  # the run's end reads the record its start wrote
    heal.finished(again, heal.HEALED, 1.5)
    assert again["attempts"] == [{"at": 1.0, "group": "10.0.0.3:9902", "cause": "LlmopsFrontDoorMemberOut (10.0.0.3:9902)",
                                  "result": "healed", "ended": 1.5}]
    heal.started(again, heal.decide(again, MEMBER, 2.0, bound=2, window=600), MEMBER, 2.0)  # never ends
    assert not heal.decide(again, MEMBER, 3.0, bound=2, window=600).act  # one under way counts against the bound
    other = heal.decide(again, DECODE, 4.0, bound=2, window=600)
    heal.started(again, other, DECODE, 4.0)
    assert [a["result"] for a in again["attempts"]] == ["healed", "failed", "started"]
    assert heal.loaded(None, "pd_a2") == heal.empty("pd_a2") and json.loads(heal.as_text(again))["cluster"] == "pd_a2"


def test_only_a_known_result_ends_an_attempt_and_old_attempts_leave_the_record():
    record = heal.empty("pd_a2")
    heal.started(record, heal.decide(record, DECODE, 0.0, bound=3, window=600), DECODE, 0.0)
    with pytest.raises(ValueError, match="one of healed, failed, nothing to do"):
        heal.finished(record, "fine", 1.0)
    assert heal.pruned(record, 1000.0, keep=500.0)["attempts"] == []


def test_past_the_bound_an_alert_of_a_death_the_last_attempt_saw_is_let_go_and_a_new_death_gives_up():
    """One death fires the rank's alert and the front door's; the second reaches heal.yml after the first healed it."""
    record = heal.empty("pd_a2")
    began = heal.epoch_of("2026-12-07T10:00:00.5Z")
    assert began is not None
    first = heal.decide(record, {**DECODE, "starts_at": "2026-12-07T10:00:00.5Z"}, began + 1, bound=1, window=600)
    heal.started(record, first, DECODE, began + 1)
    heal.finished(record, heal.HEALED, began + 30)
    # fired while the group restarted, in another zone, with Go's nanoseconds
    stale = {**MEMBER, "instance": "decode", "starts_at": "2026-12-07T18:00:10.123456789+08:00"}
    let_go = heal.decide(record, stale, began + 40, bound=1, window=600)
    assert not let_go.act and not let_go.gives_up and "about a death that attempt saw" in let_go.line
    fresh = heal.decide(record, {**DECODE, "starts_at": "2026-12-07T10:01:00Z"}, began + 70, bound=1, window=600)
    assert not fresh.act and fresh.gives_up
    # an alert whose start is unknown is taken as new
    assert heal.decide(record, DECODE, began + 70, bound=1, window=600).gives_up
    assert heal.epoch_of("yesterday") is None and heal.epoch_of("2026-12-07T10:00:00Z") == began - 0.5
