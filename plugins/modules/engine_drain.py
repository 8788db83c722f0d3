#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: engine_drain
short_description: Wait until the engines of a start wave hold no request, before they stop
version_added: 0.1.0
description:
  - vLLM aborts the requests it holds when it gets SIGTERM (its C(--shutdown-timeout) defaults to 0).
    Before stop mode stops a wave of engines, this waits until every API engine of the wave shows no
    running or waiting request on C(/metrics) (C(vllm:num_requests_running), C(vllm:num_requests_waiting)),
    or until the timeout.
  - An engine whose C(/metrics) does not answer within 5 seconds counts as busy (a loaded engine can be
    slow to answer), and is read again.
  - An API engine counts the requests of every DP rank behind it, so the headless ranks of its group are
    covered. An engine that refuses the connection or cannot be reached, or shows neither gauge, holds
    nothing to wait for.
  - With O(targets) instead, it waits for the given C(/metrics) URLs, of the members deploy took out of the front
    door, a rolled instance's or a removed one's.
  - Never fails; at the timeout it warns, naming the engines that still hold requests.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.wait
attributes:
  check_mode:
    support: full
    details: In check mode nothing stops, so nothing is waited for.
options:
  specs:
    description: The cluster's launch specs; C(host), C(name), C(wave) and C(meta) are read. Required without O(targets).
    type: list
    elements: dict
  wave:
    description: The start wave about to stop. Required with O(specs).
    type: int
  targets:
    description: Name to C(/metrics) URL of the engines to wait for, instead of O(specs) and O(wave).
    type: dict
  timeout:
    description: Seconds to wait at most; 0 does not wait.
    type: int
    default: 60
  interval:
    description: Seconds between readings.
    type: float
    default: 0.5
"""

EXAMPLES = r"""
- name: Let the engines of wave 1 finish their requests
  llmops.inference.engine_drain:
    specs: "{{ _llmops_cluster_specs }}"
    wave: 1
    timeout: 60
  run_once: true
"""

RETURN = r"""
first:
  description:
    - Requests each API engine of the wave held when the wait began (host/container -> count); -1 for an
      engine that did not answer in time, null for one not there or showing no gauge.
  returned: always
  type: dict
left:
  description: The engines still holding requests when the wait ended (empty when drained).
  returned: always
  type: dict
waited:
  description: Seconds waited.
  returned: always
  type: float
msg:
  description: One line saying what was in flight and whether it finished.
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils.operations import _drain as drain

# Seconds one /metrics reading may take; an engine slower than this is read again, as busy.
READ_TIMEOUT = 5


def read(urls):
    return {name: drain.reading(http_get, url, READ_TIMEOUT) for name, url in urls.items()}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            specs=dict(type="list", elements="dict"),
            wave=dict(type="int"),
            targets=dict(type="dict"),
            timeout=dict(type="int", default=60),
            interval=dict(type="float", default=0.5),
        ),
        required_one_of=[("specs", "targets")],
        mutually_exclusive=[("specs", "targets")],
        required_together=[("specs", "wave")],
        supports_check_mode=True,
    )
    urls = module.params["targets"] or drain.drain_targets(module.params["specs"], module.params["wave"])
    if module.check_mode or not urls:
        module.exit_json(changed=False, first={}, left={}, waited=0.0,
                         msg="check mode: nothing stops" if urls else "no API engine in this wave")
    start = time.monotonic()
    first = read(urls)
    left = drain.busy(first)
    while left and time.monotonic() - start < module.params["timeout"]:
        time.sleep(module.params["interval"])
        left = drain.busy(read(urls))
    waited = time.monotonic() - start
    message = drain.summary(first, left, waited, module.params["timeout"])
    if left:
        module.warn(message)
    module.exit_json(changed=False, first=first, left=left, waited=round(waited, 1), msg=message)


if __name__ == "__main__":
    main()
