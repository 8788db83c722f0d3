# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Gathering what a cluster host has that a plan depends on: the tools' calls (npu-smi, nvidia-smi, the Docker CLI,
hccn_tool, nft, ip), on the host. node_facts returns them; deploy's look (container_state) gathers them in the same
call when the host has a container to start, so preflight does not ask the host again.

The parsers are _node_facts's and _npu's (pure functions, tested on text); these run them on the host.
"""

from __future__ import annotations

import concurrent.futures
import glob
import http.client
import importlib.util
import json
import os
import stat
import typing as t
from collections.abc import Iterable, Mapping

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import ps_command
from ansible_collections.llmops.inference.plugins.module_utils.preflight import _node_facts as _node
from ansible_collections.llmops.inference.plugins.module_utils.preflight._npu import HCCN_QUERIES, TOOL_PATHS, parse_hccn, parse_npu_smi_info, parse_ping
from ansible_collections.llmops.inference.plugins.module_utils.services._firewall import found_on_host

# Where the Ascend software records its version (first match wins).
VERSION_FILES = (
    ("driver", "/usr/local/Ascend/driver/version.info"),
    ("firmware", "/usr/local/Ascend/firmware/version.info"),
    ("cann", "/usr/local/Ascend/ascend-toolkit/latest/version.cfg"),
    ("cann", "/usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info"),
)
# What node_facts gathers.
KINDS = ("npu", "gpu", "docker", "listeners", "devices", "paths", "nic", "images", "memory", "versions", "fabric", "ping",
         "firewall", "etcd")
# node_facts's options: the kinds to gather and what they take (container_state's preflight option holds the same).
ARGUMENT_SPEC = dict(
    gather=dict(type="list", elements="str", default=["npu"], choices=list(KINDS)),
    npus=dict(type="list", elements="int", default=[]),
    ping=dict(type="list", elements="dict", default=[]),
    cluster=dict(type="str"),
    paths=dict(type="list", elements="str", default=[]),
    nic=dict(type="str"),
    images=dict(type="list", elements="str", default=[]),
    firewall_table=dict(type="str", default=""),
    firewall_file=dict(type="str", default=""),
    etcd=dict(type="list", elements="str", default=[]),
)


def npu_facts(module: t.Any) -> dict[str, t.Any]:
    tool = module.get_bin_path("npu-smi", opt_dirs=TOOL_PATHS)
    if tool is None:
        return {"tool": None}
    rc, out, err = commands.run(module, [tool, "info"])
    if rc != 0:
        return {"tool": tool, "error": (err or out).strip()[:500]}
    return dict(parse_npu_smi_info(out), tool=tool)


def gpu_facts(module: t.Any) -> dict[str, t.Any]:
    """GPUs and the processes using them, from nvidia-smi (H100 hosts)."""
    tool = module.get_bin_path("nvidia-smi")
    if tool is None:
        return {"tool": None}
    rc, out, err = commands.run(module, [tool, "--query-gpu=index,uuid,name", "--format=csv,noheader"])
    if rc != 0:
        return {"tool": tool, "error": (err or out).strip()[:300]}
    gpus = [dict(zip(("index", "uuid", "name"), (c.strip() for c in line.split(",")))) for line in out.splitlines() if line.strip()]
    rc, out, _err = commands.run(module, [tool, "--query-compute-apps=gpu_uuid,pid,process_name", "--format=csv,noheader"])
    apps = [dict(zip(("uuid", "pid", "name"), (c.strip() for c in line.split(",")))) for line in out.splitlines() if line.strip()]
    index = {gpu["uuid"]: gpu["index"] for gpu in gpus}
    return {"tool": tool, "gpus": [gpu["index"] for gpu in gpus],
            "processes": [{"gpu": index.get(app["uuid"]), "pid": app["pid"], "name": app["name"]} for app in apps]}


def docker_facts(module: t.Any) -> dict[str, t.Any]:
    docker = module.get_bin_path("docker")
    facts: dict[str, t.Any] = {"binary": docker, "answers": False, "version": None, "runtimes": [], "requests": False}
    # found, not imported, only for speed: importing requests would cost every deploy's look CPU on each host
    facts["requests"] = importlib.util.find_spec("requests") is not None
    if docker:
        rc, out, err = commands.run(module, [docker, "info", "--format", "{{json .}}"])
        if rc == 0:
            info = json.loads(out)
            facts.update(answers=True, version=info.get("ServerVersion"), runtimes=sorted(info.get("Runtimes") or {}))
        else:
            facts["error"] = (err or out).strip()[:300]
    return facts


def container_names(module: t.Any, cluster: str | None) -> dict[str, str]:
    """{container id: name} of the cluster's containers on the host."""
    docker = module.get_bin_path("docker")
    if not docker or not cluster:
        return {}
    rc, out, _err = commands.run(module, ps_command(docker, cluster, "{{.ID}} {{.Names}}"))
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line) if rc == 0 else {}


