# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The healing rulebook as a service (roles/heal_rulebook): which of the controller's collections it is given."""

from __future__ import annotations

import os
import typing as t
from collections.abc import Iterable, Mapping


class MissingCollection(ValueError):
    pass


def collection_paths(found: Mapping[str, Mapping[str, t.Any]], names: Iterable[str]) -> list[dict[str, str]]:
    """[{"name", "path"}] of each collection in ``names``, from ``ansible-galaxy collection list --format json``
    ({collections path: {name: {"version"}}}, in the order ansible looks in them): the first path that has it, as
    ansible-playbook on the controller loads it."""
    paths = []
    for name in names:
        where = next((root for root, collections in found.items() if name in collections), None)
        if where is None:
            raise MissingCollection(
                "heal_rulebook_collections: %s is not installed on the controller (ansible-galaxy collection list finds "
                "it in none of %s). Fix: install it there (ansible-galaxy collection install %s), or leave it out of "
                "heal_rulebook_collections" % (name, ", ".join(found) or "its collection paths", name))
        namespace, _dot, collection = name.partition(".")
        paths.append({"name": name, "path": "%s/%s/%s" % (where.rstrip("/"), namespace, collection)})
    return paths


# Files ansible-inventory skips in an inventory directory (its INVENTORY_IGNORE_EXTS), left out of the copy as well
IGNORED = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst", ".orig", ".ini~", ".retry", ".cfg")


class NotAnInventory(ValueError):
    pass


def inventory_copies(sources: Iterable[str]) -> list[dict[str, str]]:
    """[{"src", "dest"}], one per file, that merge the inventory sources into one directory for ansible-rulebook's
    one -i: each source's own files numbered in the order given (as with several -i, later sources win), the files of
    the directories beside them (group_vars, host_vars, the credentials deploy keeps beside the inventory) merged by
    path, a later source's file replacing an earlier one's."""
    copies: dict[str, str] = {}
    for number, source in enumerate(sources, start=1):
        if os.path.isfile(source):
            copies["%02d-%s" % (number, os.path.basename(source))] = source
        elif os.path.isdir(source):
            for entry in sorted(e for e in os.listdir(source) if not e.startswith(".")):  # .git of an inventory repo
                path = os.path.join(source, entry)
                if os.path.isdir(path):
                    copies.update(_files_under(path, entry))
                elif not entry.endswith(IGNORED):
                    copies["%02d-%s" % (number, entry)] = path
        else:
            raise NotAnInventory("heal_rulebook_inventory: %s is no file or directory on the controller (an inventory "
                                 "the service can be given a copy of). Fix: name the inventory's files or directories"
                                 % source)
    return [{"src": src, "dest": dest} for dest, src in copies.items()]


def _files_under(directory: str, name: str) -> dict[str, str]:
    found = {}
    for where, dirs, files in os.walk(directory, followlinks=True):
        dirs.sort()
        for file in sorted(files):
            found[os.path.join(name, os.path.relpath(os.path.join(where, file), directory))] = os.path.join(where, file)
    return found
