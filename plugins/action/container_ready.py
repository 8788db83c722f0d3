# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of container_ready: waits in short slices on every host at once.

Between slices it prints which containers (and DP ranks) are still loading, and it stops when
the wait of another host of the same run has failed: each host's wait runs in its own worker, so
a failure is told to the others through a file in the run's local temporary directory
(ansible-playbook makes one per run and removes it at exit). Without this, a DP group whose rank
died on one host kept the other hosts waiting until their timeout (an hour by default).
"""

from __future__ import annotations

import os
import time

from ansible import constants as C
from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

from ansible_collections.llmops.inference.plugins.module_utils.plan._spec_meta import dp_ranks

display = Display()
MODULE = "llmops.inference.container_ready"
# Seconds of one module call: the longest a failure elsewhere goes unnoticed here.
DEFAULT_SLICE = 5


def abort_marker():
    return os.path.join(C.DEFAULT_LOCAL_TMP, "llmops-container-ready-failed")


def progress_line(host, specs, pending, elapsed):
    loading = []
    for spec in specs:
        if spec["name"] in pending:
            ranks = dp_ranks(spec)
            loading.append("%s (DP rank %s)" % (spec["name"], ranks) if ranks else spec["name"])
    return "%s: %d of %d ready after %d s; still loading: %s" % (
        host, len(specs) - len(pending), len(specs), elapsed, ", ".join(loading))


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("containers", "watch", "timeout", "interval", "slice", "log_lines", "progress_interval"))
    _requires_connection = True

    def run(self, tmp=None, task_vars=None):
        try:
            return self._wait(super().run(tmp, task_vars), task_vars)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)

    def _wait(self, result, task_vars):
        args = dict(self._task.args)
        if self._task.check_mode:
            result.update(changed=False, ready={}, pending=[])
            return result
        specs = list(args.get("containers") or [])
        timeout = int(args.get("timeout", 3600))
        progress_every = int(args.get("progress_interval", 30))
        slice_seconds = int(args.get("slice") or min(DEFAULT_SLICE, progress_every or DEFAULT_SLICE))
        host = task_vars.get("inventory_hostname", "?")
        marker = abort_marker()
        start = time.monotonic()
        last_progress = start
        pending = {spec["name"] for spec in specs}
        ready = {}
        while True:
            failed_elsewhere = self._failure_elsewhere(marker)
            if failed_elsewhere:
                result.update(failed=True, pending=sorted(pending), ready=ready,
                              msg="stopped waiting for %s: %s" % (", ".join(sorted(pending)) or "nothing", failed_elsewhere))
                return result
            elapsed = time.monotonic() - start
            module_args = dict(args, containers=[s for s in specs if s["name"] in pending],
                               watch=list(args.get("watch") or []) + [s for s in specs if s["name"] in ready],
                               timeout=max(1, int(timeout - elapsed)), slice=slice_seconds)
            module_args.pop("progress_interval", None)
            answer = self._execute_module(module_name=MODULE, module_args=module_args, task_vars=task_vars)
            if answer.get("failed") or answer.get("unreachable"):
                self._tell_others(marker, host, answer.get("msg", "failed"))
                answer["ready"] = dict(ready, **(answer.get("ready") or {}))
                return answer
            now = time.monotonic()
            for name in answer.get("ready") or {}:
                ready[name] = round(now - start, 1)
            pending = set(answer.get("pending") or ())
            if not pending:
                result.update(changed=False, ready=ready, pending=[])
                return result
            if progress_every and now - last_progress >= progress_every:
                display.display(progress_line(host, specs, pending, now - start))
                last_progress = now

    @staticmethod
    def _failure_elsewhere(marker):
        try:
            with open(marker, encoding="utf-8") as told:
                return told.read()
        except OSError:
            return None

    @staticmethod
    def _tell_others(marker, host, message):
        first_line = message.splitlines()[0] if message else "failed"
        try:
            with open(marker, "x", encoding="utf-8") as out:
                out.write("the wait on host %s failed: %s" % (host, first_line))
        except OSError:  # another host told them first
            pass
