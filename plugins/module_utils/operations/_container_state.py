# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The running containers of a cluster on one host, compared with its launch specs.

Pure functions over what `docker ps -a --format '{{json .}}'` prints, so deploy mode can decide
in one look per host which containers to start, and leave every other one alone.
"""

from __future__ import annotations

import json
import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import identity
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

CLUSTER_LABEL = "llmops.cluster"
HASH_LABEL = "llmops.spec-hash"
POLICY_FORMAT = "{{.Name}}\t{{.HostConfig.RestartPolicy.Name}}"
# A container in one of these states is (being) up: nothing to start.
UP_STATES = ("running", "restarting")


def ps_command(docker: str, cluster: str, fmt: str) -> list[str]:
    """`docker ps` of every container (running or not) labelled with the cluster, one line per container in fmt."""
    return [docker, "ps", "-a", "--no-trunc", "--filter", "label=%s=%s" % (CLUSTER_LABEL, cluster), "--format", fmt]


def cluster_containers(module: t.Any, docker: str, cluster: str) -> dict[str, dict[str, t.Any]]:
    """parse_ps of the host's containers of the cluster, in one docker call; fails the module when docker ps does."""
    rc, out, err = commands.run(module, ps_command(docker, cluster, "{{json .}}"))
    if rc != 0:
        module.fail_json(msg="docker ps failed: %s" % err.strip())
    return parse_ps(out)


def parse_ps(text: str) -> dict[str, dict[str, t.Any]]:
    """{name: {"id", "state", "labels", "status"}} from `docker ps --format '{{json .}}'` lines."""
    found: dict[str, dict[str, t.Any]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        entry = json.loads(line)
        labels: dict[str, str] = {}
        for item in (entry.get("Labels") or "").split(","):
            key, _sep, value = item.partition("=")
            if key:
                labels[key] = value
        for name in entry.get("Names", "").split(","):
            found[name.lstrip("/")] = {"id": entry.get("ID", ""), "state": entry.get("State", ""), "labels": labels,
                                       "status": entry.get("Status", "")}
    return found


def compare(specs: list[LaunchSpec], hashes: dict[str, str], running: dict[str, dict[str, t.Any]], changed_files: Iterable[str] = (),
            neighbours: Iterable[str] = ()) -> dict[str, t.Any]:
    """Each spec's status against the host's containers.

    ``hashes`` maps spec name to its spec hash. Returns {"status": {name: status}, "start": names to
    create or start, "restart": names to restart although their spec is the same (a config file they
    mount was rewritten on the host; not a live file, which the running process learns otherwise), "extra": the
    cluster's containers no spec of the host, nor of its ``neighbours`` (other inventory hosts on its machine), names}. Status:
    ``ok`` (up, same spec), ``changed`` (another spec, or a mounted config file rewritten),
    ``stopped`` (same spec, not up), ``missing``.
    """
    status: dict[str, str] = {}
    restart: list[str] = []
    rewritten = set(changed_files)
    for spec in specs:
        name = spec["name"]
        current = running.get(name)
        if current is None:
            status[name] = "missing"
            continue
        same_spec = current["labels"].get(HASH_LABEL) == hashes[name]
        if not same_spec:
            status[name] = "changed"
        elif rewritten & set(identity(spec).get("files") or {}):  # a live file (front door members) restarts nothing
            status[name] = "changed"
            restart.append(name)
        elif current["state"] not in UP_STATES:
            status[name] = "stopped"
        else:
            status[name] = "ok"
    return {
        "status": status,
        "start": [name for name, value in status.items() if value != "ok"],
        "restart": restart,
        "running": [name for name in status if name in running and running[name]["state"] in UP_STATES],
        "extra": sorted(name for name in running if name not in status and name not in set(neighbours)),
    }


def parse_policies(text: str) -> dict[str, str]:
    """{name: RestartPolicy.Name} from `docker inspect -f POLICY_FORMAT` lines ("no", or "" on older engines, when it
    has none)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, policy = line.strip(" \r").partition("\t")
        if sep:
            found[name.lstrip("/")] = policy
    return found


def parse_inspect(text: str) -> dict[str, dict[str, t.Any]]:
    """{name: {"started_at", "restart_count", "image"}} from `docker inspect -f INSPECT_FORMAT` lines."""
    found: dict[str, dict[str, t.Any]] = {}
    for line in text.splitlines():
        parts = line.strip().split("\t")
        if len(parts) == 4:
            found[parts[0].lstrip("/")] = {"started_at": parts[1], "restart_count": int(parts[2] or 0), "image": parts[3]}
    return found


INSPECT_FORMAT = "{{.Name}}\t{{.State.StartedAt}}\t{{.RestartCount}}\t{{.Config.Image}}"
