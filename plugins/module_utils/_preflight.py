# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight: every host's facts (node_facts) against what that host's part of the plan needs.

Pure functions, run on the controller. Each problem is a row: host, check, what was found, what
the plan needs, how to fix it. A process or port held by a container the plan names is no
problem: deploy replaces or keeps that container itself.
"""

from __future__ import annotations

import re

from ansible_collections.llmops.inference.plugins.module_utils import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils._npu import visible_devices
from ansible_collections.llmops.inference.plugins.module_utils._plan_model import HARDWARE
from ansible_collections.llmops.inference.plugins.module_utils._spec_meta import dp_group
from ansible_collections.llmops.inference.plugins.module_utils._text import aligned, size_bytes

COLUMNS = ("HOST", "CHECK", "FOUND", "NEEDED", "FIX")
DOCKER_MIN = "20.10"
# Driver / CANN / connector combinations known to fail (llmops_preflight_known_bad replaces this table).
# A version at or below max_bad is refused; an unknown version is only reported.
KNOWN_BAD = (
    {"component": "cann", "max_bad": "8.3.RC1", "when": "use_ascend_direct",
     "why": "Mooncake KV transfers with use_ascend_direct time out on it, vllm-ascend #5635",
     "fix": "upgrade CANN past 8.3.RC1, or set use_ascend_direct false"},
)
# Where a state counts as up (a veth in a container reports "up"; some virtual links "unknown").
NIC_UP = ("up", "unknown")


def version_key(text):
    """Comparable key of versions like 20.10.24, 8.3.RC1, 24.1.rc2: numbers compare as numbers, and a
    release candidate comes before the release (8.3.RC1 < 8.3.0)."""
    key = []
    for part in re.findall(r"\d+|[A-Za-z]+", text or ""):
        key.append((1, int(part)) if part.isdigit() else (0, 0) if part.lower() == "rc" else (-1, 0))
    return key


def _row(host, check, found, needed, fix):
    return {"host": host, "check": check, "found": found, "needed": needed, "fix": fix}


def host_mounts(specs):
    """{host path: container path} of the specs' bind mounts."""
    mounts = {}
    for spec in specs:
        for volume in spec.get("volumes") or []:
            parts = volume.split(":")
            if len(parts) >= 2 and parts[0].startswith("/"):
                mounts[parts[0]] = parts[1]
    return mounts


def model_dirs(specs):
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


def gather_inputs(specs, created=()):
    """What node_facts needs for a host: the paths to look at (with the UCM storage, for its free space), the NPUs
    whose fabric to read."""
    return {"paths": sorted(set(wanted_paths(specs, created)) | set(ucm_storage(specs))), "npus": visible_devices(specs)}


def wanted_paths(specs, created=()):
    """Host paths node_facts must look at for a host: devices, mount sources, model directories."""
    paths = {d for spec in specs for d in spec.get("devices") or []}
    paths |= set(host_mounts(specs)) | set(model_dirs(specs))
    return sorted(p for p in paths if not _created(p, specs, created))


def _created(path, specs, created):
    """Deploy writes the rendered config files and creates the UCM directories itself."""
    files = {f for spec in specs for f in spec.get("files") or {}}
    return any(path == c or path.startswith(c.rstrip("/") + "/") or c.startswith(path.rstrip("/") + "/")
               for c in list(files) + list(created))


def check_host(host, facts, specs, plan, node, pulls=None, options=None):
    """Problem rows of one host, and its summary line."""
    options = options or {}
    if options.get("known_bad") is None:
        options = dict(options, known_bad=KNOWN_BAD)
    names = {spec["name"] for spec in specs}
    rows = []
    rows += _runtime(host, facts.get("docker") or {}, plan, options)
    rows += _devices(host, facts, specs, plan, names)
    rows += _mounts(host, facts.get("paths") or {}, specs, options.get("created") or ())
    rows += _ports(host, facts.get("listeners") or [], (plan.get("ports") or {}).get(host) or [], names)
    rows += _network(host, facts.get("nic"), node)
    rows += _images(host, facts.get("images") or {}, pulls or {})
    rows += _versions(host, facts.get("versions") or {}, specs, options.get("known_bad") or [])
    if options.get("fabric"):
        rows += _fabric(host, facts.get("fabric") or {}, specs)
    rows += _memory(host, facts.get("memory") or {}, specs)
    rows += _ucm_space(host, facts.get("paths") or {}, specs)
    return rows, summary(host, facts)


