# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's launcher files side by side, as deploy writes them into the proxy's config directory (tests and
benchmarks only): the pd_proxy role's files and the engines' guard module, whose key files' reader it imports."""

from __future__ import annotations

import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]


def copy_launcher(target: pathlib.Path) -> pathlib.Path:
    """Copies them into ``target`` (made) and returns it."""
    target.mkdir(parents=True, exist_ok=True)
    sources = sorted((ROOT / "roles" / "pd_proxy" / "files").glob("*.py"))
    for source in sources + [ROOT / "roles" / "vllm_engine" / "files" / "llmops_key_guard.py"]:
        shutil.copy(source, target / source.name)
    return target
