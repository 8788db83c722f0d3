# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy run (re)starts, in which steps, and why; and what changed in a container's spec.

Three facts of a vLLM cluster shape the steps (issue 8):
- a DP group only initialises when all its ranks run, and restarting one rank of a running group
  does not heal it: when any rank of a group is missing, stopped or changed, the whole group
  restarts, on every host;
- a service started before the engines (the Mooncake master, the Memcache meta service) keeps
  what the engines registered in memory only (Mooncake #2246): when it restarts, every engine
  started after it restarts too;
- a group whose containers all run and only changed spec (a new image, a new flag) is rolled:
  one group at a time in start order, each waited for before the next, so the others keep serving.
Everything else that must start in a wave starts together, as on a first deploy.
"""

from __future__ import annotations

import base64
import hashlib
import json

from ansible_collections.llmops.inference.plugins.module_utils._launch_spec import is_engine

# The label that records the spec a container was started with, so a later run can name what changed.
RECORD_LABEL = "llmops.spec"
RECORD_KEYS = ("image", "command", "env", "devices", "gpus", "volumes", "network_mode", "ipc_mode", "privileged",
               "shm_size", "files", "secret_env")
UNSET = "(unset)"


def dp_group(spec):
    """A DP group is named by its coordinator (address and RPC port); any other container is its own group."""
    command = spec.get("command") or []
    address, port = _flag(command, "--data-parallel-address"), _flag(command, "--data-parallel-rpc-port")
    return "dp %s:%s" % (address, port) if address and port else spec["name"]


def spec_record(spec):
    """The parts of a spec a container runs with; file contents as digests (the label stays small)."""
    record = {key: spec.get(key) for key in RECORD_KEYS}
    record["files"] = {path: hashlib.sha256(content.encode()).hexdigest()[:12] for path, content in (spec.get("files") or {}).items()}
    record["secret_env"] = (spec.get("secret_env") or {}).get("digest")
    return record


def encode_record(spec):
    """The RECORD_LABEL value: base64 of compact JSON (docker ps joins labels with commas)."""
    return base64.b64encode(json.dumps(spec_record(spec), sort_keys=True, separators=(",", ":")).encode()).decode()


def decode_record(text):
    try:
        return json.loads(base64.b64decode(text.encode(), validate=True).decode())
    except (ValueError, TypeError):
        return None


def command_items(command):
    """[(key, value)] of an argv: the words before the first flag, then each --flag with its values."""
    items, index = [], 0
    while index < len(command) and not command[index].startswith("--"):
        index += 1
    items.append(("command", " ".join(command[:index])))
    while index < len(command):
        flag, index = command[index], index + 1
        values = []
        while index < len(command) and not command[index].startswith("--"):
            values.append(command[index])
            index += 1
        items.append((flag, " ".join(values) if values else "(set)"))
    return items


def record_lines(record):
    """One line per setting, sorted within each kind: what --diff shows for a container."""
    lines = ["image: %s" % record.get("image")]
    lines += ["%s %s" % item for item in command_items(record.get("command") or [])]
    lines += ["env %s=%s" % item for item in sorted((record.get("env") or {}).items())]
    lines += ["secret env digest: %s" % record["secret_env"]] if record.get("secret_env") else []
    lines += ["volume %s" % v for v in sorted(record.get("volumes") or [])]
    lines += ["device %s" % d for d in sorted(record.get("devices") or [])]
    lines += ["gpus %s" % ",".join(record["gpus"])] if record.get("gpus") else []
    lines += ["file %s (sha256 %s)" % item for item in sorted((record.get("files") or {}).items())]
    for key in ("network_mode", "ipc_mode", "privileged", "shm_size"):
        if record.get(key) not in (None, False, ""):
            lines.append("%s: %s" % (key, record[key]))
    return lines


def spec_changes(old, new):
    """What differs between the record a container was started with and the spec the plan wants,
    one short line per setting (the flag, env var, mount or image), like kolla-ansible names them."""
    if old is None:
        return ["spec changed (the container records no earlier spec)"]
    changes = []
    if old.get("image") != new.get("image"):
        changes.append("image: %s -> %s" % (old.get("image"), new.get("image")))
    changes += _mapping_changes("", dict(_multi(command_items(old.get("command") or []))),
                                dict(_multi(command_items(new.get("command") or []))))
    changes += _mapping_changes("env ", old.get("env") or {}, new.get("env") or {})
    if old.get("secret_env") != new.get("secret_env"):
        changes.append("secret env: value changed")
    for key, what in (("volumes", "volume"), ("devices", "device")):
        before, after = set(old.get(key) or []), set(new.get(key) or [])
        changes += ["%s added: %s" % (what, v) for v in sorted(after - before)]
        changes += ["%s removed: %s" % (what, v) for v in sorted(before - after)]
    changes += _mapping_changes("file ", old.get("files") or {}, new.get("files") or {}, values=False)
    for key in ("gpus", "network_mode", "ipc_mode", "privileged", "shm_size"):
        if old.get(key) != new.get(key):
            changes.append("%s: %s -> %s" % (key, old.get(key), new.get(key)))
    return changes or ["spec changed"]


def _multi(items):
    """A flag given twice keeps both values."""
    seen = {}
    for key, value in items:
        seen[key] = value if key not in seen else seen[key] + " | " + value
    return seen.items()


def _mapping_changes(prefix, before, after, values=True):
    changes = []
    for key in list(before) + [k for k in after if k not in before]:
        old, new = before.get(key, UNSET), after.get(key, UNSET)
        if old != new:
            changes.append("%s%s: %s" % (prefix, key, "%s -> %s" % (_short(old), _short(new)) if values else
                                         "added" if old == UNSET else "removed" if new == UNSET else "content changed"))
    return changes


def _short(value, limit=120):
    return value if len(value) <= limit else value[:limit - 3] + "..."


def launch_steps(states, specs, waves):
    """The steps of a deploy run: what each starts and restarts, what it waits for, and why.

    ``states``: {host: container_state result}, with ``status`` (ok, changed, stopped, missing),
    ``restart`` (same spec, mounted config file rewritten), ``running`` and ``changes`` ({name: [what
    changed]}). ``specs``: every launch spec of the cluster. ``waves``: the start waves in order.

    Returns {"steps": [{"wave", "start", "restart", "wait", "rolling"}], "why": {name: reason}, "lines":
    one printable line per container started}: a
    wave's first step starts whatever must start and waits for the whole wave; each rolled group
    then gets a step of its own.
    """
    status, running, why, rewritten = {}, set(), {}, set()
    for spec in specs:
        state = states.get(spec["host"]) or {}
        name = spec["name"]
        status[name] = (state.get("status") or {}).get(name, "missing")
        if name in (state.get("restart") or []):
            status[name] = "changed"
            rewritten.add(name)
            why[name] = "a config file it mounts was rewritten"
        elif status[name] == "changed":
            why[name] = "; ".join((state.get("changes") or {}).get(name) or ["spec changed"])
        elif status[name] in ("missing", "stopped"):
            why[name] = "not running (%s)" % status[name]
        if name in (state.get("running") or []):
            running.add(name)
    groups = {}
    for spec in specs:
        groups.setdefault(dp_group(spec), []).append(spec)
    touched = {key for key, members in groups.items() if any(status[m["name"]] != "ok" for m in members)}
    # a group that is down, or whose members disagree, cannot keep serving: it is recovered, not rolled
    rolling = {key for key in touched if all(m["name"] in running and status[m["name"]] != "ok" for m in groups[key])}
    for key in touched:
        first = next(m["name"] for m in groups[key] if status[m["name"]] != "ok")
        for member in groups[key]:
            if member["name"] not in why:
                why[member["name"]] = "restarted with its DP group (%s: %s)" % (first, why[first])
    _engines_after_services(specs, groups, touched, rolling, why)
    steps = []
    for wave in waves:
        in_wave = [spec for spec in specs if spec["wave"] == wave]
        first = [s["name"] for s in in_wave if dp_group(s) in touched and dp_group(s) not in rolling]
        steps.append(_step(wave, first, [s["name"] for s in in_wave], status, rewritten, False))
        for key in _ordered(dp_group(s) for s in in_wave):
            if key in rolling:
                names = [m["name"] for m in groups[key]]
                steps.append(_step(wave, names, names, status, rewritten, True))
    host = {spec["name"]: spec["host"] for spec in specs}
    lines = ["step %d (wave %d%s): %s on %s: %s" % (number, step["wave"], ", rolled" if step["rolling"] else "", name, host[name], why[name])
             for number, step in enumerate(steps, 1) for name in step["start"]]
    return {"steps": steps, "why": why, "lines": lines}


def _engines_after_services(specs, groups, touched, rolling, why):
    """A restarted service restarts every engine started after it (they registered with it)."""
    services = [s for s in specs if dp_group(s) in touched and not is_engine(s)]
    for service in services:
        for key, members in groups.items():
            engines = [m for m in members if m["wave"] > service["wave"] and is_engine(m)]
            if not engines:
                continue
            touched.add(key)
            rolling.discard(key)
            for member in engines:
                why.setdefault(member["name"], "restarted after %s (%s): engines register with it" % (service["name"], why[service["name"]]))


def _step(wave, start, wait, status, rewritten, rolling):
    """A container up with its spec is restarted; a changed one is recreated (docker_container sees its label)."""
    return {"wave": wave, "start": start, "restart": [name for name in start if status[name] == "ok" or name in rewritten],
            "wait": wait, "rolling": rolling}


def _ordered(keys):
    seen = []
    for key in keys:
        if key not in seen:
            seen.append(key)
    return seen


def _flag(command, flag):
    return command[command.index(flag) + 1] if flag in command and command.index(flag) + 1 < len(command) else None