def path_facts(path: str) -> dict[str, t.Any]:
    facts: dict[str, t.Any] = {"exists": os.path.exists(path)}
    if not facts["exists"]:
        # where it will be created: the free space of its nearest existing parent
        parent = os.path.dirname(path.rstrip("/")) or "/"
        while not os.path.exists(parent):
            parent = os.path.dirname(parent) or "/"
        usage = os.statvfs(parent)
        facts["free_bytes"] = usage.f_bavail * usage.f_frsize
        return facts
    mode = os.stat(path).st_mode
    facts["kind"] = "char" if stat.S_ISCHR(mode) else "dir" if stat.S_ISDIR(mode) else "file"
    if facts["kind"] == "dir":
        names = os.listdir(path)
        facts["config_json"] = "config.json" in names
        facts["safetensors"] = len([n for n in names if n.endswith(".safetensors")])
    usage = os.statvfs(path)
    facts["free_bytes"] = usage.f_bavail * usage.f_frsize
    return facts


def nic_facts(module: t.Any, name: str) -> dict[str, t.Any]:
    facts = _node.nic(name)
    facts["addresses"] = []
    ip = module.get_bin_path("ip")
    if facts["exists"] and ip:
        rc, out, _err = commands.run(module, [ip, "-j", "-4", "addr", "show", "dev", name])
        if rc == 0:
            facts["addresses"] = [a["local"] for entry in json.loads(out or "[]") for a in entry.get("addr_info") or []]
    return facts


def image_facts(module: t.Any, images: Iterable[str]) -> dict[str, bool]:
    docker = module.get_bin_path("docker")
    present = {}
    for image in images:
        rc = commands.run(module, [docker, "image", "inspect", "-f", "{{.Id}}", image])[0] if docker else 1
        present[image] = rc == 0
    return present


def memory_facts() -> dict[str, int | None]:
    with open("/proc/meminfo", encoding="ascii") as handle:
        facts = _node.meminfo(handle.read())
    try:
        usage = os.statvfs("/dev/shm")
        facts["shm_bytes"] = usage.f_blocks * usage.f_frsize
    except OSError:
        facts["shm_bytes"] = None
    return facts


def version_facts() -> dict[str, dict[str, str]]:
    found = {}
    for component, pattern in VERSION_FILES:
        for path in sorted(glob.glob(pattern)):
            with open(path, encoding="utf-8", errors="replace") as handle:
                value = _node.version_value(handle.read())
            if value:
                found[component] = {"version": value, "file": path}
                break
    return found


def fabric_facts(module: t.Any, npus: Iterable[int]) -> dict[str, t.Any]:
    tool = module.get_bin_path("hccn_tool", opt_dirs=TOOL_PATHS)
    if tool is None:
        return {"tool": None}
    queries = [(npu, what, [tool, "-i", str(npu)] + argv) for npu in npus for what, argv in HCCN_QUERIES]
    found: dict[str, dict[str, str | None]] = {str(npu): {} for npu in npus}
    for (npu, what, _argv), (_rc, out, err) in zip(queries, parallel(module, [q[2] for q in queries])):
        found[str(npu)][what] = parse_hccn(what, out + err)
    return {"tool": tool, "npus": found}


