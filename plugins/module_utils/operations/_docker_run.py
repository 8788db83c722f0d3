# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Starting a host's containers of a step together: what each needs and the docker CLI calls that do it.

One ``docker_container`` task per container costs about 0.9 s each, one after another; a step of a host with
eight decode ranks waited seven of them for nothing. containers_started decides each container's action from
one ``docker ps`` (the spec hash label, as docker_container compared it), then runs the actions side by side:

- ``create``: none of that name runs: ``docker run -d`` (the image is pulled when missing, as ``pull: missing``);
- ``recreate``: another spec (hash label differs): ``docker stop`` (with the stop timeout), ``docker rm``, then run;
- ``start``: the same spec, stopped: ``docker start``;
- ``restart``: the same spec, up, but asked to restart (its DP group restarts, a mounted file was rewritten);
- ``none``: up with its spec.

Environment values go through the docker client's own environment (``-e NAME``, no value on its command line),
so no secret reaches a process list.
"""

from __future__ import annotations

import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import HASH_LABEL, UP_STATES
from ansible_collections.llmops.inference.plugins.module_utils.plan import _restart_policy as restart_policy
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec


def action(spec_labels: dict[str, str], current: dict[str, t.Any] | None, restart: bool) -> str:
    """What a container needs: create, recreate, start, restart or none. ``current``: parse_ps's entry or None."""
    if current is None:
        return "create"
    if current["labels"].get(HASH_LABEL) != spec_labels.get(HASH_LABEL):
        return "recreate"
    if current["state"] not in UP_STATES:
        return "start"
    return "restart" if restart else "none"


def run_argv(docker: str, spec: dict[str, t.Any], labels: dict[str, str]) -> list[str]:
    """``docker run`` of a launch spec: detached, with an init process, its labels; env names only (values from the
    client's environment)."""
    argv = [docker, "run", "--detach", "--init", "--name", spec["name"], "--network", spec.get("network_mode") or "host"]
    policy = restart_policy.of(t.cast(LaunchSpec, spec))
    if policy != restart_policy.NEVER:
        argv += ["--restart", policy]
    if spec.get("ipc_mode"):
        argv += ["--ipc", spec["ipc_mode"]]
    if spec.get("privileged"):
        argv.append("--privileged")
    if spec.get("shm_size"):
        argv += ["--shm-size", str(spec["shm_size"])]
    for device in spec.get("devices") or ():
        argv += ["--device", device]
    if spec.get("gpus"):
        argv += ["--gpus", '"device=%s"' % ",".join(str(g) for g in spec["gpus"])]
    for volume in spec.get("volumes") or ():
        argv += ["--volume", volume]
    for name in sorted(spec.get("env") or {}):
        argv += ["--env", name]
    for key, value in sorted(labels.items()):
        argv += ["--label", "%s=%s" % (key, value)]
    command = list(spec.get("command") or [])
    if command:
        argv += ["--entrypoint", command[0]]
    argv.append(spec["image"])
    return argv + command[1:]


def calls(docker: str, spec: dict[str, t.Any], labels: dict[str, str], what: str, stop_timeout: int) -> list[list[str]]:
    """The docker CLI calls of an action, in order."""
    name = spec["name"]
    if what == "create":
        return [run_argv(docker, spec, labels)]
    if what == "recreate":
        return [[docker, "stop", "--time", str(stop_timeout), name], [docker, "rm", name], run_argv(docker, spec, labels)]
    if what == "start":
        return [[docker, "start", name]]
    if what == "restart":
        return [[docker, "restart", "--time", str(stop_timeout), name]]
    return []
