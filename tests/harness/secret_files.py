# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A secret file where the deploy mounts them in a container (tests only: the checks run as root in a throwaway
container of the proxy's image, and write what containers_started writes on a host)."""

from __future__ import annotations

import os

DIRECTORY = "/run/llmops/secrets"  # llmops_key_guard.SECRETS_DIR


def write(name: str, text: str) -> None:
    """Replace the file at once, as deploy does (a reader sees the old or the new keys)."""
    os.makedirs(DIRECTORY, mode=0o700, exist_ok=True)
    path = os.path.join(DIRECTORY, name)
    with open(path + ".new", "w", encoding="utf-8") as out:
        out.write(text + "\n")
    os.chmod(path + ".new", 0o400)
    os.replace(path + ".new", path)
