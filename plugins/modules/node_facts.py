#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_facts
short_description: What a cluster host has that a plan depends on, in one pass
version_added: 0.1.0
description:
  - Returns structured facts; the comparison with the plan happens on the controller (filters of the collection).
  - C(npu) - the C(npu-smi) found (on the PATH or where the Ascend driver installs it), its version, each NPU's name
    and health, and every process using an NPU (C(npu-smi info)). C(gpu) - the GPUs C(nvidia-smi) lists and the
    processes using them.
  - C(docker) - the engine's server version, whether it answers, its runtimes (nvidia for GPUs), and whether the
    Python C(requests) library community.docker needs on the host imports.
  - C(listeners) - every listening TCP port with the process and, for the cluster's containers, the container holding
    it; and C(port_ranges), the ephemeral port range and the reserved ports. C(devices) - every process holding a C(/dev/davinciN) open, with its container.
  - C(paths), C(nic), C(images) - the given host paths, network interface and images.
  - C(memory) - total and available memory, C(/dev/shm) size. C(versions) - Ascend driver, firmware and CANN
    toolkit versions from their info files.
  - C(fabric) - per NPU of O(npus), what C(hccn_tool) says of its link, network health, IP and TLS switch.
    C(ping) - whether each ping of O(ping) got every packet back.
  - C(firewall) - C(nft) (its path or null), whether the table O(firewall_table) is loaded, and whether the file
    O(firewall_file) exists. With the host firewall off, deploy removes the collection's table and file only where
    either is there.
  - C(etcd) - for each endpoint of O(etcd), whether this host reaches it and whether its C(/health) says healthy.
  - Reads only.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  gather:
    description: Which facts to gather.
    type: list
    elements: str
    choices: [npu, gpu, docker, listeners, devices, paths, nic, images, memory, versions, fabric, ping, firewall, etcd]
    default: [npu]
  npus:
    description: The NPUs whose fabric to look at (C(fabric)) - C(hccn_tool -i N) link, net_health, ip and tls.
    type: list
    elements: int
    default: []
  ping:
    description: Pings to send (C(ping)) - each C(npu) pings C(address) with C(hccn_tool -i npu -ping -g address).
    type: list
    elements: dict
    default: []
  cluster:
    description: Cluster name; processes in its containers (C(llmops.cluster) label) are named by container.
    type: str
  paths:
    description: Host paths to look at (C(paths)) - whether each exists, its kind, a model directory's config.json and
      safetensors files, and the free space of its file system.
    type: list
    elements: str
    default: []
  nic:
    description: The network interface to look at (C(nic)) - exists, state, IPv4 addresses.
    type: str
  images:
    description: Images whose presence to check (C(images)).
    type: list
    elements: str
    default: []
  firewall_table:
    description: The collection's nftables table (C(firewall)), in family C(inet).
    type: str
    default: ""
  firewall_file:
    description: The rules file of that table (C(firewall)).
    type: str
    default: ""
  etcd:
    description: host:port client endpoints of the etcd of HA Mooncake masters (C(etcd)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Look at the NPUs
  llmops.inference.node_facts:
    gather: [npu]
  register: node
"""

RETURN = r"""
facts:
  description: By kind gathered - C(npu) with tool (path or null), version, devices (by NPU id - name, health) and
    processes (npu, pid, name, memory_mb); C(docker), C(listeners), C(devices), C(paths), C(nic), C(images),
    C(memory), C(versions), C(firewall), C(etcd) as described above.
  returned: success
  type: dict
"""

import concurrent.futures
import glob
import http.client
import json
import os
import stat

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils import _node_facts as _node
from ansible_collections.llmops.inference.plugins.module_utils._container_state import ps_command
from ansible_collections.llmops.inference.plugins.module_utils._firewall import found_on_host
from ansible_collections.llmops.inference.plugins.module_utils._readiness import http_get
from ansible_collections.llmops.inference.plugins.module_utils._npu import (
    HCCN_QUERIES, TOOL_PATHS, parse_hccn, parse_npu_smi_info, parse_ping)

# Where the Ascend software records its version (first match wins).
VERSION_FILES = (
    ("driver", "/usr/local/Ascend/driver/version.info"),
    ("firmware", "/usr/local/Ascend/firmware/version.info"),
    ("cann", "/usr/local/Ascend/ascend-toolkit/latest/version.cfg"),
    ("cann", "/usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info"),
)


def npu_facts(module):
    tool = module.get_bin_path("npu-smi", opt_dirs=TOOL_PATHS)
    if tool is None:
        return {"tool": None}
    rc, out, err = module.run_command([tool, "info"])
    if rc != 0:
        return {"tool": tool, "error": (err or out).strip()[:500]}
    return dict(parse_npu_smi_info(out), tool=tool)


def gpu_facts(module):
    """GPUs and the processes using them, from nvidia-smi (H100 hosts)."""
    tool = module.get_bin_path("nvidia-smi")
    if tool is None:
        return {"tool": None}
    rc, out, err = module.run_command([tool, "--query-gpu=index,uuid,name", "--format=csv,noheader"])
    if rc != 0:
        return {"tool": tool, "error": (err or out).strip()[:300]}
    gpus = [dict(zip(("index", "uuid", "name"), (c.strip() for c in line.split(",")))) for line in out.splitlines() if line.strip()]
    rc, out, _err = module.run_command([tool, "--query-compute-apps=gpu_uuid,pid,process_name", "--format=csv,noheader"])
    apps = [dict(zip(("uuid", "pid", "name"), (c.strip() for c in line.split(",")))) for line in out.splitlines() if line.strip()]
    index = {gpu["uuid"]: gpu["index"] for gpu in gpus}
    return {"tool": tool, "gpus": [gpu["index"] for gpu in gpus],
            "processes": [{"gpu": index.get(app["uuid"]), "pid": app["pid"], "name": app["name"]} for app in apps]}


def docker_facts(module):
    docker = module.get_bin_path("docker")
    facts = {"binary": docker, "answers": False, "version": None, "runtimes": [], "requests": False}
    try:
        import requests  # noqa: F401  pylint: disable=unused-import,import-outside-toplevel
        facts["requests"] = True
    except ImportError:
        pass
    if docker:
        rc, out, err = module.run_command([docker, "info", "--format", "{{json .}}"])
        if rc == 0:
            info = json.loads(out)
            facts.update(answers=True, version=info.get("ServerVersion"), runtimes=sorted(info.get("Runtimes") or {}))
        else:
            facts["error"] = (err or out).strip()[:300]
    return facts


def cluster_containers(module, cluster):
    """{container id: name} of the cluster's containers on the host."""
    docker = module.get_bin_path("docker")
    if not docker or not cluster:
        return {}
    rc, out, _err = module.run_command(ps_command(docker, cluster, "{{.ID}} {{.Names}}"))
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line) if rc == 0 else {}


