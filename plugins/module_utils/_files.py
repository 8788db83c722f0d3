# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files written only when their content differs (plan files on the controller, configs on hosts)."""

from __future__ import annotations

import os


def read_text(path):
    """The file's content, or None when it does not exist."""
    try:
        with open(path, encoding="utf-8") as existing:
            return existing.read()
    except FileNotFoundError:
        return None


def differing(files):
    """[(path, content now or None, wanted content)] of the files ({path: content}) whose content on this host differs,
    by path."""
    found = []
    for path, content in sorted(files.items()):
        before, content = read_text(path), str(content)
        if before != content:
            found.append((path, before, content))
    return found


def write_text(path, text):
    """Write text to path, creating its directory."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)