def ucm_storage(specs):
    """{storage backend host path: posix_capacity_gb} of the UCM storage the specs write to (the plan's meta)."""
    found = {}
    for spec in specs:
        found.update(spec_meta.ucm_storage(spec))
    return found


def _ucm_space(host, paths, specs):
    """With a posix_capacity_gb set, UCM fills its storage up to it: the file system must have that much free."""
    rows = []
    for path, capacity in sorted(ucm_storage(specs).items()):
        free = (paths.get(path) or {}).get("free_bytes")
        if capacity and free is not None and free < capacity << 30:
            rows.append(_row(host, "mount sources", "%s free under %s" % (_size(free), path), "posix_capacity_gb %d" % capacity,
                             "free space there, or lower posix_capacity_gb in ucm_cache_config"))
    return rows


def _memory(host, memory, specs):
    """The KV pool's host memory must be available; a container's shared memory limit must fit in the host."""
    rows = []
    total, available = memory.get("total"), memory.get("available")
    pool = sum(spec_meta.pool_bytes(spec) for spec in specs)
    if pool and available is not None and pool > available:
        rows.append(_row(host, "memory", "%s available" % _size(available), "%s for the KV pool of this host's engines" % _size(pool),
                         "free memory, or lower mooncake_master_segment_size / memcache_pool_dram_size"))
    for spec in specs:
        shm = size_bytes(spec.get("shm_size"), docker=True)
        if shm and total and shm > total:
            rows.append(_row(host, "memory", "%s of memory in all" % _size(total), "shm_size %s for %s" % (spec["shm_size"], spec["name"]),
                             "lower the shm_size (ascend_driver_overrides: {shm_size: ...})"))
            break
    return rows


def fabric_applies(plan, specs):
    """The NPU fabric matters when KV or collectives cross nodes: more than one node, or PD (Ascend only)."""
    if plan.get("hardware") in HARDWARE and not HARDWARE[plan["hardware"]]["ascend"]:
        return False
    return len({s["host"] for s in specs if visible_devices([s])}) > 1 or any(spec_meta.role(s) == "prefill" for s in specs)


def _fabric(host, fabric, specs):
    planned = visible_devices(specs)
    if not planned:
        return []
    if not fabric.get("tool"):
        return [_row(host, "fabric", "hccn_tool not found", "hccn_tool for NPUs %s" % _list(planned),
                     "install the Ascend driver (hccn_tool is under /usr/local/Ascend/driver/tools)")]
    rows = []
    for npu in planned:
        seen = (fabric.get("npus") or {}).get(str(npu)) or {}
        if seen.get("link") != "UP":
            rows.append(_row(host, "fabric", "NPU %d link %s" % (npu, seen.get("link") or "unknown"), "link UP",
                             "check the NPU's cable and switch port (hccn_tool -i %d -link -g)" % npu))
        if seen.get("health") != "Success":
            rows.append(_row(host, "fabric", "NPU %d net health %s" % (npu, seen.get("health") or "unknown"), "net health Success",
                             "check the NPU network (hccn_tool -i %d -net_health -g; /etc/hccn.conf)" % npu))
        if not seen.get("ip"):
            rows.append(_row(host, "fabric", "NPU %d has no IP" % npu, "an NPU IP (hccn_tool -i %d -ip -g)" % npu,
                             "configure it (hccn_tool -i %d -ip -s address ... netmask ...)" % npu))
    return rows


