# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Errors raised by the rank planner.

Every problem names where it is (cluster, host, rank), the inventory variable
that causes it and how to fix it, so an operator can act on the message alone.
"""

from __future__ import annotations

from collections.abc import Iterable


class Problem:
    """One broken rule, located as precisely as the rule allows."""

    def __init__(self, cluster: str, variable: str, message: str, fix: str, host: str | None = None,
                 rank: int | str | None = None) -> None:
        self.cluster = cluster
        self.variable = variable
        self.message = message
        self.fix = fix
        self.host = host
        self.rank = rank

    def __str__(self) -> str:
        where = ["cluster %s" % self.cluster]
        if self.host is not None:
            where.append("host %s" % self.host)
        if self.rank is not None:
            where.append("rank %s" % self.rank)
        return "%s: %s: %s. Fix: %s." % (", ".join(where), self.variable, self.message, self.fix)


class PlanError(Exception):
    """Raised with every problem found, so one run reports them all."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))
