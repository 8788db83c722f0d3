# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's member table (roles/pd_proxy/files/front_door_health.py): ejection, probation, pair proofs,
the balance and what it shows."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "roles" / "pd_proxy" / "files"))
import front_door_health as health  # noqa: E402  pylint: disable=wrong-import-position,import-error

LISTED = {"prefill": ["10.0.0.1:9000", "10.0.0.2:9000"], "decode": ["10.0.0.3:9900", "10.0.0.3:9901"]}


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def table(clock=None):
    members = health.Members(clock=clock or Clock())
    members.sync(LISTED, at_start=True)
    return members


def states(members):
    return {m.key: m.state for role in health.ROLES for m in members.of(role)}


def test_members_listed_at_start_serve_and_later_ones_wait_for_a_pair_probe():
    members = table()
    assert set(states(members).values()) == {health.SERVING} and not members.stale
    members.sync(dict(LISTED, decode=LISTED["decode"] + ["10.0.0.4:9900"]))
    assert members.get("decode", "10.0.0.4:9900").state == health.PROBATION
    assert {("10.0.0.1:9000", "10.0.0.4:9900"), ("10.0.0.2:9000", "10.0.0.4:9900")} == members.stale
    assert members.pick("decode", prefill="10.0.0.1:9000").key != "10.0.0.4:9900"
    # a member the proxy no longer lists (taken out) is gone, with its pairs
    members.sync(LISTED)
    assert members.get("decode", "10.0.0.4:9900") is None and not members.stale


def test_a_refused_connection_ejects_at_once_and_the_member_returns_only_after_health_and_a_pair_probe():
    clock = Clock()
    members = table(clock)
    dead = members.get("decode", "10.0.0.3:9901")
    members.failed(dead, "ConnectError: refused")
    assert dead.state == health.EJECTED and dead.ejections == 1 and members.retries["decode"] == 1
    assert {members.pick("decode").key for _turn in range(4)} == {"10.0.0.3:9900"}
    members.answered(dead)  # /health answers again: probation, and every pair with it is stale
    assert dead.state == health.PROBATION
    assert members.to_probe() == [(members.get("prefill", "10.0.0.1:9000"), dead), (members.get("prefill", "10.0.0.2:9000"), dead)]
    members.probed(members.get("prefill", "10.0.0.1:9000"), dead, passed=False, why="decode answered 500")
    assert dead.state == health.PROBATION
    clock.now += 3
    members.probed(members.get("prefill", "10.0.0.2:9000"), dead, passed=True)
    assert dead.state == health.SERVING and dead.reason == "pair probe with 10.0.0.2:9000 passed" and dead.since == 103
    # the pair that failed its probe stays out: with prefill 1 this decoder is not picked until that pair passes
    assert {members.pick("decode", prefill="10.0.0.1:9000").key for _turn in range(4)} == {"10.0.0.3:9900"}
    assert "10.0.0.3:9901" in {members.pick("decode", prefill="10.0.0.2:9000").key for _turn in range(4)}