def tls_rows(facts_by_host, specs):
    """The TLS switch must be the same on every planned NPU of every node (vLLM #10224): rows for the odd ones out."""
    switches = {}
    for host in sorted({s["host"] for s in specs}):
        fabric = (((facts_by_host.get(host) or {}).get("facts") or {}).get("fabric")) or {}
        for npu in visible_devices([s for s in specs if s["host"] == host]):
            value = ((fabric.get("npus") or {}).get(str(npu)) or {}).get("tls")
            if value is not None:
                switches[(host, npu)] = value
    values = sorted(set(switches.values()))
    if len(values) < 2:
        return []
    common = max(values, key=lambda v: (list(switches.values()).count(v), v))
    return [_row(host, "fabric", "NPU %d TLS switch %s" % (npu, value), "TLS switch %s, as on the other NPUs" % common,
                 "align it (hccn_tool -i %d -tls -s enable %s) on every node" % (npu, common))
            for (host, npu), value in sorted(switches.items()) if value != common]


def ping_targets(facts_by_host, specs):
    """{host: [{"npu", "address", "peer"}]}: the first planned NPU of each prefill node pings one NPU of each
    decode node, and the nodes of one DP group ping each other."""
    first_npu, npu_ip = {}, {}
    for host in {s["host"] for s in specs}:
        planned = visible_devices([s for s in specs if s["host"] == host])
        fabric = (((facts_by_host.get(host) or {}).get("facts") or {}).get("fabric")) or {}
        if planned:
            first_npu[host] = planned[0]
            npu_ip[host] = ((fabric.get("npus") or {}).get(str(planned[0])) or {}).get("ip")
    pairs = set()
    prefill = sorted({s["host"] for s in specs if spec_meta.role(s) == "prefill"})
    decode = sorted({s["host"] for s in specs if spec_meta.role(s) == "decode"})
    pairs |= {(p, d) for p in prefill for d in decode if p != d}
    groups = {}
    for spec in specs:
        groups.setdefault(dp_group(spec), set()).add(spec["host"])
    pairs |= {(a, b) for hosts in groups.values() for a in hosts for b in hosts if a != b}
    targets = {}
    for source, peer in sorted(pairs):
        if source in first_npu and npu_ip.get(peer):
            targets.setdefault(source, []).append({"npu": first_npu[source], "address": npu_ip[peer], "peer": peer})
    return targets


def ping_rows(pings_by_host):
    """A row per failed ping, and the matrix lines (source -> peer: ok / unreachable)."""
    rows, matrix = [], []
    for host, pings in sorted(pings_by_host.items()):
        for ping in pings or []:
            matrix.append("%s NPU %d -> %s (%s): %s" % (host, ping["npu"], ping["peer"], ping["address"], "ok" if ping["ok"] else "UNREACHABLE"))
            if not ping["ok"]:
                rows.append(_row(host, "fabric", "NPU %d cannot reach %s of %s" % (ping["npu"], ping["address"], ping["peer"]),
                                 "every planned peer NPU reachable", "check the NPU network between the nodes (hccn_tool -i %d "
                                 "-ping -g address %s; routes in /etc/hccn.conf, switch VLANs)" % (ping["npu"], ping["address"])))
    return rows, matrix


def _runtime(host, docker, plan, options):
    rows = []
    minimum = options.get("docker_min") or DOCKER_MIN
    if not docker.get("answers"):
        rows.append(_row(host, "container runtime", "docker does not answer: %s" % (docker.get("error") or "not installed"),
                         "a running Docker engine", "install docker and start it (systemctl enable --now docker)"))
    elif version_key(docker.get("version")) < version_key(minimum):
        rows.append(_row(host, "container runtime", "Docker %s" % docker.get("version"), "Docker >= %s" % minimum,
                         "upgrade the Docker engine"))
    if docker and not docker.get("requests", True):
        rows.append(_row(host, "container runtime", "python requests missing", "requests importable by the host's Python",
                         "install python3-requests (community.docker talks to the engine through it)"))
    if plan.get("hardware") == "h100" and docker.get("answers") and "nvidia" not in (docker.get("runtimes") or []):
        rows.append(_row(host, "container runtime", "runtimes %s" % ", ".join(docker.get("runtimes") or []) or "none",
                         "the nvidia runtime", "install nvidia-container-toolkit and run nvidia-ctk runtime configure --runtime=docker"))
    return rows


