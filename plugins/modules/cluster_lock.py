#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_lock
short_description: Take or give back the lock that lets one play at a time change a cluster
version_added: 0.1.0
description:
  - The deploy (every seed playbook, heal.yml), stop.yml and teardown.yml take the cluster's lock on its first host
    before they change anything, and give it back when they end, a failed play too. Whoever finds it held waits, up to
    O(wait) seconds, then fails naming the holder (its play, user, controller and process) and the fix.
  - A lock held by a play of this controller whose ansible-playbook process is gone is taken over. One held from
    another controller is taken only with O(force), since this controller cannot see whether that play still runs.
  - The holder's own play finds the lock its own (heal.yml and the deploy it imports take it once).
  - The lock is a file, C(<directory>/<cluster>.lock), naming its holder in JSON.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.action
attributes:
  action:
    support: full
    details: The controller side knows the holder (its host name, machine id and ansible-playbook's process) and waits.
  check_mode:
    support: full
    details: Takes and gives back nothing; C(query) reads the lock as usual.
  diff_mode:
    support: none
options:
  cluster:
    description: The cluster (C(llmops_cluster)).
    type: str
    required: true
  state:
    description: C(present) takes the lock (waiting while another play holds it), C(absent) gives it back,
      C(query) only reads who holds it (status.yml).
    type: str
    choices: [present, absent, query]
    default: present
  play:
    description: What takes it (deploy, heal, stop, teardown), shown to whoever waits.
    type: str
    default: deploy
  wait:
    description: Seconds to wait for a held lock at most (C(llmops_lock_wait)).
    type: int
    default: 1800
  force:
    description: Take the lock whoever holds it (C(llmops_lock_break)), for a holder known to be gone.
    type: bool
    default: false
  interval:
    description: Seconds between looks at a held lock.
    type: float
    default: 5
  directory:
    description: Where the lock files are, on the host.
    type: path
    default: /var/lib/llmops/locks
  holder:
    description: Set by the controller side - who takes or gives back the lock (token, controller, machine, pid,
      user, play, since).
    type: dict
  replace:
    description: Set by the controller side - the token of a holder whose lock may be taken over.
    type: str
notes:
  - Run it once, on the cluster's first host (C(run_once), C(delegate_to)), so every play looks at the same file.
"""

EXAMPLES = r"""
- name: Take the cluster's lock
  llmops.inference.cluster_lock:
    cluster: pd_a2
    play: deploy
    wait: "{{ llmops_lock_wait | default(1800) }}"
  delegate_to: "{{ groups['pd_a2'][0] }}"
  run_once: true

- name: Say who holds the cluster's lock
  llmops.inference.cluster_lock:
    cluster: pd_a2
    state: query
  delegate_to: "{{ groups['pd_a2'][0] }}"
  run_once: true

- name: Give the cluster's lock back
  llmops.inference.cluster_lock:
    cluster: pd_a2
    state: absent
  delegate_to: "{{ groups['pd_a2'][0] }}"
  run_once: true
"""

RETURN = r"""
holder:
  description: Who holds the lock after the call (null when given back or free) - token, controller, machine, pid,
    user, play, since.
  returned: always
  type: dict
waited:
  description: Seconds waited for it.
  returned: always
  type: float
msg:
  description: One line saying what happened to the lock.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.operations import _lock as lock


def main():
    # The host's side, called by the action plugin: one try to take (or give back, or read) the lock, no waiting.
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            state=dict(type="str", choices=["present", "absent", "query"], default="present"),
            play=dict(type="str", default="deploy"),
            wait=dict(type="int", default=1800),
            force=dict(type="bool", default=False),
            interval=dict(type="float", default=5.0),
            directory=dict(type="path", default=lock.DEFAULT_DIR),
            holder=dict(type="dict"),
            replace=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    path = lock.lock_path(params["directory"], params["cluster"])
    if params["state"] == "query":
        module.exit_json(changed=False, found=lock.read(path))
    if not params["holder"]:
        module.fail_json(msg="cluster_lock needs its controller side (the action plugin), which names the holder")
    if module.check_mode:
        module.exit_json(changed=False, taken=False, released=False, found=None)
    given = params["holder"]
    me = lock.holder(given["controller"], given["machine"], int(given["pid"]), given["user"], given["play"], float(given["since"]))
    if params["state"] == "absent":
        released = lock.release(path, me["token"])
        module.exit_json(changed=False, released=released, found=lock.read(path))
    found = lock.take(path, me, params["replace"])
    module.exit_json(changed=False, taken=found is None, found=found)


if __name__ == "__main__":
    main()
