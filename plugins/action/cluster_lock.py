# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of cluster_lock: names the holder and waits while another play holds the lock.

The holder is this controller (its host name and machine id) and the process id of ansible-playbook, which
forks the worker running this plugin: the same for every task of one run, so the run that took the lock
gives it back, and a later run of this controller can tell that a holder's process is gone.
"""

from __future__ import annotations

import getpass
import os
import socket
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.llmops.inference.plugins.module_utils.operations import _lock as lock

display = Display()
MODULE = "llmops.inference.cluster_lock"


def machine_id() -> str:
    """This controller's systemd machine id (shortened), empty where it has none."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            with open(path, encoding="ascii") as handle:
                return handle.read().strip()[:12]
        except OSError:
            continue
    return ""


def ansible_process_alive(pid: int) -> bool:
    """Whether pid is still an Ansible process on this controller (a reused pid of another program is not)."""
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return b"ansible" in handle.read()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def refusal(cluster: str, current: lock.Holder, waited: float, now: float) -> str:
    return ("cluster %s is locked by %s; waited %d s (llmops_lock_wait). When that play no longer runs, run again with "
            "-e llmops_lock_break=true" % (cluster, lock.describe(current, now), waited))


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("cluster", "state", "play", "wait", "force", "interval", "directory"))
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        try:
            result = super().run(tmp, task_vars)
            args = dict(self._task.args)
            if args.get("state") == "query":  # reads only, in check mode too
                return self._query(result, args, task_vars)
            if self._task.check_mode:
                result.update(changed=False, holder=None, waited=0.0, msg="check mode: the lock is left as it is")
                return result
            me = lock.holder(socket.gethostname(), machine_id(), os.getppid(), getpass.getuser(),
                             str(args.get("play", "deploy")), time.time())
            if args.get("state", "present") == "absent":
                return self._give_back(result, args, me, task_vars)
            return self._take(result, args, me, task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _call(self, args, me, task_vars, replace=None):
        module_args = dict(args, holder=dict(me), replace=replace)
        return self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)

    def _query(self, result, args, task_vars):
        answer = self._execute_module(module_name=MODULE, module_args=args, task_vars=task_vars)
        if answer.get("failed"):
            return answer
        result.update(changed=False, holder=answer["found"], waited=0.0,
                      msg=lock.status_line(args["cluster"], answer["found"], time.time()))
        return result

    def _give_back(self, result, args, me, task_vars):
        answer = self._call(args, me, task_vars)
        if answer.get("failed"):
            return answer
        result.update(changed=False, holder=answer.get("found"), waited=0.0,
                      msg="cluster %s: lock %s" % (args["cluster"], "given back" if answer["released"] else "not held by this play"))
        return result

    def _take(self, result, args, me, task_vars):
        cluster = args["cluster"]
        wait = float(args.get("wait", 1800))
        interval = float(args.get("interval", 5))
        start = time.monotonic()
        replace = None
        announced = False
        while True:
            answer = self._call(args, me, task_vars, replace)
            if answer.get("failed"):
                return answer
            current = answer["found"]
            waited = time.monotonic() - start
            state = lock.verdict(current, me, ansible_process_alive, bool(args.get("force", False)))
            if state in (lock.FREE, lock.MINE):
                result.update(changed=False, holder=current or me, waited=round(waited, 1),
                              msg="cluster %s: locked for %s%s" % (cluster, me["play"], " after %d s" % waited if announced else ""))
                if announced:
                    display.display(result["msg"])
                return result
            if state == lock.STALE and replace != current["token"]:
                display.warning("cluster %s: taking over the lock of %s, whose play no longer runs" % (
                    cluster, lock.describe(current, time.time())))
                replace = current["token"]
                continue
            if waited >= wait:
                result.update(failed=True, holder=current, waited=round(waited, 1), msg=refusal(cluster, current, waited, time.time()))
                return result
            if not announced:
                display.display("cluster %s: waiting up to %d s for the lock, held by %s" % (
                    cluster, wait - waited, lock.describe(current, time.time())))
                announced = True
            time.sleep(interval)