def _devices(host, facts, specs, plan, names):
    rows = []
    paths = facts.get("paths") or {}
    for device in sorted({d for spec in specs for d in spec.get("devices") or []}):
        seen = paths.get(device) or {}
        if not seen.get("exists") or seen.get("kind") != "char":
            rows.append(_row(host, "devices", "%s %s" % (device, "is no device" if seen.get("exists") else "missing"),
                             "%s (a character device)" % device, "check the NPU driver is installed and loaded (npu-smi info)"))
    if plan.get("hardware") == "h100":
        return rows + _gpus(host, facts.get("gpu") or {}, specs)
    planned = visible_devices(specs)
    npu = facts.get("npu") or {}
    if planned:
        if not npu.get("tool"):
            rows.append(_row(host, "devices", "npu-smi not found", "npu-smi listing NPUs %s" % _list(planned),
                             "install the Ascend driver (npu-smi comes with it)"))
        elif npu.get("error"):
            rows.append(_row(host, "devices", "npu-smi info failed: %s" % npu["error"], "NPUs %s listed" % _list(planned),
                             "check the driver (dmesg, npu-smi info)"))
        else:
            listed = {int(k): v for k, v in (npu.get("devices") or {}).items()}
            for number in planned:
                if number not in listed:
                    rows.append(_row(host, "devices", "NPU %d not listed by npu-smi" % number, "NPU %d" % number,
                                     "check the NPU (npu-smi info) or plan other devices"))
                elif listed[number].get("health") != "OK":
                    rows.append(_row(host, "devices", "NPU %d health %s" % (number, listed[number].get("health")), "health OK",
                                     "repair or replace NPU %d, or plan other devices" % number))
    for holder in _holders(facts, npu):
        if holder["npu"] in planned and holder.get("container") not in names:
            who = "process %s (%s%s)" % (holder["pid"], holder.get("process") or "?",
                                         ", container %s" % holder["container"] if holder.get("container") else "")
            rows.append(_row(host, "devices", "NPU %d held by %s" % (holder["npu"], who), "NPU %d free" % holder["npu"],
                             "stop it (kill %s; a leftover engine process keeps NPU memory, vLLM #9888)" % holder["pid"]))
    return rows


def _gpus(host, gpu, specs):
    planned = sorted({g for spec in specs for g in spec.get("gpus") or []})
    if not planned:
        return []
    if not gpu.get("tool") or gpu.get("error"):
        return [_row(host, "devices", gpu.get("error") or "nvidia-smi not found", "nvidia-smi listing GPUs %s" % ",".join(planned),
                     "install the NVIDIA driver and check it (nvidia-smi)")]
    rows = [_row(host, "devices", "GPU %s not listed by nvidia-smi" % g, "GPU %s" % g, "check the GPU (nvidia-smi) or plan other GPUs")
            for g in planned if g not in gpu.get("gpus", [])]
    rows += [_row(host, "devices", "GPU %s busy with process %s (%s)" % (p["gpu"], p["pid"], p["name"]), "GPU %s free" % p["gpu"],
                  "stop it (kill %s) before the deploy" % p["pid"]) for p in gpu.get("processes") or [] if p.get("gpu") in planned]
    return rows


def _holders(facts, npu):
    """Device holders from the /proc scan (with their container), plus npu-smi's processes it did not see."""
    holders = list(facts.get("devices") or [])
    seen = {(h["npu"], h["pid"]) for h in holders}
    holders += [{"npu": p["npu"], "pid": p["pid"], "process": p["name"], "container": None}
                for p in npu.get("processes") or [] if (p["npu"], p["pid"]) not in seen]
    return holders


