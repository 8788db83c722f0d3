# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a deploy run (re)starts, in which steps, and why; and what changed in a container's spec.

Three facts of a vLLM cluster shape the steps:
- a DP group only initialises when all its ranks run, and restarting one rank of a running group
  does not heal it: when any rank of a group is missing, stopped or changed, the whole group
  restarts, on every host;
- a service started before the engines (the Mooncake master, the Memcache meta service) keeps
  what the engines registered in memory only (Mooncake #2246): when it restarts, every engine
  started after it restarts too; not so for a service in HA (Mooncake masters on etcd, etcd's
  members), whose peers keep serving: it restarts alone, rolled one at a time while it runs;
- a group whose containers all run and only changed spec (a new image, a new flag) is rolled:
  one group at a time in start order, each waited for before the next, so the others keep serving.
Everything else that must start in a wave starts together, as on a first deploy.

A step that restarts every serving instance (DP group) of a role at once stops that role: an outage,
which the play refuses unless accepted. A role with a second instance rolls with one serving while the
other restarts; a group that is already down (a first deploy, a dead rank) is recovered, not an outage.

While another instance of its role serves, an instance that restarts is first taken out of the running front
door (its members: _members), drained, and put back once ready, so no request reaches it while it is down. A
container of the cluster that no spec of the plan names (an instance removed from the inventory) is retired:
its members taken out, drained, then the container removed, before the first step.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import identity
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.plan._spec_meta import dp_group, ha, instance, is_engine, metrics_url, role
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members

# The label that records the spec a container was started with, so a later run can name what changed.
RECORD_LABEL = "llmops.spec"
RECORD_KEYS = ("image", "command", "env", "devices", "gpus", "volumes", "network_mode", "ipc_mode", "privileged",
               "shm_size", "files", "secret_env")
UNSET = "(unset)"


def spec_record(spec: LaunchSpec) -> dict[str, t.Any]:
    """The parts of a spec's identity a container runs with (its live parts left out: the front door's members);
    file contents as digests (the label stays small)."""
    same = identity(spec)
    record = {key: same.get(key) for key in RECORD_KEYS}
    record["files"] = {path: hashlib.sha256(content.encode()).hexdigest()[:12] for path, content in (same.get("files") or {}).items()}
    record["secret_env"] = (same.get("secret_env") or {}).get("digest")
    return record


def encode_record(spec: LaunchSpec) -> str:
    """The RECORD_LABEL value: base64 of compact JSON (docker ps joins labels with commas)."""
    return base64.b64encode(json.dumps(spec_record(spec), sort_keys=True, separators=(",", ":")).encode()).decode()


def decode_record(text: str) -> dict[str, t.Any] | None:
    try:
        record: dict[str, t.Any] = json.loads(base64.b64decode(text.encode(), validate=True).decode())
        return record
    except (ValueError, TypeError):
        return None


def command_items(command: list[str]) -> list[tuple[str, str]]:
    """[(key, value)] of an argv: the words before the first flag, then each --flag with its values."""
    items: list[tuple[str, str]] = []
    index = 0
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


def record_lines(record: dict[str, t.Any]) -> list[str]:
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


def spec_changes(old: dict[str, t.Any] | None, new: dict[str, t.Any]) -> list[str]:
    """What differs between the record a container was started with and the spec the plan wants,
    one short line per setting (the flag, env var, mount or image), like kolla-ansible names them."""
    if old is None:
        return ["spec changed (the container records no earlier spec)"]
    changes: list[str] = []
    if old.get("image") != new.get("image"):
        changes.append("image: %s -> %s" % (old.get("image"), new.get("image")))
    changes += _mapping_changes("", _multi(command_items(old.get("command") or [])), _multi(command_items(new.get("command") or [])))
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


def _multi(items: list[tuple[str, str]]) -> dict[str, str]:
    """A flag given twice keeps both values."""
    seen: dict[str, str] = {}
    for key, value in items:
        seen[key] = value if key not in seen else seen[key] + " | " + value
    return seen


def _mapping_changes(prefix: str, before: dict[str, t.Any], after: dict[str, t.Any], values: bool = True) -> list[str]:
    changes = []
    for key in list(before) + [k for k in after if k not in before]:
        old, new = before.get(key, UNSET), after.get(key, UNSET)
        if old != new:
            changes.append("%s%s: %s" % (prefix, key, "%s -> %s" % (_short(old), _short(new)) if values else
                                         "added" if old == UNSET else "removed" if new == UNSET else "content changed"))
    return changes


def _short(value: str, limit: int = 120) -> str:
    return value if len(value) <= limit else value[:limit - 3] + "..."


def uid(spec: LaunchSpec) -> str:
    """A container's key across the cluster: names repeat on different hosts (dp_a2 runs vllm-ascend on both)."""
    return "%s/%s" % (spec["host"], spec["name"])


class HostStep(t.TypedDict, total=False):
    """What one host does in a step (container names), and the marks of its first step that starts anything there:
    ``first`` (it makes the components' directories), ``files`` (it writes the host's config files) and
    ``firewall`` (it loads the host's firewall table)."""

    stop: list[str]
    start: list[str]
    restart: list[str]
    wait: list[str]
    first: bool
    files: bool
    firewall: bool


class Step(t.TypedDict):
    """One step of a deploy: what it stops, starts (restart: of those, the ones recreated or restarted in place) and
    waits for, per host too; ``out``: the front door members taken out before it starts and put back after ({role:
    [member]}); ``drain``: the /metrics URLs waited for before it starts ({host/name: URL})."""

    wave: int
    rolling: bool
    stop: list[str]
    start: list[str]
    restart: list[str]
    wait: list[str]
    hosts: dict[str, HostStep]
    out: dict[str, list[str]]
    drain: dict[str, str]


class Outage(t.TypedDict):
    step: int
    role: str
    instances: list[str]
    text: str


class Rollout(t.TypedDict):
    """What launch_steps decides (see its docstring for each key)."""

    steps: list[Step]
    why: dict[str, str]
    lines: list[str]
    outages: list[Outage]
    retire: dict[str, list[str]]
    front_door: dict[str, t.Any] | None
    idle: bool
    door_unplanned: bool
    before_steps: dict[str, bool]
    firewall_in_step: list[str]
    beyond_healing: list[str]


@dataclasses.dataclass(frozen=True)
class _Look:
    """What the hosts' looks found of each planned container ({host/name: ...}): its status (ok, changed, stopped,
    missing), whether it runs, why it must (re)start, and whether only a config file it mounts was rewritten."""

    status: dict[str, str]
    running: frozenset[str]
    why: dict[str, str]
    rewritten: frozenset[str]


@dataclasses.dataclass(frozen=True)
class _Restarts:
    """The DP groups a run restarts (touched) and of those the ones rolled one at a time while the rest serve; why
    each container restarts; the engines a restarted service restarts after it, and the wave that stops them."""

    touched: frozenset[str]
    rolling: frozenset[str]
    why: dict[str, str]
    after_services: tuple[LaunchSpec, ...]
    stop_wave: int | None


def launch_steps(states: dict[str, t.Any], specs: list[LaunchSpec], waves: list[int],
                 machines: dict[str, str] | None = None) -> Rollout:
    """The steps of a deploy run: what each starts and restarts, what it waits for, and why.

    ``states``: {host: container_state result}, with ``status`` (ok, changed, stopped, missing),
    ``restart`` (same spec, mounted config file rewritten), ``running``, ``changes`` ({name: [what
    changed]}) and ``ha_roles`` ({name: leader, standby, follower...} of its running services in HA: the leader rolls
    last). ``specs``: every launch spec of the cluster. ``waves``: the start waves in order.

    ``machines``: {host: machine}, for inventory hosts that share one machine (two instances on one server): a
    container one of them plans is no other's to retire. Each state's ``extra`` lists the cluster's containers no
    spec of that host names.

    Returns a Rollout: ``steps`` (Step), ``why`` ({host/name: reason}), ``lines`` (one printable line per container
    stopped or started), ``outages`` (each step that restarts every serving instance of a role), ``retire`` ({host:
    [container]}), ``front_door`` ({host, url, ca, secret_env, members} of the proxy when it runs with its planned
    spec, else None), ``idle`` (nothing to do: no step, nothing to retire, no config file to rewrite, the front door
    lists the plan's members, as its host's look read them), ``door_unplanned`` (the running front door may list
    members the plan does not have), ``before_steps`` ({host: whether it has a config file to rewrite that no step's
    start writes, a container to retire or front door members to take out first}) and ``firewall_in_step`` (the hosts
    whose firewall table the call of their first step loads), ``beyond_healing`` (what the run does besides restarting
    dead containers: heal.yml refuses it). A wave's first step starts whatever must start and
    waits for the whole wave but the groups to roll; each rolled group then gets a step of its own, which waits for it.
    """
    look = _look(states, specs)
    groups = _groups(specs)
    restarts = _restarts(look, groups, specs)
    retire = _retired(states, specs, machines or {})
    door = _running_door(specs, look)
    steps, lines, outages = _wave_steps(waves, specs, groups, look, restarts, _leaders(states), door)
    steps = _without_idle_tail(steps)
    unplanned = _door_unplanned(states, door)
    before, marks = _before_steps(states, steps, retire, unplanned)
    steps = [_marked(step, marks.get(index, {})) for index, step in enumerate(steps)]
    lines = _retire_lines(retire) + lines + [outage["text"] for outage in outages]
    found: Rollout = {
        "steps": steps, "why": restarts.why, "lines": lines, "outages": outages, "retire": retire, "front_door": door,
        "idle": not steps and not retire and _settled(states, door), "door_unplanned": unplanned, "before_steps": before,
        "firewall_in_step": sorted(host for step in steps for host, mine in step["hosts"].items() if mine.get("firewall")),
        "beyond_healing": []}
    found["beyond_healing"] = beyond_healing(states, found)
    return found


def _look(states: dict[str, t.Any], specs: list[LaunchSpec]) -> _Look:
    status, running, why, rewritten = {}, set(), {}, set()
    for spec in specs:
        state = states.get(spec["host"]) or {}
        name, key = spec["name"], uid(spec)
        status[key] = (state.get("status") or {}).get(name, "missing")
        if name in (state.get("restart") or []):
            status[key] = "changed"
            rewritten.add(key)
            why[key] = "a config file it mounts was rewritten"
        elif status[key] == "changed":
            why[key] = "; ".join((state.get("changes") or {}).get(name) or ["spec changed"])
        elif status[key] in ("missing", "stopped"):
            why[key] = "not running (%s)" % status[key]
        if name in (state.get("running") or []):
            running.add(key)
    return _Look(status, frozenset(running), why, frozenset(rewritten))


def _groups(specs: list[LaunchSpec]) -> dict[str, list[LaunchSpec]]:
    """The cluster's DP groups by name (any other container is a group of its own), in the specs' order."""
    groups: dict[str, list[LaunchSpec]] = {}
    for spec in specs:
        groups.setdefault(dp_group(spec), []).append(spec)
    return groups


def _restarts(look: _Look, groups: dict[str, list[LaunchSpec]], specs: list[LaunchSpec]) -> _Restarts:
    status, running = look.status, look.running
    touched = {group for group, in_group in groups.items() if any(status[uid(m)] != "ok" for m in in_group)}
    # a group that is down, or whose members disagree, cannot keep serving: it is recovered, not rolled
    rolling = {group for group in touched if all(uid(m) in running and status[uid(m)] != "ok" for m in groups[group])}
    why = dict(look.why)
    for group in _ordered(g for g in groups if g in touched):
        first = next(m for m in groups[group] if status[uid(m)] != "ok")
        for member in groups[group]:
            why.setdefault(uid(member), "restarted with its DP group (%s: %s)" % (first["name"], why[uid(first)]))
    # a service in HA (Mooncake masters electing a leader in etcd, etcd's members) hands over to its peers: the
    # engines follow the leader by themselves and keep what they registered, so none restarts for it
    services = [s for s in specs if dp_group(s) in touched and not is_engine(s) and not ha(s)]
    dependents, affected, reasons = _engines_after_services(services, groups, why)
    return _Restarts(frozenset(touched | affected), frozenset(rolling - affected), {**why, **reasons}, tuple(dependents),
                     min((s["wave"] for s in services), default=None))


def _leaders(states: dict[str, t.Any]) -> set[str]:
    """Each host's services in HA that lead now (container_state's ha_roles): {host/name}."""
    return {"%s/%s" % (host, name) for host, state in states.items()
            for name, now in ((state or {}).get("ha_roles") or {}).items() if now == "leader"}


def _running_door(specs: list[LaunchSpec], look: _Look) -> dict[str, t.Any] | None:
    """The front door when the proxy runs as planned: one about to restart runs other settings (keys, TLS) than its
    spec says, and comes up with the members file anyway."""
    proxy = members.proxy_of(specs)
    if proxy is not None and uid(proxy) in look.running and look.status[uid(proxy)] == "ok":
        door: dict[str, t.Any] | None = members.door_of(specs)
        return door
    return None


def _wave_steps(waves: list[int], specs: list[LaunchSpec], groups: dict[str, list[LaunchSpec]], look: _Look,
                restarts: _Restarts, leaders: set[str], door: dict[str, t.Any] | None) -> tuple[list[Step], list[str], list[Outage]]:
    """The steps of every wave, with a printable line per container each stops, takes out or starts, and the outages.
    Engines restarted for a service are stopped before it restarts: left running, they would register again with the
    new service (Mooncake: their segments), which then hands out space owned by processes about to go (puts fail with
    TRANSFER_FAIL until the master drops them)."""
    touched, rolling, why = restarts.touched, restarts.rolling, restarts.why
    stop = [s for s in restarts.after_services if uid(s) in look.running]
    restarted_for_service = {uid(s) for s in restarts.after_services}
    steps: list[Step] = []
    lines: list[str] = []
    outages: list[Outage] = []
    for wave in waves:
        in_wave = [spec for spec in specs if spec["wave"] == wave]
        first = [s for s in in_wave if dp_group(s) in touched and dp_group(s) not in rolling]
        # a group rolled later still runs its old spec, which the new readiness probe may not fit (a new
        # port, an API key added or removed): it is waited for in its own step, once recreated
        settled = [s for s in in_wave if dp_group(s) not in rolling]
        parts = [(first, settled, False, stop if wave == restarts.stop_wave else [])]
        # services in HA roll their leader last (Mooncake masters, etcd members): one failover, not one per step
        rolled = sorted((group for group in _ordered(dp_group(s) for s in in_wave) if group in rolling), key=lambda g: g in leaders)
        parts += [(groups[group], groups[group], True, []) for group in rolled]
        for start, wait, is_rolled, stopped in parts:
            step = _step(wave, start, wait, look, is_rolled, stopped)
            if door:
                out, drain, taken = _taken_out(start, groups, look.running)
                step = {**step, "out": out, "drain": drain}
                lines += ["step %d (wave %d): take %s out of the front door and let it finish its requests first; put it back "
                          "once ready" % (len(steps) + 1, wave, name) for name in taken]
            steps.append(step)
            outages += _outages(len(steps), start, groups, look.running, restarted_for_service)
            lines += ["step %d (wave %d): stop %s on %s first (it registered with a service that restarts)"
                      % (len(steps), wave, s["name"], s["host"]) for s in stopped]
            lines += ["step %d (wave %d%s): %s on %s: %s" % (len(steps), wave, ", rolled" if is_rolled else "", s["name"], s["host"],
                                                             why[uid(s)]) for s in start]
    return steps, lines, outages


def beyond_healing(states: dict[str, t.Any], rollout: Rollout) -> list[str]:
    """What a run would do besides restarting dead containers (with their DP groups, and the engines after a restarted
    pool service): a container that runs with other settings than planned, one the plan no longer has, a config file
    to rewrite, front door members the plan does not have. Healing (heal.yml) does none of it: a person's deploy does."""
    found = []
    for host, state in sorted(states.items()):
        state = state or {}
        found += ["%s on %s runs with other settings than planned (%s)" % (name, host, "; ".join((state.get("changes") or {}).get(name) or ["its spec"]))
                  for name, value in sorted((state.get("status") or {}).items()) if value == "changed"]
        found += ["%s on %s: its file differs from the plan's" % (path, host) for path in state.get("changed_files") or []]
    found += ["%s on %s is no longer planned" % (name, host) for host, names in sorted(rollout["retire"].items()) for name in names]
    if rollout["door_unplanned"]:
        found.append("the front door may list members the plan does not have")
    return found


def _retire_lines(retire: dict[str, list[str]]) -> list[str]:
    return ["before step 1: retire %s on %s (no spec of the plan names it): the front door's members the plan no longer "
            "has are taken out and drained first" % (name, host) for host, names in sorted(retire.items()) for name in names]


def _marked(step: Step, marks: dict[str, HostStep]) -> Step:
    """The step with each host's marks (first, files, firewall) added to its entry."""
    if not marks:
        return step
    hosts = {host: t.cast(HostStep, {**mine, **marks.get(host, {})}) for host, mine in step["hosts"].items()}
    return {**step, "hosts": hosts}


def _before_steps(states: dict[str, t.Any], steps: list[Step], retire: dict[str, list[str]],
                  unplanned: bool) -> tuple[dict[str, bool], dict[int, dict[str, HostStep]]]:
    """({host: whether it has work before the steps}, the marks of each host's first step that starts anything there:
    {step index: {host: marks}}): ``first`` (it makes the components' directories), ``files`` when it writes the
    host's config files, ``firewall`` when it loads the host's firewall table.
    Work before the steps: a container to retire, a running container's restart policy to set (docker update), or
    (every host, the tasks run once) front door members to take out;
    a first deploy or a roll has none, and deploy then leaves those tasks out rather than have every host skip each of
    them (on the start path). A host's config files to rewrite are written by the start of its first step that (re)starts anything there,
    in the same call (``files`` in that step's ``hosts`` entry: a round of their own cost a first deploy 0.2-0.3 s);
    before the steps only when the host has such work anyway, or no step starts anything on it."""
    before: dict[str, bool] = {}
    marks: dict[int, dict[str, HostStep]] = {}
    for host, state in states.items():
        early = bool(unplanned or retire.get(host) or (state or {}).get("policies"))
        first = next((index for index, step in enumerate(steps) if (step["hosts"].get(host) or {}).get("start")), None)
        to_write = bool((state or {}).get("changed_files"))
        if first is not None:
            mark: HostStep = {"first": True}
            if to_write and not early:
                mark["files"] = True
            if not early and _fenced_by_first_start(state):
                mark["firewall"] = True
            marks.setdefault(first, {})[host] = mark
        before[host] = early or (to_write and first is None)
    return before, marks


def _fenced_by_first_start(state: dict[str, t.Any] | None) -> bool:
    """Whether a host's firewall table, not loaded as planned, is loaded by the call of its first step that starts
    anything (``firewall`` in that step's ``hosts`` entry) rather than by the host_firewall role before the steps: when
    nothing of the cluster runs there, no port of the cluster listens before that call. This exists for speed only: the
    role's four calls to the host would lie on a first deploy's path to serving."""
    state = state or {}
    return (state.get("firewall") or {}).get("current") is False and not state.get("running")


def _door_unplanned(states: dict[str, t.Any], door: dict[str, t.Any] | None) -> bool:
    """Whether the running front door may list members the plan does not have: its look read some, or could not read
    it. Deploy then takes them out (and drains them) before its steps, on the front door's host."""
    if door is None:
        return False
    seen = (states.get(door["host"]) or {}).get("front_door") or {}
    return "error" in seen or "unplanned" not in seen or members.count(seen["unplanned"]) > 0


def _settled(states: dict[str, t.Any], door: dict[str, t.Any] | None) -> bool:
    """Whether a run that starts and retires nothing has nothing else to do either: no host has a config file to
    rewrite (a live one, like the proxy's members file, changes without a restart) or a restart policy to set, and
    the running front door, as
    its host's look read it, lists exactly the plan's members."""
    if any((state or {}).get("changed_files") or (state or {}).get("policies") for state in states.values()):
        return False
    if door is None:
        return True
    seen = (states.get(door["host"]) or {}).get("front_door") or {}
    if "missing" not in seen:
        return False  # not read, or its admin API did not answer: deploy asks it in the task that acts on it
    return not members.count(seen["missing"]) and not members.count(seen["unplanned"])


def _without_idle_tail(steps: list[Step]) -> list[Step]:
    """The steps after the last one that starts or stops something are left out: their containers run with their specs
    and nothing later depends on them becoming ready (a no-op run walks through none; status.yml probes readiness),
    and each would cost a play about ten skipped tasks per host (on the start path). A step that takes members out or
    drains them starts something, so it stays."""
    last = max((index for index, step in enumerate(steps) if step["start"] or step["stop"]), default=-1)
    return steps[:last + 1]


def _taken_out(start: list[LaunchSpec], groups: dict[str, list[LaunchSpec]],
               running: frozenset[str]) -> tuple[dict[str, list[str]], dict[str, str], list[str]]:
    """(members, {uid: /metrics URL}, instance names) of the engine groups a step restarts that the front door lists
    (they ran before) while another instance of their role keeps serving: out of the proxy before they stop."""
    def serving(group: str) -> bool:
        return all(uid(member) in running for member in groups[group])

    restarted = _ordered(dp_group(s) for s in start if is_engine(s))
    out: list[dict[str, str]] = []
    drain: dict[str, str] = {}
    names: list[str] = []
    for group in restarted:
        first = groups[group][0]
        others = [g for g in groups if g not in restarted and is_engine(groups[g][0]) and role(groups[g][0]) == role(first)
                  and serving(g)]
        if not others or not any(uid(m) in running for m in groups[group]) or not members.of_specs(groups[group]):
            continue
        out += members.of_specs(groups[group])
        drain.update({uid(m): url for m in groups[group] if uid(m) in running and (url := metrics_url(m))})
        names.append(instance(first) or role(first))
    return (members.by_role(out) if out else {}), drain, names


def _retired(states: dict[str, t.Any], specs: list[LaunchSpec], machines: dict[str, str]) -> dict[str, list[str]]:
    """{host: [container]} of the cluster's containers no spec names on their machine (a removed instance's)."""
    planned: dict[str, set[str]] = {}
    for spec in specs:
        planned.setdefault(machines.get(spec["host"], spec["host"]), set()).add(spec["name"])
    found: dict[str, list[str]] = {}
    seen: set[tuple[str, str]] = set()
    for host in sorted(states):
        machine = machines.get(host, host)
        for name in (states[host] or {}).get("extra") or []:
            if name not in planned.get(machine, set()) and (machine, name) not in seen:
                seen.add((machine, name))
                found.setdefault(host, []).append(name)
    return found


def _outages(step: int, start: list[LaunchSpec], groups: dict[str, list[LaunchSpec]], running: frozenset[str],
             restarted_for_service: set[str]) -> list[Outage]:
    """The roles whose every serving instance this step restarts. Serving: a DP group whose containers all run.
    Engines restarted after a restarted pool service are left out: the pool service's restart is what stops them
    (Mooncake #2246), whichever instances a role has."""
    def serving(group: str) -> bool:
        return all(uid(member) in running for member in groups[group])

    restarted = {dp_group(s) for s in start if is_engine(s) and uid(s) not in restarted_for_service and serving(dp_group(s))}
    found: list[Outage] = []
    for name in sorted({role(groups[g][0]) for g in restarted}):
        of_role = [g for g in groups if is_engine(groups[g][0]) and role(groups[g][0]) == name and serving(g)]
        if set(of_role) <= restarted:
            instances = sorted({instance(groups[g][0]) or name for g in of_role})
            found.append({"step": step, "role": name, "instances": instances,
                          "text": "step %d restarts every serving instance of role %s (%s): nothing of that role serves until "
                                  "it is back" % (step, name, ", ".join(instances))})
    return found


def _engines_after_services(services: list[LaunchSpec], groups: dict[str, list[LaunchSpec]],
                            why: dict[str, str]) -> tuple[list[LaunchSpec], set[str], dict[str, str]]:
    """A restarted service restarts every engine started after it (they registered with it): (those engines, their
    DP groups, why each restarts where ``why`` has no reason yet)."""
    dependents: list[LaunchSpec] = []
    affected: set[str] = set()
    reasons: dict[str, str] = {}
    for service in services:
        for group, in_group in groups.items():
            engines = [m for m in in_group if m["wave"] > service["wave"] and is_engine(m)]
            if not engines:
                continue
            affected.add(group)
            for member in engines:
                if uid(member) not in why and uid(member) not in reasons:
                    reasons[uid(member)] = "restarted after %s (%s): engines register with it" % (service["name"], why[uid(service)])
                dependents += [member] if member not in dependents else []
    return dependents, affected, reasons


def _step(wave: int, start: list[LaunchSpec], wait: list[LaunchSpec], look: _Look, rolling: bool, stop: list[LaunchSpec]) -> Step:
    """A container up with its spec is restarted; a changed one is recreated (docker_container sees its label).
    ``stop``: containers stopped before anything of the step starts."""
    restart = [s for s in start if look.status[uid(s)] == "ok" or uid(s) in look.rewritten]
    hosts: dict[str, HostStep] = {}
    for what, listed in (("stop", stop), ("start", start), ("restart", restart), ("wait", wait)):
        for spec in listed:
            entry = hosts.setdefault(spec["host"], {"stop": [], "start": [], "restart": [], "wait": []})
            t.cast(dict[str, list[str]], entry)[what].append(spec["name"])
    return {"wave": wave, "rolling": rolling, "stop": [s["name"] for s in stop], "start": [s["name"] for s in start],
            "restart": [s["name"] for s in restart], "wait": [s["name"] for s in wait], "hosts": hosts, "out": {}, "drain": {}}


def _ordered(keys: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for key in keys:
        if key not in seen:
            seen.append(key)
    return seen