def path_facts(path):
    facts = {"exists": os.path.exists(path)}
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


def nic_facts(module, name):
    facts = _node.nic(name)
    facts["addresses"] = []
    ip = module.get_bin_path("ip")
    if facts["exists"] and ip:
        rc, out, _err = module.run_command([ip, "-j", "-4", "addr", "show", "dev", name])
        if rc == 0:
            facts["addresses"] = [a["local"] for entry in json.loads(out or "[]") for a in entry.get("addr_info") or []]
    return facts


def image_facts(module, images):
    docker = module.get_bin_path("docker")
    present = {}
    for image in images:
        rc = module.run_command([docker, "image", "inspect", "-f", "{{.Id}}", image])[0] if docker else 1
        present[image] = rc == 0
    return present


def memory_facts():
    with open("/proc/meminfo", encoding="ascii") as handle:
        facts = _node.meminfo(handle.read())
    try:
        usage = os.statvfs("/dev/shm")
        facts["shm_bytes"] = usage.f_blocks * usage.f_frsize
    except OSError:
        facts["shm_bytes"] = None
    return facts


def version_facts():
    found = {}
    for component, pattern in VERSION_FILES:
        for path in sorted(glob.glob(pattern)):
            with open(path, encoding="utf-8", errors="replace") as handle:
                value = _node.version_value(handle.read())
            if value:
                found[component] = {"version": value, "file": path}
                break
    return found