def _mounts(host, paths, specs, created):
    rows = []
    for source in sorted(host_mounts(specs)):
        if _created(source, specs, created):
            continue
        if not (paths.get(source) or {}).get("exists"):
            rows.append(_row(host, "mount sources", "%s missing" % source, "%s on the host (bind-mounted)" % source,
                             "create it or install what provides it, or change the variable that mounts it"))
    for model in model_dirs(specs):
        seen = paths.get(model) or {}
        if not seen.get("exists"):
            if not any(model.startswith(s.rstrip("/") + "/") and not (paths.get(s) or {}).get("exists") for s in host_mounts(specs)):
                rows.append(_row(host, "mount sources", "model directory %s missing" % model, "the model's weights in %s" % model,
                                 "copy the model to %s on this host, or fix vllm_engine_model" % model))
            continue
        if not seen.get("config_json") or not seen.get("safetensors"):
            rows.append(_row(host, "mount sources", "model %s has %s" % (model, ", ".join(
                w for w, ok in (("no config.json", seen.get("config_json")), ("no *.safetensors", seen.get("safetensors"))) if not ok)),
                "config.json and safetensors weights", "copy the model's weights to %s on this host" % model))
    return rows


def _ports(host, listeners, planned, names):
    rows = []
    for entry in planned:
        if entry["space"] != "host":
            continue
        for listener in listeners:
            if entry["low"] <= listener["port"] <= entry["high"] and listener.get("container") not in names:
                who = "process %s (%s)" % (listener["pid"], listener.get("process") or "?") if listener.get("pid") else "an unknown process"
                if listener.get("container"):
                    who += " in container %s" % listener["container"]
                rows.append(_row(host, "ports", "port %d held by %s" % (listener["port"], who),
                                 "port %s free for %s" % (_span(entry), entry["owner"]),
                                 "stop what holds it, or move the plan's port (%s)" % (entry.get("variable") or entry["owner"])))
    return rows


def _network(host, nic, node):
    if nic is None or not node:
        return []
    name, address = node.get("nic"), node.get("address")
    if not name:
        return []
    if not nic.get("exists"):
        return [_row(host, "network", "no NIC %s" % name, "NIC %s carrying %s" % (name, address),
                     "set vllm_engine_nic to the interface that carries %s (ip -br addr)" % address)]
    rows = []
    if nic.get("state") not in NIC_UP:
        rows.append(_row(host, "network", "NIC %s is %s" % (name, nic.get("state")), "NIC %s up" % name, "ip link set %s up" % name))
    if address not in (nic.get("addresses") or []):
        rows.append(_row(host, "network", "NIC %s has %s" % (name, ", ".join(nic.get("addresses") or []) or "no IPv4 address"),
                         "%s on %s (HCCL_IF_IP, VLLM_HOST_IP, the DP address)" % (address, name),
                         "fix vllm_engine_node_ip / ansible_host or vllm_engine_nic for this host"))
    return rows


def _images(host, present, pulls):
    rows = []
    for image, ok in sorted(present.items()):
        if ok or pulls.get(image) == "pulled":
            continue
        rows.append(_row(host, "images", "%s missing; pull failed: %s" % (image, pulls.get(image) or "not tried"),
                         "%s present" % image, "make the registry reachable, or docker load the image on this host"))
    return rows


def _versions(host, versions, specs, known_bad):
    rows = []
    ascend_direct = any(spec_meta.ascend_direct(spec) for spec in specs)
    for rule in known_bad:
        if rule.get("when") == "use_ascend_direct" and not ascend_direct:
            continue
        found = (versions.get(rule["component"]) or {}).get("version")
        if found and version_key(found) <= version_key(rule["max_bad"]):
            rows.append(_row(host, "versions", "%s %s" % (rule["component"], found),
                             "%s newer than %s" % (rule["component"], rule["max_bad"]), "%s (%s)" % (rule["fix"], rule["why"])))
    return rows


def pull_outcomes(registered):
    """{image: "pulled" or why not} from the registered result of the pull loop (failed_when false keeps
    ``failed`` false: a pulled image is the one whose result describes it)."""
    outcomes = {}
    for result in (registered or {}).get("results") or []:
        if result.get("skipped"):
            continue
        outcomes[result["item"]] = "pulled" if result.get("image") else (result.get("msg") or "failed").splitlines()[0][:200]
    return outcomes


