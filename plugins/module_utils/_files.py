# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files written only when their content differs (plan files on the controller, configs on hosts)."""

from __future__ import annotations

import os
import typing as t
from collections.abc import Iterable, Mapping


def read_text(path: str) -> str | None:
    """The file's content, or None when it does not exist."""
    try:
        with open(path, encoding="utf-8") as existing:
            return existing.read()
    except FileNotFoundError:
        return None


def differing(files: Mapping[str, object]) -> list[tuple[str, str | None, str]]:
    """[(path, content now or None, wanted content)] of the files ({path: content}) whose content on this host differs,
    by path."""
    found = []
    for path, given in sorted(files.items()):
        before, content = read_text(path), str(given)
        if before != content:
            found.append((path, before, content))
    return found


def write_text(path: str, text: str) -> None:
    """Write text to path, creating its directory."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        out.write(text)


def require_absolute(module: t.Any, paths: Iterable[str], what: str) -> None:
    """Fails the module on the first path of ``paths`` that is not absolute (``what``: what the paths are, for the
    message), before anything is written."""
    for path in paths:
        if not os.path.isabs(path):
            module.fail_json(msg="%s %r is not absolute" % (what, path))


def write_changed(module: t.Any, files: Mapping[str, object], mode: str | int) -> tuple[list[str], list[dict[str, str]]]:
    """Writes the files ({path: content}, absolute paths) whose content on this host differs, with ``mode``; nothing in
    check mode. Returns (paths changed or that would be, diffs for the module's result). A relative path fails the
    module before anything is written."""
    require_absolute(module, sorted(files), "config file path")
    changed: list[str] = []
    diffs: list[dict[str, str]] = []
    for path, before, content in differing(files):
        changed.append(path)
        diffs.append({"before_header": path, "after_header": path, "before": before or "", "after": content})
        if not module.check_mode:
            write_text(path, content)
            module.set_mode_if_different(path, mode, False)
    return changed, diffs


def make_dirs(module: t.Any, paths: list[str], mode: str | int) -> list[str]:
    """Makes each directory of ``paths`` (absolute) that does not exist, with its parents, and sets ``mode`` on it;
    nothing in check mode. Returns the ones made (or that would be). A relative path fails the module first."""
    require_absolute(module, paths, "directory")
    made = [path for path in paths if not os.path.isdir(path)]
    for path in made if not module.check_mode else ():
        os.makedirs(path, exist_ok=True)
        module.set_mode_if_different(path, mode, False)
    return made


def write_secret(path: str, text: str) -> bool:
    """Writes a secret file when its content differs: mode 0400 from its creation, its directories 0700, the old file
    replaced at once (a reader sees the old or the new keys, never a part). Returns whether it wrote."""
    if read_text(path) == text:
        return False
    directory = os.path.dirname(path)
    os.makedirs(directory, mode=0o700, exist_ok=True)
    os.chmod(os.path.dirname(directory), 0o700)
    os.chmod(directory, 0o700)
    temporary = "%s.%d.new" % (path, os.getpid())
    if os.path.lexists(temporary):  # left by a run that died between its creation and the replace
        os.unlink(temporary)
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o400)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(temporary, path)
    return True


def write_secrets(module: t.Any, files: Mapping[str, str]) -> list[str]:
    """Writes the secret files ({path: content}, absolute paths) whose content differs (write_secret); nothing in check
    mode, where those that differ are returned all the same. Returns the paths written (or that would be)."""
    require_absolute(module, sorted(files), "secret file path")
    if module.check_mode:
        return [path for path, content in sorted(files.items()) if read_text(path) != content]
    return [path for path, content in sorted(files.items()) if write_secret(path, content)]
