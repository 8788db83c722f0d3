# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The log bundle of a cluster: what goes in, where, and what is masked on the way."""

from __future__ import annotations

import json
import os
import re
import typing as t
from collections.abc import Iterable, Mapping

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import SECRET_PLACEHOLDER, looks_secret
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

# Host tools whose output an NPU cluster's support case needs; skipped where the tool is absent.
NPU_SNAPSHOTS = (("npu-smi-info.txt", ["npu-smi", "info"]),)
HCCN_SNAPSHOTS = (("link", ["-link", "-g"]), ("ip", ["-ip", "-g"]), ("net_health", ["-net_health", "-g"]), ("tls", ["-tls", "-g"]))


def mask_env(entries: Iterable[str] | None) -> list[str]:
    """["NAME=value"] with the values of secret-looking names replaced."""
    masked = []
    for entry in entries or []:
        name, sep, value = entry.partition("=")
        masked.append(name + sep + (SECRET_PLACEHOLDER if sep and looks_secret(name) and value else value))
    return masked


def mask_inspect(text: str) -> str:
    """`docker inspect` JSON with the secret-looking env values masked (Config.Env)."""
    try:
        containers = json.loads(text)
    except ValueError:
        return text
    for container in containers if isinstance(containers, list) else []:
        config = container.get("Config") or {}
        if "Env" in config:
            config["Env"] = mask_env(config["Env"])
    return json.dumps(containers, indent=2, sort_keys=True) + "\n"


def secret_strings(sources: Mapping[str, t.Any]) -> list[str]:
    """Every secret value of a cluster: all of vllm_engine_secret_env, the values of secret-looking
    names in vllm_engine_env / vllm_engine_role_env, the engines' retiring keys and the front door's keys (``sources``
    as the playbooks pass them)."""
    values = [str(v) for v in (sources.get("secret_env") or {}).values()]
    plain = [sources.get("env") or {}] + list((sources.get("role_env") or {}).values())
    values += [str(v) for env in plain for name, v in (env or {}).items() if looks_secret(name)]
    values += [str(key) for keys in (sources.get("front_door") or {}).values() for key in keys or ()]
    values += [str(key) for key in sources.get("retiring_api_keys") or ()]
    return sorted(set(values))


def redact(text: str, secrets: Iterable[str]) -> str:
    """The text with every secret value replaced (an engine may print its env or its command line)."""
    for value in sorted((s for s in secrets if s and len(s) >= 4), key=len, reverse=True):
        text = text.replace(value, SECRET_PLACEHOLDER)
    return text


def merged_log(stdout: str, stderr: str) -> str:
    """Both streams of `docker logs --timestamps`, in time order (each line starts with its RFC 3339 time)."""
    lines = [line for line in stdout.splitlines() + stderr.splitlines() if line]
    return "\n".join(sorted(lines, key=lambda line: line.split(" ", 1)[0])) + ("\n" if lines else "")


def safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def safe_part(name: str) -> str:
    """One name in the bundle: safe_name, with a leading dot escaped ("..", ".ssh" become "_..", "_.ssh")."""
    name = safe_name(name) or "_"
    return "_" + name if name.startswith(".") else name


def bundle_path(path: str) -> str:
    """Where an entry a host returned goes in the bundle: each part of ``path`` a safe_part, "." dropped, so nothing a
    host returns lands outside the bundle's root."""
    return "/".join(safe_part(part) for part in re.split(r"[/\\]+", path) if part not in ("", ".")) or "_"


def write_private(root: str, relative: str, text: str) -> None:
    """Writes ``text`` to root/relative (a bundle_path) with mode 0600, making its directories 0700 under ``root``, which
    this run made: a name that exists already, a symlink among them, fails rather than is followed."""
    directory = root
    for part in relative.split("/")[:-1]:
        directory = os.path.join(directory, part)
        if not os.path.isdir(directory) or os.path.islink(directory):
            os.mkdir(directory, 0o700)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    with os.fdopen(os.open(os.path.join(root, relative), flags, 0o600), "w", encoding="utf-8") as out:
        out.write(text)


def plan_entries(specs: Iterable[LaunchSpec]) -> dict[str, str]:
    """{bundle path: text}: each launch spec (secrets already masked) and each rendered config file."""
    entries: dict[str, str] = {}
    for spec in specs:
        host = safe_part(spec["host"])
        entries["plan/%s/%s.json" % (host, safe_part(spec["name"]))] = json.dumps(spec, indent=2, sort_keys=True) + "\n"
        for path, content in (spec.get("files") or {}).items():
            entries["plan/%s/files/%s" % (host, bundle_path(path))] = content
    return entries


def manifest(cluster: str, created: str, hosts: list[str], entries: Mapping[str, str], problems: list[str],
             specs: Iterable[LaunchSpec] = ()) -> str:
    """What the bundle holds and what could not be collected; which container is whose (role, instance, DP ranks), so
    that a support case on a cluster of many instances finds one instance's logs."""
    return json.dumps({
        "cluster": cluster, "created": created, "hosts": hosts,
        "containers": {"%s/%s" % (safe_part(spec["host"]), spec["name"]): {
            "kind": spec_meta.kind(spec), "role": spec_meta.role(spec), "instance": spec_meta.instance(spec),
            "dp_ranks": spec_meta.of(spec).get("dp_ranks")} for spec in specs},
        "files": {path: len(text.encode()) for path, text in sorted(entries.items())},
        "problems": problems,
    }, indent=2, sort_keys=True) + "\n"
