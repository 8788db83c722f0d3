# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A preflight problem: a row (host, check, what was found, what the plan needs, how to fix it), and the
rows as one table."""

from __future__ import annotations

from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils._text import aligned

COLUMNS = ("HOST", "CHECK", "FOUND", "NEEDED", "FIX")


def row(host: str, check: str, found: str, needed: str, fix: str) -> dict[str, str]:
    return {"host": host, "check": check, "found": found, "needed": needed, "fix": fix}


def table(rows: Iterable[dict[str, str]], limit: int = 100) -> list[str]:
    """The rows as aligned text; a cell longer than ``limit`` is cut (the JSON rows keep it whole)."""
    return aligned(COLUMNS, [(r["host"], r["check"], r["found"], r["needed"], r["fix"]) for r in rows], limit=limit)


def numbers(numbers: Iterable[object]) -> str:
    return ",".join(str(n) for n in numbers)


def size(value: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return "%.0f %s" % (value, unit)
        value /= 1024.0
    return str(value)
