# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's view of its members: which take requests, which are out and why, which pairs are proven.

Pure state, no I/O: front_door_watch.py (the probes) and front_door_router.py (the requests) tell it what they saw,
and the router asks it for a pair.

A member is one engine API endpoint the upstream proxy lists ("host:port": a prefill API rank or a decode rank).
It is in one of three states:
  serving    takes new requests.
  ejected    found dead: a refused or reset connection, a timeout, /health failing, or too many 5xx answers in a
             row. It takes no request until its /health answers again.
  probation  answers again (or was just added): it takes no request until a prefill-to-decode probe through it
             passes. A pair (prefill, decode) is stale while either side is on probation, or after a 5xx on it. A
             stale pair takes no traffic until its own probe passes: after a prefill restarts, decode may hold stale
             transfer state (llm-d PR #2187). An engine's restart takes far longer than a probe interval, so the
             watch sees it die; a roll takes it out and adds it back (probation either way). Engine ids cannot
             tell a restart: each DP rank behind one API member answers with its own.
The example proxy has none of this: a dead decoder keeps its share of requests and each gets HTTP 200 with an
empty body (vllm-ascend #13140).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

ROLES = ("prefill", "decode")
SERVING, EJECTED, PROBATION = "serving", "ejected", "probation"
STATES = (SERVING, EJECTED, PROBATION)
# What a completion through the front door came to; each has a series from the start (Prometheus's rates need it).
OUTCOMES = ("ok", "client_error", "failed", "unavailable", "stream_cut", "client_left")
# 5xx answers in a row that eject a member (Envoy's outlier detection counts consecutive 5xx the same way): one 5xx
# may be the other side's fault (a decode cannot read a dead prefill's KV), so that pair is probed again instead.
FIVE_XX_IN_A_ROW = 3
# Timeouts in a row, of /health probes and of tries (connect, first byte), that eject a member (a refused connection
# ejects at once). Slowness alone never ejects the last serving member of a role: on a saturated host every engine
# connects and answers late at once (real vLLM on two busy cores did), and ejecting them all would turn a slow cluster
# into one that answers nothing (Envoy's outlier detection caps its ejections with max_ejection_percent).
MISSES_IN_A_ROW = 3


@dataclass
class Member:
    role: str
    key: str
    state: str = SERVING
    since: float = 0.0
    reason: str = "listed at start"
    load: float = 0.0  # the weight of its requests in flight (the request's length, as upstream's scheduler weighs)
    picked: int = 0  # the order of its last pick: ties go to the member picked longest ago
    ejections: int = 0
    failures: int = 0
    five_xx: int = 0
    misses: int = 0


@dataclass
class Members:
    clock: Callable[[], float] = time.monotonic
    members: dict[tuple[str, str], Member] = field(default_factory=dict)
    stale: set[tuple[str, str]] = field(default_factory=set)  # (prefill key, decode key)
    retries: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    outcomes: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    events: list[str] = field(default_factory=list)  # the last state changes, for the log
    _picks: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    # --- membership ---------------------------------------------------------------------------------------------
    def sync(self, listed: dict[str, list[str]], at_start: bool = False) -> None:
        """Follow the upstream proxy's lists: a member it no longer lists is dropped (taken out by deploy: requests in
        flight on it finish); a new one starts on probation, unless this is the front door's start, when the
        engines were ready before the proxy was started (deploy's waves)."""
        now = self.clock()
        wanted = {(role, key) for role in ROLES for key in listed.get(role) or ()}
        for gone in [k for k in self.members if k not in wanted]:
            del self.members[gone]
            self.stale = {pair for pair in self.stale if gone[1] not in pair}
        for role, key in sorted(wanted - set(self.members)):
            member = Member(role, key, since=now)
            self.members[(role, key)] = member
            if not at_start:
                self._to(member, PROBATION, "added")

    def of(self, role: str) -> list[Member]:
        return [m for (r, _k), m in sorted(self.members.items()) if r == role]

    def get(self, role: str, key: str) -> Member | None:
        return self.members.get((role, key))

    # --- what probes and requests saw ---------------------------------------------------------------------------
    def answered(self, member: Member) -> None:
        """/health answered 200: a dead member goes on probation (its pairs are probed before it serves again)."""
        member.misses = 0
        if member.state == EJECTED:
            self._to(member, PROBATION, "answers /health again")

    def missed(self, member: Member, why: str, refused: bool) -> None:
        """/health failed: refused (or an error status) ejects at once, a timeout on the MISSES_IN_A_ROW-th in a row,
        unless the member is the last one of its role serving."""
        if refused:
            self.eject(member, "/health: " + why)
        else:
            self._late(member, "/health: " + why)

    def _late(self, member: Member, why: str) -> None:
        """A probe or a try timed out: slowness, which ejects on the MISSES_IN_A_ROW-th in a row, never the last
        serving member of its role."""
        member.misses += 1
        if member.misses >= MISSES_IN_A_ROW and self.serving(member.role) != [member]:
            self.eject(member, why)

    def eject(self, member: Member, why: str) -> None:
        """Out of rotation now; the requests on it that sent nothing to their client yet go elsewhere."""
        if member.state != EJECTED:
            member.ejections += 1
            self._to(member, EJECTED, why)

    def failed(self, member: Member, why: str, five_xx: bool = False, pair: tuple[str, str] | None = None,
               late: bool = False) -> None:
        """A request through member failed. A refused or reset connection ejects it; a timeout (``late``: a connect
        or first byte later than its bound) counts as slowness, like a /health timeout; a 5xx makes the pair stale
        and ejects the member on the FIVE_XX_IN_A_ROW-th in a row."""
        member.failures += 1
        self.retries[member.role] += 1
        if late:
            self._late(member, why)
            return
        if not five_xx:
            self.eject(member, why)
            return
        member.five_xx += 1
        if pair:
            self.stale.add(pair)
        if member.five_xx >= FIVE_XX_IN_A_ROW:
            self.eject(member, "%d answers of 5xx in a row, the last: %s" % (member.five_xx, why))

    def succeeded(self, member: Member) -> None:
        member.five_xx = member.misses = 0

    def probed(self, prefill: Member, decode: Member, passed: bool, why: str = "") -> None:
        """A pair probe's result: a pass proves the pair and puts a member on probation in service; a failure keeps
        the pair stale (probed again next round)."""
        pair = (prefill.key, decode.key)
        if not passed:
            self.stale.add(pair)
            self.events.append("pair %s -> %s: probe failed: %s" % (prefill.key, decode.key, why))
            return
        self.stale.discard(pair)
        for member in (prefill, decode):
            member.five_xx = 0
            if member.state == PROBATION:
                self._to(member, SERVING, "pair probe with %s passed" % (decode.key if member is prefill else prefill.key))

    def _to(self, member: Member, state: str, why: str) -> None:
        if state == PROBATION:  # its pairs are proven again before they take traffic
            others = self.of("decode" if member.role == "prefill" else "prefill")
            self.stale |= {(member.key, o.key) if member.role == "prefill" else (o.key, member.key) for o in others}
        member.state, member.reason, member.since = state, why, self.clock()
        self.events.append("%s %s: %s (%s)" % (member.role, member.key, state, why))
        del self.events[:-100]

    # --- choices ------------------------------------------------------------------------------------------------
    def to_probe(self) -> list[tuple[Member, Member]]:
        """The stale pairs whose two members answer (neither ejected)."""
        found = []
        for prefill_key, decode_key in sorted(self.stale):
            prefill, decode = self.get("prefill", prefill_key), self.get("decode", decode_key)
            if prefill and decode and EJECTED not in (prefill.state, decode.state):
                found.append((prefill, decode))
        return found

    def serving(self, role: str) -> list[Member]:
        return [m for m in self.of(role) if m.state == SERVING]

    def pick(self, role: str, exclude: Iterable[str] = (), prefill: str | None = None,
             decoders_left: Iterable[str] | None = None) -> Member | None:
        """The least loaded serving member of role not in exclude (ties: the one picked longest ago); for decode with a
        prefill, only a proven pair; for prefill with ``decoders_left`` (the decoders a request may still use), only
        one with a proven pair among them, so that no prefill is sent whose KV no decoder may take. None when there is
        none."""
        skip = set(exclude)
        found = [m for m in self.serving(role) if m.key not in skip and (prefill is None or (prefill, m.key) not in self.stale)]
        if role == "prefill" and decoders_left is not None:
            left = [d.key for d in self.serving("decode") if d.key in set(decoders_left)]
            found = [m for m in found if any((m.key, d) not in self.stale for d in left)]
        if not found:
            return None
        chosen = min(found, key=lambda m: (m.load, m.picked))
        chosen.picked = next(self._picks)
        return chosen

    def count(self, outcome: str) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    # --- what it shows ------------------------------------------------------------------------------------------
    def view(self) -> dict:
        """Every member's state as JSON (the front door's GET /members), and the stale pairs."""
        now = self.clock()
        return {"members": [{"role": m.role, "member": m.key, "state": m.state, "reason": m.reason,
                             "seconds": round(now - m.since, 1), "ejections": m.ejections, "failures": m.failures}
                            for role in ROLES for m in self.of(role)],
                "stale_pairs": [list(pair) for pair in sorted(self.stale)]}

    def metrics(self) -> str:
        """Prometheus text: each member's state (one series per state, 1 for the current one), its ejections and
        failed tries, retries by role, members serving by role, stale pairs, and the requests by outcome."""
        lines = ["# HELP llmops_front_door_member_state 1 for the member's state (serving, ejected, probation).",
                 "# TYPE llmops_front_door_member_state gauge"]
        for role in ROLES:
            for m in self.of(role):
                lines += ['llmops_front_door_member_state{role="%s",member="%s",state="%s"} %d'
                          % (role, m.key, state, state == m.state) for state in STATES]
        for name, what, attr in (("ejections", "Times the member was taken out of rotation.", "ejections"),
                                 ("failures", "Tries through the member that failed (each sent elsewhere when it could be).",
                                  "failures")):
            lines += ["# HELP llmops_front_door_member_%s_total %s" % (name, what),
                      "# TYPE llmops_front_door_member_%s_total counter" % name]
            lines += ['llmops_front_door_member_%s_total{role="%s",member="%s"} %d' % (name, m.role, m.key, getattr(m, attr))
                      for role in ROLES for m in self.of(role)]
        lines += ["# HELP llmops_front_door_serving_members Members of the role taking requests.",
                  "# TYPE llmops_front_door_serving_members gauge"]
        lines += ['llmops_front_door_serving_members{role="%s"} %d' % (role, len(self.serving(role))) for role in ROLES]
        lines += ["# HELP llmops_front_door_retries_total Tries sent again to another member after one failed.",
                  "# TYPE llmops_front_door_retries_total counter"]
        lines += ['llmops_front_door_retries_total{role="%s"} %d' % (role, self.retries[role]) for role in ROLES]
        lines += ["# HELP llmops_front_door_stale_pairs Prefill-decode pairs waiting for a probe before they take traffic.",
                  "# TYPE llmops_front_door_stale_pairs gauge", "llmops_front_door_stale_pairs %d" % len(self.stale),
                  "# HELP llmops_front_door_requests_total Completions answered, by outcome.",
                  "# TYPE llmops_front_door_requests_total counter"]
        lines += ['llmops_front_door_requests_total{outcome="%s"} %d' % (o, n) for o, n in sorted(self.outcomes.items())]
        return "\n".join(lines) + "\n"
