# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The cluster lock: who may take it, who waits, and that only its holder gives it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ansible_collections.llmops.inference.plugins.action import cluster_lock as action
from ansible_collections.llmops.inference.plugins.module_utils.operations import _lock as lock

PERSON = lock.holder("laptop", "m1", 4100, "ops", "deploy", 1000.0)
RULEBOOK = lock.holder("eda", "m2", 200, "root", "heal", 1010.0)


def alive(pid):
    return pid != 4100


def test_verdicts_free_mine_held_and_stale():
    assert lock.verdict(None, RULEBOOK, alive, force=False) == lock.FREE
    assert lock.verdict(RULEBOOK, dict(RULEBOOK, since=2000.0), alive, force=False) == lock.MINE
    # another controller's play may still run: wait, unless the person says it is gone
    assert lock.verdict(PERSON, RULEBOOK, alive, force=False) == lock.HELD
    assert lock.verdict(PERSON, RULEBOOK, alive, force=True) == lock.STALE
    # this controller's play whose process is gone (pid 4100) is taken over; a live one is waited for
    later = lock.holder("laptop", "m1", 4200, "ops", "deploy", 1100.0)
    assert lock.verdict(PERSON, later, alive, force=False) == lock.STALE
    assert lock.verdict(lock.holder("laptop", "m1", 4300, "ops", "stop", 1.0), later, alive, force=False) == lock.HELD
    # a container sharing the laptop's network (and name) is another controller: its process is not looked for here
    assert lock.verdict(PERSON, lock.holder("laptop", "m9", 4200, "ops", "deploy", 1100.0), alive, force=False) == lock.HELD


def test_take_waits_for_nobody_twice_and_only_the_holder_gives_back(tmp_path):
    path = lock.lock_path(str(tmp_path / "locks"), "pd_a2")
    assert lock.take(path, PERSON) is None
    assert lock.take(path, RULEBOOK) == PERSON
    assert lock.take(path, PERSON) == PERSON  # its own: the caller reads it as MINE
    assert not lock.release(path, RULEBOOK["token"])
    assert lock.read(path) == PERSON
    assert lock.release(path, PERSON["token"])
    assert lock.read(path) is None
    assert lock.take(path, RULEBOOK) is None
    assert sorted(os.listdir(tmp_path / "locks")) == ["pd_a2.lock"]


def test_a_stale_holder_is_replaced_only_while_it_still_holds(tmp_path):
    path = lock.lock_path(str(tmp_path), "pd_a2")
    lock.take(path, PERSON)
    later = lock.holder("laptop", "m1", 4200, "ops", "deploy", 1100.0)
    # a replace naming someone else (the lock changed hands since it was read) takes nothing and removes nothing
    assert lock.take(path, later, replace=RULEBOOK["token"]) == PERSON
    assert lock.take(path, later, replace=PERSON["token"]) is None
    assert lock.read(path) == later
    assert sorted(os.listdir(tmp_path)) == ["pd_a2.lock"]


def test_a_file_not_written_here_is_held_by_someone_unknown(tmp_path):
    path = lock.lock_path(str(tmp_path), "pd_a2")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("held by hand\n")
    found = lock.take(path, PERSON)
    assert found is not None and found["controller"] == "unknown" and path in found["play"]
    assert lock.verdict(found, PERSON, alive, force=False) == lock.HELD
    assert lock.take(path, PERSON, replace=found["token"]) is None
    assert json.loads(open(path, encoding="utf-8").read())["token"] == PERSON["token"]


def test_the_refusal_names_the_holder_and_the_fix():
    line = action.refusal("pd_a2", PERSON, 1800.4, 1900.0)
    assert line == ("cluster pd_a2 is locked by deploy by ops from laptop (pid 4100) since 900 s; waited 1800 s "
                    "(llmops_lock_wait). When that play no longer runs, run again with -e llmops_lock_break=true")


def test_only_a_live_ansible_process_holds():
    playbook = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "ansible-playbook"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert action.ansible_process_alive(playbook.pid)
        assert not action.ansible_process_alive(other.pid)  # a pid reused by another program
    finally:
        playbook.kill()
        other.kill()
        playbook.wait()
        other.wait()
    assert not action.ansible_process_alive(playbook.pid)


class LockOnDisk(action.ActionModule):
    """The controller side with its module call answered from a lock file here, as the host's side would."""

    def __init__(self, path):  # pylint: disable=super-init-not-called
        self.path = path
        self.calls = 0

    def _call(self, args, me, task_vars, replace=None):
        self.calls += 1
        if args.get("state") == "absent":
            return {"released": lock.release(self.path, me["token"]), "found": lock.read(self.path)}
        return {"found": lock.take(self.path, me, replace)}


def test_the_wait_ends_in_a_refusal_or_takes_over_a_gone_holder(tmp_path, monkeypatch):
    path = lock.lock_path(str(tmp_path), "pd_a2")
    lock.take(path, RULEBOOK)
    args = {"cluster": "pd_a2", "play": "deploy", "wait": 0.3, "interval": 0.1}
    plugin = LockOnDisk(path)
    refused = plugin._take({}, args, lock.holder("laptop", "m1", 4200, "ops", "deploy", 1.0), {})
    assert refused["failed"] and "locked by heal by root from eda (pid 200)" in refused["msg"] and plugin.calls >= 3
    # the rulebook's play ended without giving it back: a person who knows says so
    taken = LockOnDisk(path)._take({}, dict(args, force=True), lock.holder("laptop", "m1", 4200, "ops", "deploy", 1.0), {})
    assert not taken.get("failed") and lock.read(path)["token"] == "laptop/m1/4200"
    # this controller's play whose process is gone is taken over without being told
    monkeypatch.setattr(action, "ansible_process_alive", lambda pid: False)
    again = LockOnDisk(path)._take({}, args, lock.holder("laptop", "m1", 4300, "ops", "stop", 2.0), {})
    assert not again.get("failed") and lock.read(path)["token"] == "laptop/m1/4300"
    given = LockOnDisk(path)._give_back({}, {"cluster": "pd_a2", "state": "absent"}, lock.holder("laptop", "m1", 4300, "ops", "stop", 3.0), {})
    assert given["msg"] == "cluster pd_a2: lock given back" and lock.read(path) is None


def test_status_says_the_lock_is_free_or_who_holds_it_and_for_what():
    held = lock.holder("ops-2", "0a1b2c", 4711, "alice", "heal", 100.0)
    assert lock.status_line("pd_a2", None, 130.0) == "cluster pd_a2: lock free"
    assert lock.status_line("pd_a2", held, 130.0) == "cluster pd_a2: locked for heal by alice from ops-2 (pid 4711) since 30 s"