def fabric_facts(module, npus):
    tool = module.get_bin_path("hccn_tool", opt_dirs=TOOL_PATHS)
    if tool is None:
        return {"tool": None}
    queries = [(npu, what, [tool, "-i", str(npu)] + argv) for npu in npus for what, argv in HCCN_QUERIES]
    found = {str(npu): {} for npu in npus}
    for (npu, what, _argv), (_rc, out, err) in zip(queries, parallel(module, [q[2] for q in queries])):
        found[str(npu)][what] = parse_hccn(what, out + err)
    return {"tool": tool, "npus": found}


def etcd_facts(endpoints):
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


def parallel(module, commands):
    """run_command results of the commands, in order, at most 8 at a time: hccn_tool answers each query
    after a round trip to the NPU, and a node has 8 or 16 NPUs of 4 queries each."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(module.run_command, commands))


def ping_facts(module, pings):
    tool = module.get_bin_path("hccn_tool", opt_dirs=TOOL_PATHS)
    if tool is None:
        return [dict(ping, ok=False) for ping in pings]
    answers = parallel(module, [[tool, "-i", str(ping["npu"]), "-ping", "-g", "address", ping["address"]] for ping in pings])
    return [dict(ping, ok=parse_ping(out + err)) for ping, (_rc, out, err) in zip(pings, answers)]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            gather=dict(type="list", elements="str", default=["npu"],
                        choices=["npu", "gpu", "docker", "listeners", "devices", "paths", "nic", "images", "memory", "versions", "fabric",
                                 "ping", "firewall", "etcd"]),
            npus=dict(type="list", elements="int", default=[]),
            ping=dict(type="list", elements="dict", default=[]),
            cluster=dict(type="str"),
            paths=dict(type="list", elements="str", default=[]),
            nic=dict(type="str"),
            images=dict(type="list", elements="str", default=[]),
            firewall_table=dict(type="str", default=""),
            firewall_file=dict(type="str", default=""),
            etcd=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    gather = set(module.params["gather"])
    facts = {}
    if "npu" in gather:
        facts["npu"] = npu_facts(module)
    if "gpu" in gather:
        facts["gpu"] = gpu_facts(module)
    if "docker" in gather:
        facts["docker"] = docker_facts(module)
    if gather & {"listeners", "devices"}:
        containers = cluster_containers(module, module.params["cluster"])
        procs = _node.processes()
        if "listeners" in gather:
            facts["listeners"] = _node.port_holders(_node.listening_ports(), procs, containers)
            facts["port_ranges"] = _node.port_ranges()
        if "devices" in gather:
            facts["devices"] = _node.device_holders(procs, containers)
    if "paths" in gather:
        facts["paths"] = {path: path_facts(path) for path in module.params["paths"]}
    if "nic" in gather:
        facts["nic"] = nic_facts(module, module.params["nic"] or "")
    if "images" in gather:
        facts["images"] = image_facts(module, module.params["images"])
    if "memory" in gather:
        facts["memory"] = memory_facts()
    if "versions" in gather:
        facts["versions"] = version_facts()
    if "fabric" in gather:
        facts["fabric"] = fabric_facts(module, module.params["npus"])
    if "ping" in gather:
        facts["ping"] = ping_facts(module, module.params["ping"])
    if "firewall" in gather:
        facts["firewall"] = found_on_host(module, module.params["firewall_table"], module.params["firewall_file"])
    if "etcd" in gather:
        facts["etcd"] = etcd_facts(module.params["etcd"])
    module.exit_json(changed=False, facts=facts)


if __name__ == "__main__":
    main()
