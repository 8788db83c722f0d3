# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keys that reach a container as files, never as environment, and the guard of the engines' every route.

An environment variable's value shows in ``docker inspect`` to anyone who may ask the Docker engine, and vLLM's own
key check guards /v1, /v2, /inference and /cohere only (``/invocations`` serves completions to anyone). So the keys
that open the cluster go as files: the front door's client, admin and engine keys, which its launcher reads, and the
engines' key, which ``llmops_key_guard.EngineGuard`` (vllm serve ``--middleware``) checks on every path but /health
and /metrics. Each container has its own directory of them on the host (0700, each file 0400, written by deploy
right before the container starts: containers_started), mounted read-only at ``SECRETS_MOUNT``; both readers read a
file again when it changes. A spec's ``secret_env`` record names them in ``files`` ({name: host path}); they are
not in its ``env``. Those a running process may take in place (the engines' key, the front door's client and admin
keys) are its live files: the record carries a digest of each (``digests``, no part of the spec's identity), the look
finds a file whose value differs by it, and deploy rewrites that file without a restart. The record's ``digest``
covers the others (the front door's copy of the engines' key restarts it, in its wave after every engine took it).

The Hugging Face token (HF_TOKEN), which huggingface_hub would read from the environment, goes as a file too: its
``HF_TOKEN_PATH`` names the file it reads when HF_TOKEN is unset (huggingface_hub constants.HF_TOKEN_PATH,
utils/_auth.py _get_token_from_file; vLLM passes no token of its own unless --hf-token is given). Other secrets in
vllm_engine_secret_env stay environment: their readers read nothing else.

The engines' key file holds the key, then the retiring keys (vllm_engine_retiring_api_keys): during a rotation the
engines take both while the front door moves to the new one.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

SECRETS_HOST_DIR = "/etc/llmops/secrets"
SECRETS_MOUNT = "/run/llmops/secrets"  # llmops_key_guard.SECRETS_DIR: the readers' side
# The engines' guard and the wrapper that makes it importable, mounted read-only beside each other.
GUARD_DIR = "/etc/llmops/vllm_engine"
GUARD_MIDDLEWARE = "llmops_key_guard.EngineGuard"
GUARD_WRAPPER = "vllm_guarded.sh"
# The secret source (deploy's secret sources) whose list follows the engines' key in its file, one per line.
RETIRING_SOURCE = "retiring_api_keys"


def digest(values: Any, salt: str) -> str:
    """A digest of secret values that changes when they change and is slow to search (PBKDF2)."""
    material = json.dumps(values, sort_keys=True).encode()
    return hashlib.pbkdf2_hmac("sha256", material, ("llmops-secret:" + salt).encode(), 100000).hex()[:16]


def file_digest(path: str, value: str) -> str:
    """The digest of one secret file's value, salted with its path: what the look compares the host's file with."""
    return digest({"file": value}, path)


def host_dir(container: str) -> str:
    return "%s/%s" % (SECRETS_HOST_DIR, container)


def mount(container: str) -> str:
    """The volume of a container's secret files."""
    return "%s:%s:ro" % (host_dir(container), SECRETS_MOUNT)


def as_files(record: dict[str, Any], container: str, names: list[str]) -> None:
    """Have record's ``names`` go to the container as files rather than environment (with those it has already)."""
    record["files"] = dict(record.get("files") or {}, **{name: "%s/%s" % (host_dir(container), name) for name in names})


def make_live(record: dict[str, Any], values: dict[str, str]) -> list[str]:
    """Have the files of record's names in ``values`` (name -> value) be rewritten without a restart, the running
    process reading them again when they change: each one's own digest goes in the record (``digests``, no part of
    the spec's identity), so that the look finds a file to rewrite; returns their host paths (the spec's live files)."""
    record["digests"] = {name: file_digest(record["files"][name], value) for name, value in sorted(values.items())}
    return sorted(record["files"][name] for name in values)


def live_digests(specs: list[dict[str, Any]]) -> dict[str, str]:
    """{host path: digest} of the specs' live secret files (the look compares the host's files with them)."""
    found = {}
    for spec in specs:
        record = spec.get("secret_env") or {}
        for name, file_digest_ in (record.get("digests") or {}).items():
            found[record["files"][name]] = file_digest_
    return found


def differing(digests: dict[str, str]) -> list[str]:
    """The paths of ``digests`` whose file on this host is missing or holds another value."""
    found = []
    for path, wanted in sorted(digests.items()):
        try:
            with open(path, encoding="utf-8") as text:
                value = text.read()
        except (OSError, UnicodeDecodeError):
            found.append(path)
            continue
        if file_digest(path, value[:-1] if value.endswith("\n") else value) != wanted:
            found.append(path)
    return found


def key_lines(key: str, retiring: list[str] | None) -> str:
    """The engines' key file: the key, then the keys it replaces."""
    return "\n".join([str(key)] + [str(k) for k in retiring or ()])


def split(record: dict[str, Any] | None, values: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(environment values, {host path: file content}) of a container's secret values (secret_values)."""
    paths = (record or {}).get("files") or {}
    env = {name: value for name, value in values.items() if name not in paths}
    return env, {paths[name]: value + "\n" for name, value in values.items() if name in paths}


def guarded_command(command: list[str]) -> list[str]:
    """``vllm serve ...`` run through the wrapper, with the guard as its last --middleware (vLLM adds each in turn
    around the app, so the last is the outermost: nothing answers before it)."""
    return ["sh", "%s/%s" % (GUARD_DIR, GUARD_WRAPPER)] + list(command[1:]) + ["--middleware", GUARD_MIDDLEWARE]


def guard_files(texts: dict[str, str]) -> dict[str, str]:
    """{host path: text} of the guard's files (the vllm_engine role's files/, by name)."""
    return {"%s/%s" % (GUARD_DIR, name): text for name, text in sorted(texts.items())}


def live_contents(record: dict[str, Any] | None, values: dict[str, str]) -> dict[str, str]:
    """{host path: content} of a spec's live key files (those with a digest), from its secret values."""
    record = record or {}
    live = {record["files"][name] for name in record.get("digests") or {}}
    return {path: text for path, text in split(record, values)[1].items() if path in live}