def etcd_facts(endpoints: Iterable[str]) -> dict[str, dict[str, bool]]:
    """{endpoint: {reachable, healthy}}: etcd's /health is {"health": "true"} while its member sees a leader."""
    found = {}
    for endpoint in endpoints:
        try:
            status, body = http_get("http://%s/health" % endpoint, timeout=3)
            healthy = status == 200 and str(json.loads(body).get("health")) == "true"
            found[endpoint] = {"reachable": True, "healthy": healthy}
        except (OSError, http.client.HTTPException, ValueError):
            found[endpoint] = {"reachable": False, "healthy": False}
    return found


def parallel(module: t.Any, argvs: list[list[str]]) -> list[tuple[int, str, str]]:
    """(rc, stdout, stderr) of each command, in order, at most 8 at a time: hccn_tool answers each query
    after a round trip to the NPU, and a node has 8 or 16 NPUs of 4 queries each."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda argv: commands.run(module, argv), argvs))


def ping_facts(module: t.Any, pings: Iterable[Mapping[str, t.Any]]) -> list[dict[str, t.Any]]:
    tool = module.get_bin_path("hccn_tool", opt_dirs=TOOL_PATHS)
    if tool is None:
        return [dict(ping, ok=False) for ping in pings]
    answers = parallel(module, [[tool, "-i", str(ping["npu"]), "-ping", "-g", "address", ping["address"]] for ping in pings])
    return [dict(ping, ok=parse_ping(out + err)) for ping, (_rc, out, err) in zip(pings, answers)]


def process_facts(module: t.Any, gather: set[str], cluster: str | None, containers: dict[str, str] | None = None) -> dict[str, t.Any]:
    """listeners (with port_ranges) and devices: both name the processes, and the cluster's containers holding them
    ({container id: name}, looked up unless the caller has them)."""
    if containers is None:
        containers = container_names(module, cluster)
    procs = _node.processes()
    facts: dict[str, t.Any] = {}
    if "listeners" in gather:
        facts["listeners"] = _node.port_holders(_node.listening_ports(), procs, containers)
        facts["port_ranges"] = _node.port_ranges()
    if "devices" in gather:
        facts["devices"] = _node.device_holders(procs, containers)
    return facts


def gathered(module: t.Any, gather: set[str], params: Mapping[str, t.Any], containers: dict[str, str] | None = None) -> dict[str, t.Any]:
    """The facts of each kind in ``gather`` (KINDS), with ``params`` (OPTIONS), gathered side by side: each waits on its
    own tool (npu-smi, the Docker engine, hccn_tool, nft), so a host answers in about the time of its slowest kind
    rather than their sum. ``containers``: the cluster's containers on the host ({id: name}) when the caller has just
    listed them (deploy's look), which saves a second `docker ps`."""
    jobs = {
        "npu": lambda: npu_facts(module),
        "gpu": lambda: gpu_facts(module),
        "docker": lambda: docker_facts(module),
        "paths": lambda: {path: path_facts(path) for path in params["paths"]},
        "nic": lambda: nic_facts(module, params["nic"] or ""),
        "images": lambda: image_facts(module, params["images"]),
        "memory": memory_facts,
        "versions": version_facts,
        "fabric": lambda: fabric_facts(module, params["npus"]),
        "ping": lambda: ping_facts(module, params["ping"]),
        "firewall": lambda: found_on_host(module, params["firewall_table"], params["firewall_file"]),
        "etcd": lambda: etcd_facts(params["etcd"]),
    }
    asked = [kind for kind in jobs if kind in gather]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(asked) + 1) as pool:
        futures = {kind: pool.submit(jobs[kind]) for kind in asked}
        processes = (pool.submit(process_facts, module, gather, params["cluster"], containers)
                     if gather & {"listeners", "devices"} else None)
        facts = {kind: future.result() for kind, future in futures.items()}
        if processes is not None:
            facts.update(processes.result())
    return facts
