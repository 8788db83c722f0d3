# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Text the collection reads and prints in one way: sizes, vllm serve flag names, Prometheus pages, and aligned tables."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ansible.module_utils.common.text.formatters import human_to_bytes

# The pool configs' sizes, as vllm-ascend's mooncake config parser and Memcache read them: B, KB, MB, GB, TB in any case.
CONFIG_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([kmgt]?)b)?\s*", re.IGNORECASE)
# Docker's (shm_size): a unit letter, an optional i and b (500g, 2GiB, 64m).
DOCKER_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(?:([bkmgt])i?b?)?\s*", re.IGNORECASE)

# One sample line of a Prometheus text page: name, labels, value.
SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def size_bytes(text: object, docker: bool = False) -> int | None:
    """Bytes of a size, 1024-based; None when it does not read as one. ``docker``: as Docker writes them (500g).
    The spellings each reader accepts are matched here (any case; Docker's optional i); ansible-core's
    human_to_bytes does the arithmetic."""
    match = (DOCKER_SIZE if docker else CONFIG_SIZE).fullmatch(str(text if text is not None else ""))
    if not match:
        return None
    return int(human_to_bytes("%s%s" % (match.group(1), (match.group(2) or "").upper())))


def flag_name(key: object) -> str:
    """A vllm serve flag as vLLM's parser spells it: no leading dashes, dashes for underscores."""
    return str(key).lstrip("-").replace("_", "-")


def aligned(header: Sequence[str], rows: Iterable[Iterable[object]], limit: int | None = None) -> list[str]:
    """Lines of a table: each column as wide as its widest cell, two spaces apart, no trailing blanks; with
    ``limit`` a longer cell is cut to it (what prints a report; its JSON keeps the whole text)."""
    lines = [tuple(header)] + [tuple(str(cell) for cell in row) for row in rows]
    if limit:
        lines = [tuple(c if len(c) <= limit else c[:limit - 3] + "..." for c in line) for line in lines]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() for line in lines]


def parse_metrics(text: str | None) -> dict[str, float]:
    """{metric name: sum over its series} of a Prometheus text page (histogram parts kept apart)."""
    totals: dict[str, float] = {}
    for line in (text or "").splitlines():
        match = SAMPLE.match(line)
        if not match or line.startswith("#"):
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        totals[match.group(1)] = totals.get(match.group(1), 0.0) + value
    return totals