def ephemeral_ports(planned, ranges):
    """The planned host port spans that lie in the ephemeral range and are not reserved: an outgoing connection may
    take one of them first, and the engine then fails to bind it."""
    ephemeral = (ranges or {}).get("ephemeral")
    if not ephemeral:
        return []
    reserved = (ranges or {}).get("reserved") or []
    exposed = []
    for entry in planned:
        if entry["space"] != "host" or entry["high"] < ephemeral[0] or entry["low"] > ephemeral[1]:
            continue
        if not any(low <= entry["low"] and entry["high"] <= high for low, high in reserved):
            exposed.append(_span(entry))
    return exposed


def summary(host, facts, planned=()):
    """One line of what was looked at on the host and the versions found."""
    parts = []
    docker = facts.get("docker") or {}
    if docker:
        parts.append("docker %s" % (docker.get("version") or "-"))
    npu = facts.get("npu") or {}
    if npu.get("tool"):
        parts.append("npu-smi %s, %d NPUs" % (npu.get("version") or "?", len(npu.get("devices") or {})))
    for component, seen in sorted((facts.get("versions") or {}).items()):
        parts.append("%s %s" % (component, seen["version"]))
    memory = facts.get("memory") or {}
    if memory.get("available"):
        parts.append("memory %s free of %s" % (_size(memory["available"]), _size(memory.get("total") or 0)))
    free = {p: v["free_bytes"] for p, v in (facts.get("paths") or {}).items() if v.get("kind") in ("dir", None) and "free_bytes" in v}
    if free:
        least = min(free, key=free.get)
        parts.append("least free disk %s under %s" % (_size(free[least]), least))
    exposed = ephemeral_ports(planned, facts.get("port_ranges"))
    if exposed:
        parts.append("note: planned ports %s lie in the ephemeral range %d-%d; reserve them (sysctl net.ipv4.ip_local_reserved_ports)"
                     % (", ".join(sorted(set(exposed))), facts["port_ranges"]["ephemeral"][0], facts["port_ranges"]["ephemeral"][1]))
    return "%s: %s" % (host, "; ".join(parts) or "no facts")


def preflight(facts_by_host, specs, plan, nodes, pulls_by_host=None, options=None, pings_by_host=None):
    """{"rows": problem rows of every host, "table": printable, "summary": lines, "matrix": ping lines}."""
    rows, lines = [], []
    options = dict(options or {}, fabric=fabric_applies(plan, specs))
    by_host = {}
    for spec in specs:
        by_host.setdefault(spec["host"], []).append(spec)
    node_by_host = {node["host"]: node for node in nodes}
    for host in sorted(set(by_host) | set(facts_by_host)):
        result = facts_by_host.get(host) or {}
        if result.get("unreachable") or result.get("failed") or "facts" not in result:
            rows.append(_row(host, "reachable", (result.get("msg") or "no answer").splitlines()[0], "an answering host",
                             "check SSH access and that Python 3 runs on it"))
            continue
        host_rows, line = check_host(host, result["facts"], by_host.get(host, []), plan, node_by_host.get(host),
                                     pull_outcomes((pulls_by_host or {}).get(host)), options)
        rows += host_rows
        lines.append(line)
    matrix = []
    if options["fabric"]:
        rows += tls_rows(facts_by_host, specs)
        ping_problems, matrix = ping_rows(pings_by_host or {})
        rows += ping_problems
    return {"rows": rows, "table": table(rows), "summary": lines, "matrix": matrix}


def table(rows, limit=100):
    """The rows as aligned text; a cell longer than ``limit`` is cut (the JSON rows keep it whole)."""
    return aligned(COLUMNS, [(r["host"], r["check"], r["found"], r["needed"], r["fix"]) for r in rows], limit=limit)


def _list(numbers):
    return ",".join(str(n) for n in numbers)


def _span(entry):
    return str(entry["low"]) if entry["low"] == entry["high"] else "%d-%d" % (entry["low"], entry["high"])


def _size(value):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return "%.0f %s" % (value, unit)
        value /= 1024.0
    return str(value)
