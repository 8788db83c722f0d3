#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_ready
short_description: Wait until containers described by launch specs are ready
version_added: 0.1.0
description:
  - Polls every container of a launch wave on the host until each passes its readiness probe.
  - "An C(http) probe needs HTTP 200; for a C(/v1/models) URL the answer must also list the
    served model name (C(--served-model-name) of the spec's command, else the model argument).
    A C(log) probe (a regular expression) needs a matching line in the container's log (followed as it
    comes, C(docker logs --follow)),
    a C(tcp) probe (HOST:PORT) an open port."
  - Fails at once, with the last log lines, when a container it waits for or watches is not
    running (exited, dead or missing), and at the timeout with the log lines of every container
    still not ready.
  - "Its action plugin waits in short slices: between them it prints progress (which containers
    and DP ranks are still loading) and ends the wait when the wait of another host of the same
    run failed, so a container that dies anywhere fails the whole play within seconds."
  - Uses the docker CLI of the host.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.action
  - llmops.inference.attributes.wait
attributes:
  action:
    support: full
    details: The action plugin slices the wait, prints progress and stops when another host's wait failed.
  check_mode:
    support: full
    details: In check mode nothing was started, so nothing is waited for.
options:
  containers:
    description: Launch specs; C(name), C(ready) and C(command) are read.
    type: list
    elements: dict
    required: true
  watch:
    description: Launch specs of containers already ready (earlier waves); waiting fails when one stops running.
    type: list
    elements: dict
    default: []
  timeout:
    description: Seconds to wait for all of them.
    type: int
    default: 3600
  interval:
    description:
      - Seconds between probe rounds of the HTTP and TCP probes, and of the log probes, which read the log docker
        streams to the module. The containers' states, each a docker CLI call, are looked at every 0.5 s at most.
    type: float
    default: 0.2
  slice:
    description:
      - Seconds after which the module returns with the containers still C(pending) instead of
        waiting on; 0 waits until all are ready or the timeout. The action plugin sets it.
    type: int
    default: 0
  log_lines:
    description: Log lines included in a failure.
    type: int
    default: 40
  progress_interval:
    description: Seconds between progress lines while waiting (action plugin); 0 prints none.
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Wait for the decode ranks
  llmops.inference.container_ready:
    containers: "{{ _llmops_cluster_specs | selectattr('host', 'eq', inventory_hostname) | selectattr('wave', 'eq', 1) }}"
    timeout: 1800
"""

RETURN = r"""
ready:
  description: Seconds each container took to become ready, by name.
  returned: success
  type: dict
pending:
  description: Containers not ready yet when a slice ended.
  returned: success
  type: list
  elements: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.operations._readiness import Docker, probe, reads_logs

# Seconds between looks at the containers' states: each is a docker CLI call, while an HTTP probe of a port is nearly
# free, so a ready server is noticed within the probe interval, an exited container within this. A log probe (a
# headless DP rank is ready by its log) reads the log docker streams to the module as it comes, each interval.
DOCKER_EVERY = 0.5


def main():
    module = AnsibleModule(
        argument_spec=dict(
            containers=dict(type="list", elements="dict", required=True),
            watch=dict(type="list", elements="dict", default=[]),
            timeout=dict(type="int", default=3600),
            interval=dict(type="float", default=0.2),
            slice=dict(type="int", default=0),
            log_lines=dict(type="int", default=40),
            progress_interval=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    if module.check_mode:
        module.exit_json(changed=False, ready={}, pending=[])
    docker = Docker(module)
    params = module.params
    start = time.monotonic()
    pending = {spec["name"]: spec for spec in params["containers"]}
    watched = [spec["name"] for spec in params["watch"]]
    ready = {}
    for name, spec in pending.items():
        if reads_logs(spec):
            docker.follow(name)
    looked = None  # when the containers' states were last looked at
    while True:
        now = time.monotonic()
        # HTTP and TCP probes every interval; what needs the Docker CLI every DOCKER_EVERY at most
        look = looked is None or now - looked >= DOCKER_EVERY
        if look:
            looked = now
            states = docker.states(list(pending) + watched)
            for name, state in sorted(states.items()):
                if not state.startswith("running"):
                    what = "before it was ready" if name in pending else "after it was ready"
                    module.fail_json(msg="container %s is %s %s; its last log lines:\n%s"
                                     % (name, state, what, docker.logs(name, params["log_lines"])), container=name)
        for name, spec in list(pending.items()):
            # a log probe reads the followed log (free); one the follow ended on reads it with a docker call
            if (look or not reads_logs(spec) or docker.following(name)) and probe(docker, spec):
                ready[name] = round(time.monotonic() - start, 1)
                del pending[name]
        elapsed = time.monotonic() - start
        if not pending or (params["slice"] and elapsed >= params["slice"] and elapsed < params["timeout"]):
            break
        if elapsed > params["timeout"]:
            logs = "\n".join("--- %s (%s)\n%s" % (name, spec.get("ready"), docker.logs(name, params["log_lines"]))
                             for name, spec in pending.items())
            module.fail_json(msg="not ready after %d s: %s\n%s" % (params["timeout"], ", ".join(sorted(pending)), logs),
                             pending=sorted(pending))
        time.sleep(params["interval"])
    module.exit_json(changed=False, ready=ready, pending=sorted(pending))


if __name__ == "__main__":
    main()