def test_timeouts_eject_on_the_third_in_a_row_but_never_the_last_serving_member_and_5xx_on_the_third():
    members = table()
    hung, other = members.get("prefill", "10.0.0.1:9000"), members.get("prefill", "10.0.0.2:9000")
    members.missed(hung, "no answer within 2.0 s", refused=False)
    members.missed(hung, "no answer within 2.0 s", refused=False)
    assert hung.state == health.SERVING
    members.answered(hung)  # an answer in between resets the count
    for _turn in range(health.MISSES_IN_A_ROW):
        members.missed(hung, "no answer within 2.0 s", refused=False)
    assert hung.state == health.EJECTED and hung.reason == "/health: no answer within 2.0 s"
    for _turn in range(health.MISSES_IN_A_ROW + 2):  # slow, but the last prefill serving: kept (a saturated host)
        members.missed(other, "no answer within 2.0 s", refused=False)
    assert other.state == health.SERVING
    members.failed(other, "prefill 10.0.0.2:9000: ConnectTimeout", late=True)  # a try's timeout is slowness too
    assert other.state == health.SERVING and other.failures == 1
    members.missed(other, "ConnectError", refused=True)  # refused: dead, last or not
    assert other.state == health.EJECTED
    slow = members.get("decode", "10.0.0.3:9901")
    for _turn in range(health.MISSES_IN_A_ROW - 1):
        members.failed(slow, "decode 10.0.0.3:9901: ConnectTimeout", late=True)
    members.succeeded(slow)  # an answer in between resets the count
    members.missed(slow, "no answer within 2.0 s", refused=False)
    assert slow.state == health.SERVING
    for _turn in range(health.MISSES_IN_A_ROW - 1):  # probes and tries count together; another decoder serves
        members.failed(slow, "decode 10.0.0.3:9901: ConnectTimeout", late=True)
    assert slow.state == health.EJECTED and slow.reason == "decode 10.0.0.3:9901: ConnectTimeout"
    decode = members.get("decode", "10.0.0.3:9900")
    pair = ("10.0.0.2:9000", "10.0.0.3:9900")
    members.failed(decode, "answered 500", five_xx=True, pair=pair)
    assert decode.state == health.SERVING and pair in members.stale  # maybe the prefill's fault: the pair is probed
    members.failed(decode, "answered 500", five_xx=True)
    members.succeeded(decode)  # an answer in between resets the count
    for _turn in range(health.FIVE_XX_IN_A_ROW):
        members.failed(decode, "answered 500", five_xx=True)
    assert decode.state == health.EJECTED and decode.reason.startswith("3 answers of 5xx in a row")


def test_picks_go_to_the_least_loaded_serving_member_and_ties_to_the_one_picked_longest_ago():
    members = table()
    assert [members.pick("decode").key for _turn in range(4)] == ["10.0.0.3:9900", "10.0.0.3:9901"] * 2
    members.get("decode", "10.0.0.3:9900").load = 500
    assert {members.pick("decode").key for _turn in range(3)} == {"10.0.0.3:9901"}
    assert members.pick("decode", exclude={"10.0.0.3:9901"}).key == "10.0.0.3:9900"
    # a prefill is picked only when a decoder the request may still use makes a proven pair with it
    members.stale.add(("10.0.0.1:9000", "10.0.0.3:9901"))
    assert members.pick("prefill", decoders_left=["10.0.0.3:9901"]).key == "10.0.0.2:9000"
    assert members.pick("prefill", exclude={"10.0.0.2:9000"}, decoders_left=["10.0.0.3:9901"]) is None
    for member in members.of("decode"):
        members.eject(member, "gone")
    assert members.pick("decode") is None and members.serving("decode") == []


def test_metrics_and_view_show_each_members_state_its_ejections_and_the_outcomes():
    members = table()
    members.failed(members.get("decode", "10.0.0.3:9901"), "ConnectError")
    members.count("ok")
    members.count("ok")
    text = members.metrics()
    assert 'llmops_front_door_member_state{role="decode",member="10.0.0.3:9901",state="ejected"} 1' in text
    assert 'llmops_front_door_member_state{role="decode",member="10.0.0.3:9901",state="serving"} 0' in text
    assert 'llmops_front_door_member_ejections_total{role="decode",member="10.0.0.3:9901"} 1' in text
    assert 'llmops_front_door_serving_members{role="decode"} 1' in text
    assert 'llmops_front_door_retries_total{role="decode"} 1' in text
    assert 'llmops_front_door_requests_total{outcome="ok"} 2' in text
    view = members.view()
    assert {m["member"]: m["state"] for m in view["members"]} == {
        "10.0.0.1:9000": "serving", "10.0.0.2:9000": "serving", "10.0.0.3:9900": "serving", "10.0.0.3:9901": "ejected"}
    assert members.events[-1] == "decode 10.0.0.3:9901: ejected (ConnectError)"
