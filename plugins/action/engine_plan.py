# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of engine_plan: the planner is pure Python, so it runs inside the worker
instead of as a module process (which cost most of the planning task's time)."""

from __future__ import annotations

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_result

ARGUMENT_SPEC = dict(cluster=dict(type="dict", required=True))


class ActionModule(ActionBase):
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        validated = ArgumentSpecValidator(ARGUMENT_SPEC).validate(self._task.args)
        if validated.error_messages:
            result.update(failed=True, msg="engine_plan: %s" % "; ".join(validated.error_messages))
            return result
        result.update(plan_result(validated.validated_parameters["cluster"]))
        return result
