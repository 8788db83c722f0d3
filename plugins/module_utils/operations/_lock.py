# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster lock: one play at a time changes a cluster.

A person's deploy, stop or teardown and heal.yml, which the rulebook runs without a person, take it
before they change anything and give it back when they end, a failed play too (its rescue). It is a
file on the cluster's first host, so plays from different controllers (an operator's laptop, the
rulebook's machine) see the same lock. Whoever finds it held waits.

A holder is known by its controller (host name and machine id: two containers sharing a host's network share
its name) and the process id of its ansible-playbook. A lock whose holder ran on this controller and whose
process is gone (killed, interrupted) is taken over; one from another
controller is broken only on request (llmops_lock_break), since nothing here can see whether that play
still runs. The holder's own play finds it "mine": heal.yml and the deploy it imports take it once.
"""

from __future__ import annotations

import json
import os
import typing as t

DEFAULT_DIR = "/var/lib/llmops/locks"
FREE, MINE, STALE, HELD = "free", "mine", "stale", "held"


class Holder(t.TypedDict):
    """Who holds a cluster's lock: written into the lock file, shown to whoever waits."""

    token: str
    controller: str
    machine: str
    pid: int
    user: str
    play: str
    since: float


def holder(controller: str, machine: str, pid: int, user: str, play: str, now: float) -> Holder:
    return Holder(token="%s/%s/%d" % (controller, machine, pid), controller=controller, machine=machine, pid=pid,
                  user=user, play=play, since=now)


def verdict(current: Holder | None, me: Holder, alive: t.Callable[[int], bool], force: bool) -> str:
    """FREE, MINE (this play holds it), STALE (may be taken over) or HELD (wait)."""
    if current is None:
        return FREE
    if current["token"] == me["token"]:
        return MINE
    same_controller = (current["controller"], current["machine"]) == (me["controller"], me["machine"])
    if force or (same_controller and not alive(current["pid"])):
        return STALE
    return HELD


def describe(current: Holder, now: float) -> str:
    return "%s by %s from %s (pid %s) since %d s" % (
        current["play"], current["user"], current["controller"], current["pid"], max(0, now - current["since"]))


def status_line(cluster: str, current: Holder | None, now: float) -> str:
    """What status.yml says of the lock: free, or who holds it."""
    return "cluster %s: %s" % (cluster, "lock free" if current is None else "locked for " + describe(current, now))


def lock_path(directory: str, cluster: str) -> str:
    return os.path.join(directory, cluster + ".lock")


def read(path: str) -> Holder | None:
    """The holder the lock file names, None without one. A file that is not a holder is held by someone unknown."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        return None
    try:
        found = json.loads(text)
        return Holder(token=str(found["token"]), controller=str(found["controller"]), machine=str(found["machine"]),
                      pid=int(found["pid"]), user=str(found["user"]), play=str(found["play"]), since=float(found["since"]))
    except (ValueError, KeyError, TypeError):
        return Holder(token="unknown", controller="unknown", machine="", pid=0, user="unknown",
                      play="a file not written by this collection (%s)" % path, since=os.stat(path).st_mtime)


def take(path: str, me: Holder, replace: str | None = None) -> Holder | None:
    """Writes me as the holder unless someone else holds it. Returns None once taken, else the holder found.

    replace is the token of a stale holder to take over, only while the file still names it. The file
    appears whole or not at all (a link of a written file), so a reader never sees half a holder.
    """
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    if replace is not None:
        _remove_if(path, replace, path + ".stale." + me["token"].replace("/", "-"))
    written = "%s.%s" % (path, me["token"].replace("/", "-"))
    with open(written, "w", encoding="utf-8") as handle:
        json.dump(me, handle)
    try:
        os.link(written, path)
    except FileExistsError:
        return read(path) or take(path, me)
    finally:
        os.unlink(written)
    return None


def release(path: str, token: str) -> bool:
    """Removes the lock when token holds it; whether it did."""
    return _remove_if(path, token, path + ".released." + token.replace("/", "-"))


def _remove_if(path: str, token: str, aside: str) -> bool:
    # another's lock is left in place; one that changed hands since is moved aside, seen not to be ours, and put back
    current = read(path)
    if current is None or current["token"] != token:
        return False
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return False
    found = read(aside)
    if found is None or found["token"] != token:
        try:
            os.link(aside, path)
        except FileExistsError:
            pass
        os.unlink(aside)
        return False
    os.unlink(aside)
    return True
