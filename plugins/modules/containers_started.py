#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: containers_started
short_description: Start a host's containers of a deploy step together, each as its launch spec says
version_added: 0.1.0
description:
  - Looks once at the host's containers of the cluster and decides for each given spec what it needs. None of
    that name - C(docker run). Another spec (its C(llmops.spec-hash) label differs) - stop, remove and run again.
    The same spec, stopped - start. The same spec, up, named in O(restart) - restart. Up with its spec - nothing.
  - The actions of all containers run side by side, so a host with eight ranks to start takes about as long
    as one (one C(community.docker.docker_container) task per container took about 0.9 s each).
  - Environment values reach C(docker run) through the client's environment (C(--env NAME)), never its command
    line. A missing image is pulled by C(docker run).
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: In check mode it only says what each container would need.
  diff_mode:
    support: none
options:
  cluster:
    description: The cluster's name (the C(llmops.cluster) label the host's containers are looked up by).
    type: str
    required: true
  containers:
    description:
      - Launch specs to start, each with C(labels) (the labels it runs with), C(env) holding every value, secrets put
        in, and C(secret_files) (host path to content), written with mode C(0400) in C(0700) directories, atomically,
        right before the container's action (never for a container that needs none).
    type: list
    elements: dict
    required: true
  restart:
    description: Names of containers to restart although they run with their spec.
    type: list
    elements: str
    default: []
  stop_timeout:
    description: Seconds a container stopped for a new spec, or restarted, gets before it is killed.
    type: int
    default: 10
  absent:
    description:
      - Names of containers the deploy's look found absent on the host. When every container of O(containers) is one
        of them and none is to restart, the host's containers are not listed again before C(docker run) (a name
        taken since fails that run on its conflict, and the module with it).
    type: list
    elements: str
    default: []
  dirs:
    description:
      - Directories the cluster's components need on the host (UCM's cache and log, 000), made with their parents and
        mode C(0700) (a KV cache holds what the cluster's requests computed) before anything else of the call; never
        removed. The deploy hands them to a host's first step that starts anything there, rather than spend a task of
        its own on every host.
    type: list
    elements: str
    default: []
  files:
    description:
      - Config files of the host's launch specs (host path to content), written before any container acts, those
        whose content differs only, with mode C(0644), as M(llmops.inference.config_files) writes them. The deploy
        hands them to a host's first step that starts anything there, rather than spend a round of its own on them.
    type: dict
    default: {}
  secret_files:
    description:
      - Key files of the host's specs that their running processes read again when they change (host path to content),
        written with O(files), those whose content differs only, like a container's own C(secret_files).
    type: dict
    default: {}
  firewall:
    description:
      - The host firewall's rules file, its content and its table (C(file), C(text), C(table)), written and loaded
        with C(nft -f) before anything else of the call, its boot unit written and enabled where systemd runs, as the
        host_firewall role's apply does. The deploy hands them to the first step of a
        host where nothing of the cluster ran when it looked (no port of the cluster listens there before that step),
        rather than spend that role's four calls to the host on the path to serving. Not loaded in check mode.
    type: dict
    suboptions:
      file:
        description: The rules file (absolute).
        type: path
        required: true
      text:
        description: The rules, as plan mode renders them.
        type: str
        required: true
      table:
        description: The collection's nftables table the rules hold (its boot unit is named after it).
        type: str
        required: true
"""

EXAMPLES = r"""
- name: Start wave 0 of this host
  llmops.inference.containers_started:
    cluster: pd_a2
    containers: "{{ specs_with_labels_and_env }}"
    restart: [vllm-ascend-decode-dp0]
"""

RETURN = r"""
actions:
  description: What each container needed (create, recreate, start, restart, none), by name.
  returned: always
  type: dict
made_dirs:
  description: Directories of O(dirs) made (or that would be, in check mode).
  returned: always
  type: list
  elements: str
changed_files:
  description: Paths of O(files) written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
firewall_loaded:
  description: Whether O(firewall) was written and loaded (or would be, in check mode).
  returned: always
  type: bool
"""

import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils._files import make_dirs, write_changed, write_secret, write_secrets
from ansible_collections.llmops.inference.plugins.module_utils.operations import _docker_run as docker_run
from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import cluster_containers
from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall

# A docker call that takes longer than this is stuck (a pull of a large image goes on in its own task first).
CALL_TIMEOUT = 1800


def act(docker, container, what, stop_timeout):
    """Runs the calls of one container's action, its secret files written first; returns None or what failed."""
    try:
        for path, text in sorted((container.get("secret_files") or {}).items()):
            write_secret(path, text)
    except OSError as err:
        return "%s: its secret file was not written: %s" % (container["name"], err.strerror)
    env = dict(os.environ, **{name: str(value) for name, value in (container.get("env") or {}).items()})
    for argv in docker_run.calls(docker, container, container.get("labels") or {}, what, stop_timeout):
        try:
            # pylint: disable-next=ansible-bad-function  # threads side by side, each with its own timeout and environment
            done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=CALL_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            return "%s: docker %s did not end within %d s" % (container["name"], argv[1], CALL_TIMEOUT)
        if done.returncode != 0:
            return "%s: docker %s failed: %s" % (container["name"], argv[1], (done.stderr or done.stdout).strip()[-600:])
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            containers=dict(type="list", elements="dict", required=True),
            restart=dict(type="list", elements="str", default=[]),
            stop_timeout=dict(type="int", default=10),
            files=dict(type="dict", default={}),
            secret_files=dict(type="dict", default={}, no_log=True),
            absent=dict(type="list", elements="str", default=[]),
            dirs=dict(type="list", elements="str", default=[]),
            firewall=dict(type="dict", options=dict(file=dict(type="path", required=True), text=dict(type="str", required=True),
                                                    table=dict(type="str", required=True))),
        ),
        supports_check_mode=True,
    )
    docker = module.get_bin_path("docker", required=True)
    rules = module.params["firewall"]
    failed = None if module.check_mode or not rules else firewall.load(module, rules["file"], rules["text"], rules["table"])
    if failed:
        module.fail_json(msg="the host firewall was not loaded, so nothing was started: " + failed)
    made_dirs = make_dirs(module, module.params["dirs"], "0700")
    changed_files, _diffs = write_changed(module, module.params["files"], "0644")
    changed_files += write_secrets(module, module.params["secret_files"])
    containers = module.params["containers"]
    restart = set(module.params["restart"])
    # a first deploy's containers, all found absent by this run's look, need no `docker ps` before their runs (only for
    # speed: each step's start is on the path to serving)
    fresh = containers and not restart and {c["name"] for c in containers} <= set(module.params["absent"])
    current = {} if fresh else cluster_containers(module, docker, module.params["cluster"])
    actions = {c["name"]: docker_run.action(c.get("labels") or {}, current.get(c["name"]), c["name"] in restart) for c in containers}
    todo = [c for c in containers if actions[c["name"]] != "none"]
    if module.check_mode or not todo:
        module.exit_json(changed=bool(todo or changed_files or made_dirs or rules), actions=actions, changed_files=changed_files,
                         made_dirs=made_dirs, firewall_loaded=bool(rules))
    with ThreadPoolExecutor(max_workers=len(todo)) as pool:
        failures = [f for f in pool.map(lambda c: act(docker, c, actions[c["name"]], module.params["stop_timeout"]), todo) if f]
    if failures:
        module.fail_json(msg="; ".join(failures), actions=actions, changed_files=changed_files, made_dirs=made_dirs,
                         firewall_loaded=bool(rules))
    module.exit_json(changed=True, actions=actions, changed_files=changed_files, made_dirs=made_dirs, firewall_loaded=bool(rules))


if __name__ == "__main__":
    main()
