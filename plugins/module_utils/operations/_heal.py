# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Healing without a person: whether heal.yml may act on an alert, and the record of what it did.

The rulebook (extensions/eda/rulebooks/heal.yml) hands heal.yml each firing alert of a cluster that a deploy can
cure: an engine's /metrics down, a front door member out of rotation. heal.yml restarts the cluster's dead DP groups
as a deploy would and nothing else. Its guards live here, over one record per cluster (a JSON file on the machine
that runs the rulebook):

- a bounded number of attempts per group (the alert's instance, else its member or container) within a window: past
  it, heal.yml acts no more on that group, says so in the record's status line and in the metric
  ``llmops_heal_gave_up``, and leaves it for a person (a crash-looping engine is not restarted forever);
- every attempt is kept with its cause and result (started, healed, failed, nothing to do), and counted in
  ``llmops_heal_attempts_total`` (the rulebook's event source serves the metrics file heal.yml writes).

An attempt still "started" when the next one starts was cut short (the play failed before it recorded its end): it
is marked failed then; until then it counts against the bound like one that ended.

One death fires several alerts (the rank's /metrics down, the front door taking its member out), and an alert that
fired while its group restarted reaches heal.yml after the restart: an alert that began before the group's last
attempt ended is about a death that attempt saw, and never gives up on the group (past the bound it is let go).
"""

from __future__ import annotations

import datetime
import json
import re
import typing as t

STARTED, HEALED, FAILED, IDLE = "started", "healed", "failed", "nothing to do"
RESULTS = (HEALED, FAILED, IDLE)


class Cause(t.TypedDict, total=False):
    """What an alert says, as the event source hands it on (its labels, and Alertmanager's fields)."""

    alert: str
    status: str
    cluster: str
    host: str
    container: str
    role: str
    instance: str
    member: str
    fingerprint: str
    starts_at: str


class Attempt(t.TypedDict):
    at: float
    group: str
    cause: str
    result: str
    ended: t.NotRequired[float]  # when its result was recorded


class Record(t.TypedDict):
    cluster: str
    attempts: list[Attempt]
    gave_up: dict[str, float]  # group -> when heal.yml stopped acting on it


class Decision(t.NamedTuple):
    act: bool
    group: str
    line: str  # the status line: what heal.yml does, or why not
    gives_up: bool = False  # the group reached its bound now: record it (gave_up)


def group_of(cause: Cause) -> str:
    """The group an alert names: an engine's instance (its DP group by name), else the front door's member or the
    container it is about."""
    return cause.get("instance") or cause.get("member") or "%s/%s" % (cause.get("host", "?"), cause.get("container", "?"))


def describe(cause: Cause) -> str:
    where = cause.get("member") or "%s on %s" % (cause.get("container", "?"), cause.get("host", "?"))
    return "%s (%s)" % (cause.get("alert", "?"), where)


def empty(cluster: str) -> Record:
    return {"cluster": cluster, "attempts": [], "gave_up": {}}


def loaded(text: str | None, cluster: str) -> Record:
    """A record from its file's text (an empty one when there is none yet)."""
    if not text:
        return empty(cluster)
    record = t.cast(Record, json.loads(text))
    record.setdefault("gave_up", {})
    return record


RFC3339 = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def epoch_of(rfc3339: str) -> float | None:
    """An alert's startsAt (Go's RFC 3339, nanoseconds and any zone) as seconds since the epoch; None if it is not one."""
    found = RFC3339.match(rfc3339 or "")
    if not found:
        return None
    seconds, fraction, zone = found.groups()
    text = "%s.%s%s" % (seconds, (fraction or "0")[:6].ljust(6, "0"), "+00:00" if zone == "Z" else zone)
    return datetime.datetime.fromisoformat(text).timestamp()


def as_text(record: Record) -> str:
    return json.dumps(record, indent=1, sort_keys=True) + "\n"


def decide(record: Record, cause: Cause, now: float, bound: int, window: float) -> Decision:
    """Whether heal.yml acts on ``cause``: not when its group has had ``bound`` attempts that restarted something,
    failed or are still under way, within ``window`` seconds (it then gives up on the group until a person clears
    the record: ``gives_up``), nor once it gave up on it. The record is read, not changed."""
    group = group_of(cause)
    if group in record["gave_up"]:
        return Decision(False, group, "cluster %s: healing gave up on %s; it is left for a person (%s). Fix the cause, "
                        "then remove the group from the record or run the cluster's playbook." % (record["cluster"], group, describe(cause)))
    recent = [a for a in record["attempts"] if a["group"] == group and now - a["at"] < window and a["result"] != IDLE]
    if len(recent) >= bound:
        if seen_by_last_attempt(recent, cause):
            return Decision(False, group, "cluster %s: %s began before %s's last attempt ended: it is about a death that "
                            "attempt saw, and heal.yml does no more (a new death's alert gives up on the group)"
                            % (record["cluster"], describe(cause), group))
        return Decision(False, group, "cluster %s: %s was healed or tried %d times within %d s and is down again: healing "
                        "gives up on it and leaves it for a person (%s)" % (record["cluster"], group, len(recent), window, describe(cause)),
                        gives_up=True)
    return Decision(True, group, "cluster %s: healing %s (attempt %d of %d within %d s)"
                    % (record["cluster"], describe(cause), len(recent) + 1, bound, window))


def seen_by_last_attempt(attempts: list[Attempt], cause: Cause) -> bool:
    """Whether the alert began before the last of ``attempts`` ended (an attempt without an end never saw it)."""
    began, ended = epoch_of(cause.get("starts_at", "")), attempts[-1].get("ended") if attempts else None
    return began is not None and ended is not None and began < ended


def started(record: Record, decision: Decision, cause: Cause, now: float) -> None:
    """A new attempt; one still started before it was cut short (its play failed before recording its end)."""
    for attempt in record["attempts"]:
        if attempt["result"] == STARTED:
            attempt["result"] = FAILED
    record["attempts"].append({"at": now, "group": decision.group, "cause": describe(cause), "result": STARTED})


def gave_up(record: Record, decision: Decision, now: float) -> None:
    """The group healing gives up on, from now on (until a person removes it from the record)."""
    record["gave_up"][decision.group] = now


def finished(record: Record, result: str, now: float) -> None:
    """The last attempt's result: healed (the deploy restarted something), nothing to do, or failed."""
    if result not in RESULTS:
        raise ValueError("result %r: one of %s" % (result, ", ".join(RESULTS)))
    for attempt in reversed(record["attempts"]):
        if attempt["result"] == STARTED:
            attempt["result"] = result
            attempt["ended"] = now
            return


def pruned(record: Record, now: float, keep: float) -> Record:
    """The record without attempts older than ``keep`` seconds (what the window and a person need)."""
    record["attempts"] = [a for a in record["attempts"] if now - a["at"] < keep]
    return record


def metrics(record: Record) -> str:
    """The record as Prometheus text: attempts by group and result, and the groups healing gave up on."""
    cluster = record["cluster"]
    counts: dict[tuple[str, str], int] = {}
    for attempt in record["attempts"]:
        counts[(attempt["group"], attempt["result"])] = counts.get((attempt["group"], attempt["result"]), 0) + 1
    lines = ["# HELP llmops_heal_attempts_total Heal attempts of the cluster's groups by result (those kept in its record).",
             "# TYPE llmops_heal_attempts_total counter"]
    lines += ['llmops_heal_attempts_total{llmops_cluster="%s",group="%s",result="%s"} %d' % (cluster, group, result, n)
              for (group, result), n in sorted(counts.items())]
    lines += ["# HELP llmops_heal_gave_up A group healing stopped acting on: it is left for a person.",
              "# TYPE llmops_heal_gave_up gauge"]
    lines += ['llmops_heal_gave_up{llmops_cluster="%s",group="%s"} 1' % (cluster, group) for group in sorted(record["gave_up"])]
    return "\n".join(lines) + "\n"
