# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading a host's /proc and /sys: listening sockets and who holds them, NICs, memory, version files.

Pure functions over text and directory paths (the root is a parameter, so the tests give them a
fake /proc); node_facts runs them on the host.
"""

from __future__ import annotations

import os
import re
import typing as t
from collections.abc import Mapping

TCP_LISTEN = "0A"
CONTAINER_ID = re.compile(r"([0-9a-f]{64})")


def listening_ports(proc: str = "/proc") -> dict[int, str]:
    """{port: inode} of TCP sockets in LISTEN state (IPv4 and IPv6)."""
    found: dict[int, str] = {}
    for name in ("tcp", "tcp6"):
        try:
            with open(os.path.join(proc, "net", name), encoding="ascii") as handle:
                lines = handle.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 9 and fields[3] == TCP_LISTEN:
                found.setdefault(int(fields[1].rsplit(":", 1)[1], 16), fields[9])
    return found


def port_ranges(proc: str = "/proc") -> dict[str, t.Any]:
    """{"ephemeral": [low, high], "reserved": [[low, high], ...]} of the host's IPv4 sysctls."""
    def read(name: str) -> str:
        try:
            with open(os.path.join(proc, "sys", "net", "ipv4", name), encoding="ascii") as handle:
                return handle.read().strip()
        except OSError:
            return ""
    ephemeral = [int(p) for p in read("ip_local_port_range").split()[:2]] or None
    reserved = []
    for part in filter(None, read("ip_local_reserved_ports").split(",")):
        low, _sep, high = part.partition("-")
        reserved.append([int(low), int(high or low)])
    return {"ephemeral": ephemeral, "reserved": reserved}


def processes(proc: str = "/proc") -> dict[int, dict[str, t.Any]]:
    """{pid: {"name", "container", "sockets": set of inodes, "devices": set of NPU numbers}} of every process."""
    found: dict[int, dict[str, t.Any]] = {}
    for pid in filter(str.isdigit, os.listdir(proc)):
        base = os.path.join(proc, pid)
        try:
            with open(os.path.join(base, "comm"), encoding="utf-8", errors="replace") as handle:
                name = handle.read().strip()
            with open(os.path.join(base, "cgroup"), encoding="utf-8", errors="replace") as handle:
                cgroup = handle.read()
            fds = os.listdir(os.path.join(base, "fd"))
        except OSError:
            continue
        sockets: set[str] = set()
        devices: set[int] = set()
        for fd in fds:
            try:
                target = os.readlink(os.path.join(base, "fd", fd))
            except OSError:
                continue
            if target.startswith("socket:["):
                sockets.add(target[8:-1])
            else:
                match = re.fullmatch(r"/dev/davinci(\d+)", target)
                if match:
                    devices.add(int(match.group(1)))
        container = CONTAINER_ID.search(cgroup)
        found[int(pid)] = {"name": name, "container": container.group(1) if container else None, "sockets": sockets, "devices": devices}
    return found


def port_holders(ports: Mapping[int, str], procs: Mapping[int, Mapping[str, t.Any]],
                 containers: Mapping[str, str]) -> list[dict[str, t.Any]]:
    """[{"port", "pid", "process", "container"}] for each listening port; container by name when it is one of ``containers``
    ({id: name})."""
    by_inode: dict[str, tuple[int, Mapping[str, t.Any]]] = {}
    for pid, info in procs.items():
        for inode in info["sockets"]:
            by_inode.setdefault(inode, (pid, info))
    holders = []
    for port, inode in sorted(ports.items()):
        holder, owner = by_inode.get(inode, (None, {}))
        holders.append({"port": port, "pid": holder, "process": owner.get("name"), "container": containers.get(owner.get("container") or "")})
    return holders


def device_holders(procs: Mapping[int, Mapping[str, t.Any]], containers: Mapping[str, str]) -> list[dict[str, t.Any]]:
    """[{"npu", "pid", "process", "container"}] of every process holding /dev/davinciN open."""
    return [{"npu": npu, "pid": pid, "process": info["name"], "container": containers.get(info["container"])}
            for pid, info in sorted(procs.items()) for npu in sorted(info["devices"])]


def nic(name: str, sys_class_net: str = "/sys/class/net") -> dict[str, t.Any]:
    """{"exists", "state"} of a network interface."""
    path = os.path.join(sys_class_net, name)
    if not name or not os.path.exists(path):
        return {"exists": False, "state": None}
    try:
        with open(os.path.join(path, "operstate"), encoding="ascii") as handle:
            state = handle.read().strip()
    except OSError:
        state = None
    return {"exists": True, "state": state}


def meminfo(text: str) -> dict[str, int | None]:
    """{"total", "available"} in bytes from /proc/meminfo."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        match = re.match(r"^(MemTotal|MemAvailable):\s+(\d+)\s*kB", line)
        if match:
            values[match.group(1)] = int(match.group(2)) * 1024
    return {"total": values.get("MemTotal"), "available": values.get("MemAvailable")}


def version_value(text: str | None) -> str | None:
    """The version in a driver/firmware/toolkit info file (Version=24.1.rc2, version=8.3.RC1, ...)."""
    match = re.search(r"(?im)^\s*(?:package_)?version\s*[=:]\s*(\S+)", text or "")
    return match.group(1) if match else None
