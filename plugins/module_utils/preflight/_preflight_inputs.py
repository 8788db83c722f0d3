# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What preflight asks of a host for its part of the plan: the paths, mounts, model directories and NPUs
node_facts must look at, and what deploy creates itself (so it is not required beforehand)."""

from __future__ import annotations

import typing as t
from collections.abc import Iterable, Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.preflight._npu import visible_devices


def host_mounts(specs: Iterable[LaunchSpec]) -> dict[str, str]:
    """{host path: container path} of the specs' bind mounts."""
    mounts: dict[str, str] = {}
    for spec in specs:
        for volume in spec.get("volumes") or []:
            parts = volume.split(":")
            if len(parts) >= 2 and parts[0].startswith("/"):
                mounts[parts[0]] = parts[1]
    return mounts


def model_dirs(specs: Iterable[LaunchSpec]) -> list[str]:
    """Host directories of the models the engines serve (vllm serve MODEL, through the mounts)."""
    found = set()
    for spec in specs:
        model = spec_meta.model(spec) or ""
        if not spec_meta.is_engine(spec) or not model.startswith("/"):
            continue
        model = model.rstrip("/")
        for source, target in host_mounts([spec]).items():
            target = target.rstrip("/")
            if model == target or model.startswith(target + "/"):
                found.add(source.rstrip("/") + model[len(target):])
    return sorted(found)


def gather_inputs(specs: list[LaunchSpec], created: Iterable[str] = ()) -> dict[str, t.Any]:
    """What node_facts needs for a host: the paths to look at (with the UCM storage, for its free space), the NPUs
    whose fabric to read."""
    return {"paths": sorted(set(wanted_paths(specs, created)) | set(ucm_storage(specs))), "npus": visible_devices(specs),
            "etcd": etcd_endpoints(specs)}


def etcd_endpoints(specs: Iterable[LaunchSpec]) -> list[str]:
    """host:port of the etcd the cluster's HA masters elect their leader in (every host must reach it)."""
    return sorted({endpoint for spec in specs for endpoint in (spec_meta.ha(spec) or {}).get("etcd") or []})


def wanted_paths(specs: list[LaunchSpec], created: Iterable[str] = ()) -> list[str]:
    """Host paths node_facts must look at for a host: devices, mount sources, model directories."""
    paths = {d for spec in specs for d in spec.get("devices") or []}
    paths |= set(host_mounts(specs)) | set(model_dirs(specs))
    return sorted(p for p in paths if not created_by_deploy(p, specs, created))


def created_by_deploy(path: str, specs: Sequence[LaunchSpec], created: Iterable[str]) -> bool:
    """Deploy writes the rendered config files and the secret files and creates the UCM directories itself."""
    files = {f for spec in specs for f in spec.get("files") or {}}
    files |= {f for spec in specs for f in ((spec.get("secret_env") or {}).get("files") or {}).values()}
    return any(path == c or path.startswith(c.rstrip("/") + "/") or c.startswith(path.rstrip("/") + "/")
               for c in list(files) + list(created))


def ucm_storage(specs: Iterable[LaunchSpec]) -> dict[str, int]:
    """{storage backend host path: posix_capacity_gb} of the UCM storage the specs write to (the plan's meta)."""
    found: dict[str, int] = {}
    for spec in specs:
        found.update(spec_meta.ucm_storage(spec))
    return found


def pull_outcomes(registered: dict[str, t.Any] | None) -> dict[str, str]:
    """{image: "pulled" or why not} from the registered result of the pull loop (failed_when false keeps
    ``failed`` false: a pulled image is the one whose result describes it)."""
    outcomes: dict[str, str] = {}
    for result in (registered or {}).get("results") or []:
        if result.get("skipped"):
            continue
        outcomes[result["item"]] = "pulled" if result.get("image") else (result.get("msg") or "failed").splitlines()[0][:200]
    return outcomes
