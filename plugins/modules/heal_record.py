#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: heal_record
short_description: Decide whether heal.yml acts on an alert, and keep the record of what it did
version_added: 0.1.0
description:
  - Keeps one record per cluster, C(<state_dir>/<cluster>.json), of heal.yml's attempts (their group, cause, time and
    result), and beside it C(<cluster>.prom), the record as Prometheus text (C(llmops_heal_attempts_total),
    C(llmops_heal_gave_up)), which the rulebook's event source serves at C(/metrics).
  - With O(state=start), decides whether to act on O(cause) - not when its group (the alert's instance, else its member
    or container) was healed or tried O(attempts) times within O(window) seconds, nor once healing gave up on it - and
    records the attempt as started. Past the bound, an alert that began (its C(starts_at)) before the group's last
    attempt ended is about a death that attempt saw, so it is not acted on and does not give up on the group. A group
    healing gives up on is left for a person, until removed from the record.
  - With O(state=finish), records the started attempt's O(result). An attempt the next start finds still started was
    cut short by a failed play, and counts as failed.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Decides and reports; writes nothing.
  diff_mode:
    support: none
    details: The record is the history; it is not shown as a diff.
options:
  cluster:
    description: The cluster (C(llmops_cluster)).
    type: str
    required: true
  state_dir:
    description: Where the records are kept (C(llmops_heal_state_dir)).
    type: path
    required: true
  state:
    description: C(start) an attempt, or C(finish) the started one.
    type: str
    choices: [start, finish]
    default: start
  cause:
    description: What the alert says (the event source's C(llmops) event - alert, status, cluster, host, container,
      role, instance, member), for O(state=start).
    type: dict
    default: {}
  attempts:
    description: Attempts per group within O(window) before healing gives up on it.
    type: int
    default: 3
  window:
    description: The window of O(attempts), in seconds.
    type: float
    default: 1800
  result:
    description: For O(state=finish) - C(healed) (the run restarted something), C(nothing to do) or C(failed).
    type: str
    choices: [healed, nothing to do, failed]
"""

EXAMPLES = r"""
- name: Decide whether to heal
  llmops.inference.heal_record:
    cluster: pd_a2
    state_dir: /var/lib/llmops/heal
    cause: "{{ ansible_eda.event.llmops }}"
  register: heal
"""

RETURN = r"""
act:
  description: Whether heal.yml acts (O(state=start)).
  returned: success
  type: bool
group:
  description: The group the cause names.
  returned: success
  type: str
line:
  description: The status line - what heal.yml does, or why not.
  returned: success
  type: str
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils._files import read_text, write_text
from ansible_collections.llmops.inference.plugins.module_utils.operations import _heal as heal

# attempts older than this leave the record (the window and a person's look need less)
KEEP = 7 * 24 * 3600.0


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            state_dir=dict(type="path", required=True),
            state=dict(type="str", choices=["start", "finish"], default="start"),
            cause=dict(type="dict", default={}),
            attempts=dict(type="int", default=3),
            window=dict(type="float", default=1800.0),
            result=dict(type="str", choices=list(heal.RESULTS)),
        ),
        required_if=[("state", "finish", ["result"])],
        supports_check_mode=True,
    )
    params = module.params
    path = os.path.join(params["state_dir"], params["cluster"] + ".json")
    record = heal.loaded(read_text(path), params["cluster"])
    now = time.time()
    if params["state"] == "start":
        decision = heal.decide(record, params["cause"], now, params["attempts"], params["window"])
        if decision.act:
            heal.started(record, decision, params["cause"], now)
        elif decision.gives_up:
            heal.gave_up(record, decision, now)
        answer = dict(act=decision.act, group=decision.group, line=decision.line)
    else:
        heal.finished(record, params["result"], now)
        answer = dict(act=False, group="", line="cluster %s: the heal attempt ended: %s" % (params["cluster"], params["result"]))
    if not module.check_mode:
        os.makedirs(params["state_dir"], mode=0o700, exist_ok=True)
        write_text(path, heal.as_text(heal.pruned(record, now, KEEP)))
        write_text(os.path.join(params["state_dir"], params["cluster"] + ".prom"), heal.metrics(record))
    module.exit_json(changed=not module.check_mode, **answer)


if __name__ == "__main__":
    main()
