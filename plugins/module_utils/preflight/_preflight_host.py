# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight of one host: its facts (node_facts) against its part of the plan - runtime, devices, mounts,
ports, NIC, images, versions, memory and UCM space - as problem rows, and its summary line. A process or
port held by a container the plan names is no problem: deploy replaces or keeps that container itself."""

from __future__ import annotations

import re
import typing as t
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils._text import size_bytes
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.plan._rules_ports import span
from ansible_collections.llmops.inference.plugins.module_utils.preflight._npu import visible_devices
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_fabric import fabric_rows
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_inputs import created_by_deploy, host_mounts, model_dirs, ucm_storage
from ansible_collections.llmops.inference.plugins.module_utils.preflight._preflight_rows import numbers, row, size

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


def version_key(text: str | None) -> list[tuple[int, int]]:
    """Comparable key of versions like 20.10.24, 8.3.RC1, 24.1.rc2: numbers compare as numbers, and a
    release candidate comes before the release (8.3.RC1 < 8.3.0)."""
    key = []
    for part in re.findall(r"\d+|[A-Za-z]+", text or ""):
        key.append((1, int(part)) if part.isdigit() else (0, 0) if part.lower() == "rc" else (-1, 0))
    return key


def check_host(host: str, facts: Mapping[str, t.Any], specs: Sequence[LaunchSpec], plan: Mapping[str, t.Any], node: Mapping[str, t.Any] | None,
               pulls: Mapping[str, str] | None = None, options: Mapping[str, t.Any] | None = None) -> tuple[list[dict[str, str]], str]:
    """Problem rows of one host, and its summary line."""
    options = options or {}
    if options.get("known_bad") is None:
        options = dict(options, known_bad=KNOWN_BAD)
    names = {spec["name"] for spec in specs}
    rows: list[dict[str, str]] = []
    rows += _runtime(host, facts.get("docker") or {}, plan, options)
    rows += _nftables(host, facts.get("firewall"), options)
    rows += _devices(host, facts, specs, plan, names)
    rows += _mounts(host, facts.get("paths") or {}, specs, options.get("created") or ())
    rows += _ports(host, facts.get("listeners") or [], (plan.get("ports") or {}).get(host) or [], names)
    rows += _network(host, facts.get("nic"), node)
    rows += _images(host, facts.get("images") or {}, pulls or {})
    rows += _versions(host, facts.get("versions") or {}, specs, options.get("known_bad") or [])
    if options.get("fabric"):
        rows += fabric_rows(host, facts.get("fabric") or {}, specs)
    rows += _memory(host, facts.get("memory") or {}, specs)
    rows += _ucm_space(host, facts.get("paths") or {}, specs)
    return rows, summary(host, facts)


def _runtime(host: str, docker: Mapping[str, t.Any], plan: Mapping[str, t.Any], options: Mapping[str, t.Any]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    minimum = options.get("docker_min") or DOCKER_MIN
    if not docker.get("answers"):
        rows.append(row(host, "container runtime", "docker does not answer: %s" % (docker.get("error") or "not installed"),
                        "a running Docker engine", "install docker and start it (systemctl enable --now docker)"))
    elif version_key(docker.get("version")) < version_key(minimum):
        rows.append(row(host, "container runtime", "Docker %s" % docker.get("version"), "Docker >= %s" % minimum,
                        "upgrade the Docker engine"))
    if docker and not docker.get("requests", True):
        rows.append(row(host, "container runtime", "python requests missing", "requests importable by the host's Python",
                        "install python3-requests (community.docker talks to the engine through it)"))
    if plan.get("hardware") == "h100" and docker.get("answers") and "nvidia" not in (docker.get("runtimes") or []):
        rows.append(row(host, "container runtime", "runtimes %s" % ", ".join(docker.get("runtimes") or []) or "none",
                        "the nvidia runtime", "install nvidia-container-toolkit and run nvidia-ctk runtime configure --runtime=docker"))
    return rows


def _nftables(host: str, firewall: Mapping[str, t.Any] | None, options: Mapping[str, t.Any]) -> list[dict[str, str]]:
    """With the host firewall on, the host needs nft (gathered with the firewall's table: its path, or null)."""
    if not options.get("firewall") or firewall is None or firewall.get("nft"):
        return []
    return [row(host, "host firewall", "nft not installed", "nftables (host_firewall_enabled is true)",
                "install Debian's nftables package (apt-get install nftables), or set host_firewall_enabled: false")]


def _devices(host: str, facts: Mapping[str, t.Any], specs: Sequence[LaunchSpec], plan: Mapping[str, t.Any], names: set[str]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    paths = facts.get("paths") or {}
    for device in sorted({d for spec in specs for d in spec.get("devices") or []}):
        seen = paths.get(device) or {}
        if not seen.get("exists") or seen.get("kind") != "char":
            rows.append(row(host, "devices", "%s %s" % (device, "is no device" if seen.get("exists") else "missing"),
                            "%s (a character device)" % device, "check the NPU driver is installed and loaded (npu-smi info)"))
    if plan.get("hardware") == "h100":
        return rows + _gpus(host, facts.get("gpu") or {}, specs)
    planned = visible_devices(specs)
    npu = facts.get("npu") or {}
    if planned:
        if not npu.get("tool"):
            rows.append(row(host, "devices", "npu-smi not found", "npu-smi listing NPUs %s" % numbers(planned),
                            "install the Ascend driver (npu-smi comes with it)"))
        elif npu.get("error"):
            rows.append(row(host, "devices", "npu-smi info failed: %s" % npu["error"], "NPUs %s listed" % numbers(planned),
                            "check the driver (dmesg, npu-smi info)"))
        else:
            listed = {int(k): v for k, v in (npu.get("devices") or {}).items()}
            for number in planned:
                if number not in listed:
                    rows.append(row(host, "devices", "NPU %d not listed by npu-smi" % number, "NPU %d" % number,
                                    "check the NPU (npu-smi info) or plan other devices"))
                elif listed[number].get("health") != "OK":
                    rows.append(row(host, "devices", "NPU %d health %s" % (number, listed[number].get("health")), "health OK",
                                    "repair or replace NPU %d, or plan other devices" % number))
    for holder in _holders(facts, npu):
        if holder["npu"] in planned and holder.get("container") not in names:
            who = "process %s (%s%s)" % (holder["pid"], holder.get("process") or "?",
                                         ", container %s" % holder["container"] if holder.get("container") else "")
            rows.append(row(host, "devices", "NPU %d held by %s" % (holder["npu"], who), "NPU %d free" % holder["npu"],
                            "stop it (kill %s; a leftover engine process keeps NPU memory, vLLM #9888)" % holder["pid"]))
    return rows


def _gpus(host: str, gpu: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> list[dict[str, str]]:
    planned = sorted({g for spec in specs for g in spec.get("gpus") or []})
    if not planned:
        return []
    if not gpu.get("tool") or gpu.get("error"):
        return [row(host, "devices", gpu.get("error") or "nvidia-smi not found", "nvidia-smi listing GPUs %s" % ",".join(planned),
                    "install the NVIDIA driver and check it (nvidia-smi)")]
    rows = [row(host, "devices", "GPU %s not listed by nvidia-smi" % g, "GPU %s" % g, "check the GPU (nvidia-smi) or plan other GPUs")
            for g in planned if g not in gpu.get("gpus", [])]
    rows += [row(host, "devices", "GPU %s busy with process %s (%s)" % (p["gpu"], p["pid"], p["name"]), "GPU %s free" % p["gpu"],
                 "stop it (kill %s) before the deploy" % p["pid"]) for p in gpu.get("processes") or [] if p.get("gpu") in planned]
    return rows


def _holders(facts: Mapping[str, t.Any], npu: Mapping[str, t.Any]) -> list[dict[str, t.Any]]:
    """Device holders from the /proc scan (with their container), plus npu-smi's processes it did not see."""
    holders = list(facts.get("devices") or [])
    seen = {(h["npu"], h["pid"]) for h in holders}
    holders += [{"npu": p["npu"], "pid": p["pid"], "process": p["name"], "container": None}
                for p in npu.get("processes") or [] if (p["npu"], p["pid"]) not in seen]
    return holders


def _mounts(host: str, paths: Mapping[str, t.Any], specs: Sequence[LaunchSpec], created: Iterable[str]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for source in sorted(host_mounts(specs)):
        if created_by_deploy(source, specs, created):
            continue
        if not (paths.get(source) or {}).get("exists"):
            rows.append(row(host, "mount sources", "%s missing" % source, "%s on the host (bind-mounted)" % source,
                            "create it or install what provides it, or change the variable that mounts it"))
    for model in model_dirs(specs):
        seen = paths.get(model) or {}
        if not seen.get("exists"):
            if not any(model.startswith(s.rstrip("/") + "/") and not (paths.get(s) or {}).get("exists") for s in host_mounts(specs)):
                rows.append(row(host, "mount sources", "model directory %s missing" % model, "the model's weights in %s" % model,
                                "copy the model to %s on this host, or fix vllm_engine_model" % model))
            continue
        if not seen.get("config_json") or not seen.get("safetensors"):
            rows.append(row(host, "mount sources", "model %s has %s" % (model, ", ".join(
                w for w, ok in (("no config.json", seen.get("config_json")), ("no *.safetensors", seen.get("safetensors"))) if not ok)),
                "config.json and safetensors weights", "copy the model's weights to %s on this host" % model))
    return rows


def _ports(host: str, listeners: Iterable[Mapping[str, t.Any]], planned: Iterable[Mapping[str, t.Any]], names: set[str]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for entry in planned:
        if entry["space"] != "host":
            continue
        for listener in listeners:
            if entry["low"] <= listener["port"] <= entry["high"] and listener.get("container") not in names:
                who = "process %s (%s)" % (listener["pid"], listener.get("process") or "?") if listener.get("pid") else "an unknown process"
                if listener.get("container"):
                    who += " in container %s" % listener["container"]
                rows.append(row(host, "ports", "port %d held by %s" % (listener["port"], who),
                                "port %s free for %s" % (span(entry), entry["owner"]),
                                "stop what holds it, or move the plan's port (%s)" % (entry.get("variable") or entry["owner"])))
    return rows


def _network(host: str, nic: Mapping[str, t.Any] | None, node: Mapping[str, t.Any] | None) -> list[dict[str, str]]:
    if nic is None or not node:
        return []
    name, address = node.get("nic"), node.get("address")
    if not name:
        return []
    if not nic.get("exists"):
        return [row(host, "network", "no NIC %s" % name, "NIC %s carrying %s" % (name, address),
                    "set vllm_engine_nic to the interface that carries %s (ip -br addr)" % address)]
    rows: list[dict[str, str]] = []
    if nic.get("state") not in NIC_UP:
        rows.append(row(host, "network", "NIC %s is %s" % (name, nic.get("state")), "NIC %s up" % name, "ip link set %s up" % name))
    if address not in (nic.get("addresses") or []):
        rows.append(row(host, "network", "NIC %s has %s" % (name, ", ".join(nic.get("addresses") or []) or "no IPv4 address"),
                        "%s on %s (HCCL_IF_IP, VLLM_HOST_IP, the DP address)" % (address, name),
                        "fix vllm_engine_node_ip / ansible_host or vllm_engine_nic for this host"))
    return rows


def _images(host: str, present: Mapping[str, bool], pulls: Mapping[str, str]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for image, ok in sorted(present.items()):
        if ok or pulls.get(image) == "pulled":
            continue
        rows.append(row(host, "images", "%s missing; pull failed: %s" % (image, pulls.get(image) or "not tried"),
                        "%s present" % image, "make the registry reachable, or docker load the image on this host"))
    return rows


def _versions(host: str, versions: Mapping[str, t.Any], specs: Sequence[LaunchSpec], known_bad: Iterable[Mapping[str, t.Any]]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    ascend_direct = any(spec_meta.ascend_direct(spec) for spec in specs)
    for rule in known_bad:
        if rule.get("when") == "use_ascend_direct" and not ascend_direct:
            continue
        found = (versions.get(rule["component"]) or {}).get("version")
        if found and version_key(found) <= version_key(rule["max_bad"]):
            rows.append(row(host, "versions", "%s %s" % (rule["component"], found),
                            "%s newer than %s" % (rule["component"], rule["max_bad"]), "%s (%s)" % (rule["fix"], rule["why"])))
    return rows


def _memory(host: str, memory: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> list[dict[str, str]]:
    """The KV pool's host memory must be available; a container's shared memory limit must fit in the host."""
    rows: list[dict[str, str]] = []
    total, available = memory.get("total"), memory.get("available")
    pool = sum(spec_meta.pool_bytes(spec) for spec in specs)
    if pool and available is not None and pool > available:
        rows.append(row(host, "memory", "%s available" % size(available), "%s for the KV pool of this host's engines" % size(pool),
                        "free memory, or lower mooncake_master_segment_size / memcache_pool_dram_size"))
    for spec in specs:
        shm = size_bytes(spec.get("shm_size"), docker=True)
        if shm and total and shm > total:
            rows.append(row(host, "memory", "%s of memory in all" % size(total), "shm_size %s for %s" % (spec["shm_size"], spec["name"]),
                            "lower the shm_size (ascend_driver_overrides: {shm_size: ...})"))
            break
    return rows


def _ucm_space(host: str, paths: Mapping[str, t.Any], specs: Sequence[LaunchSpec]) -> list[dict[str, str]]:
    """With a posix_capacity_gb set, UCM fills its storage up to it: the file system must have that much free."""
    rows: list[dict[str, str]] = []
    for path, capacity in sorted(ucm_storage(specs).items()):
        free = (paths.get(path) or {}).get("free_bytes")
        if capacity and free is not None and free < capacity << 30:
            rows.append(row(host, "mount sources", "%s free under %s" % (size(free), path), "posix_capacity_gb %d" % capacity,
                            "free space there, or lower posix_capacity_gb in ucm_cache_config"))
    return rows


def ephemeral_ports(planned: Iterable[Mapping[str, t.Any]], ranges: Mapping[str, t.Any] | None) -> list[str]:
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
            exposed.append(span(entry))
    return exposed


def summary(host: str, facts: Mapping[str, t.Any], planned: Iterable[Mapping[str, t.Any]] = ()) -> str:
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
        parts.append("memory %s free of %s" % (size(memory["available"]), size(memory.get("total") or 0)))
    free = {p: v["free_bytes"] for p, v in (facts.get("paths") or {}).items() if v.get("kind") in ("dir", None) and "free_bytes" in v}
    if free:
        least = min(free, key=lambda path: free[path])
        parts.append("least free disk %s under %s" % (size(free[least]), least))
    exposed = ephemeral_ports(planned, facts.get("port_ranges"))
    if exposed:
        parts.append("note: planned ports %s lie in the ephemeral range %d-%d; reserve them (sysctl net.ipv4.ip_local_reserved_ports)"
                     % (", ".join(sorted(set(exposed))), facts["port_ranges"]["ephemeral"][0], facts["port_ranges"]["ephemeral"][1]))
    return "%s: %s" % (host, "; ".join(parts) or "no facts")
