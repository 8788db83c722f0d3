# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers for tests that deploy onto harness nodes (tests/harness): node containers running
their own Docker engine, reached only on the harness network this machine created."""

from __future__ import annotations

import datetime
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from conftest import LAB, ROOT

HARNESS = ROOT / "tests" / "harness"
sys.path.insert(0, str(HARNESS))  # its tools that tests and benchmarks share
from certificates import install_on_node, make_certificate  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import
from vault_values import client_key  # noqa: E402  pylint: disable=wrong-import-position

# A container that runs an init or a daemon of its own (dockerd, systemd): every capability the sandbox grants
# (--privileged is refused) and the cgroup tree (tests/harness/nodes.py gives its nodes the same)
SYSTEM_CONTAINER = ("--cap-add", "ALL", "--cap-drop", "SYS_RESOURCE", "--security-opt", "seccomp=unconfined",
                    "--security-opt", "apparmor=unconfined", "--device-cgroup-rule", "a *:* rwm",
                    "-v", "/sys/fs/cgroup:/sys/fs/cgroup:rw", "--tmpfs", "/run")


def machine_pip_mounts():
    """docker run's read-only mounts of what makes pip work on a machine of this kind (its CA, its local wheel and index
    folders, its configuration), where this machine has them, as a fresh machine of this kind would."""
    paths = (HARNESS / "machine_pip_paths").read_text().split()
    return [arg for path in paths if os.path.exists(path) for arg in ("-v", "%s:%s:ro" % (path, path))]


# every harness inventory's shared settings hold the front door's client key, in ansible-vault (secure by default)
CLIENT_KEY = client_key()
CLIENT = {"Authorization": "Bearer " + CLIENT_KEY}


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def nodes(inventory, action):
    """Brings a topology's nodes up (without the containers an earlier module left, if it was stopped before its
    teardown: each module deploys its own cluster) or down."""
    extra = ["--clean"] if action == "up" else []
    subprocess.run([sys.executable, str(HARNESS / "nodes.py"), action, *extra, str(inventory)], check=True, capture_output=True, text=True)


def recap_changed(output):
    """{host: its changed count} from a playbook's PLAY RECAP."""
    return {host: int(changed) for host, changed in re.findall(r"^(\S+)\s*: ok=\d+\s+changed=(\d+)", output, re.M)}


def node_docker(node, *args):
    """`docker ARGS` run by the node's own engine."""
    result = subprocess.run(["docker", "exec", node, "docker", *args], capture_output=True, text=True, check=False)
    return result


def node_exec(node, *args):
    """A command run on the node itself (not in one of its containers)."""
    return subprocess.run(["docker", "exec", node, *args], capture_output=True, text=True, check=False)


def lock_holder(nodes, cluster):
    """The play holding the cluster's lock (cluster_lock), read from whichever of the nodes is its first host; None."""
    for node in nodes:
        found = node_exec(node, "cat", "/var/lib/llmops/locks/%s.lock" % cluster)
        if found.returncode == 0 and found.stdout.strip():
            return json.loads(found.stdout)
    return None


def finished_at(name, node):
    """When the container last exited, in seconds (docker prints RFC 3339 with up to nanoseconds)."""
    text = node_docker(node, "inspect", "-f", "{{.State.FinishedAt}}", name).stdout.strip()
    whole, _dot, fraction = text.rstrip("Z").partition(".")
    stamp = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.UTC).timestamp()
    return stamp + float("0." + (fraction or "0"))


def containers(node, cluster):
    """{name: (started_at, running)} of the cluster's containers on a node."""
    names = node_docker(node, "ps", "-a", "--filter", "label=llmops.cluster=" + cluster, "--format", "{{.Names}}").stdout.split()
    found = {}
    for name in names:
        state = json.loads(node_docker(node, "inspect", "-f", "{{json .State}}", name).stdout)
        found[name] = (state["StartedAt"], state["Running"])
    return found


def http_json(url, body=None, timeout=30, headers=None, context=None):
    """GET (or POST body as JSON) and the answer's JSON; context: an SSL context for https URLs."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=dict({"Content-Type": "application/json"}, **(headers or {})))
    with urllib.request.urlopen(request, timeout=timeout, context=context) as response:
        text = response.read().decode()
    return json.loads(text) if text else None


def http_text(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def wait_http(url, seconds=60):
    deadline = time.monotonic() + seconds
    while True:
        try:
            return http_json(url)
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def wait_until(condition, seconds, what):
    """Polls condition() every 0.2 s until it is true and returns the seconds that took; fails naming what was
    awaited after ``seconds``."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, "%s: not within %d s" % (what, seconds)
        time.sleep(0.2)
    return round(time.monotonic() - start, 1)


def listens(port, host="127.0.0.1"):
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def metric(text, name, **labels):
    """Sum of a Prometheus metric's samples whose labels include ``labels``."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        if all('%s="%s"' % item in line for item in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def admin_key(cluster):
    """The admin key the pd_proxy role made for cluster's front door (pd_proxy_admin_key_file's default: credentials/
    beside the inventory that first named the host, the lab's here)."""
    for inventory in (LAB, HARNESS / "inventories" / cluster):
        path = inventory / "credentials" / cluster / "pd_proxy_admin_key"
        if path.is_file():
            return path.read_text(encoding="utf-8").strip()
    raise AssertionError("no admin key made for %s yet (deploy makes it)" % cluster)


ATTACKER = "10.213.7.250"  # on the nodes' Docker network, not a node of any cluster
# The pool modules' attacker: they run beside the pd_a2 lane (scripts/test.sh), whose tests use ATTACKER at the same time.
POOL_ATTACKER = "10.213.7.249"
# A second address outside the cluster: the front door counts wrong keys by address, and a running one keeps the count.
SECOND_ATTACKER = "10.213.7.248"
ATTEMPTS = HARNESS / "front_door_attempts.py"


def tcp_from(where, addresses, address=ATTACKER):
    """{address: connected / refused / ...} of TCP connections from the attacker container ("attacker", at ``address``)
    or a node."""
    if where == "attacker":
        return attacker("--tcp", *addresses, address=address)["tcp"]
    run = subprocess.run(["docker", "exec", "-i", where, "python3", "-", "--tcp", *addresses], input=ATTEMPTS.read_text(),
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(run.stdout)["tcp"]


def tcp_from_container_on(node, addresses):
    """{address: connected / refused / ...} of TCP connections from a container on ``node``'s own Docker bridge (not
    the host's network, as a workload beside the cluster's would run)."""
    run = subprocess.run(["docker", "exec", "-i", node, "docker", "run", "--rm", "-i", "--label", "llmops.harness=1",
                          "--entrypoint", "python3", "llmops-engine:test", "-", "--tcp", *addresses],
                         input=ATTEMPTS.read_text(), capture_output=True, text=True, timeout=120, check=True)
    return json.loads(run.stdout)["tcp"]


def attacker(*args, address=ATTACKER):
    """What tests/harness/front_door_attempts.py saw, run in a container at ``address`` that is no cluster's node."""
    run = subprocess.run(["docker", "run", "--rm", "--network", "llmops-net", "--ip", address, "--label", "llmops.harness=1",
                          "-v", "%s:/attempts:ro" % ATTEMPTS.parent, "--entrypoint", "python3", "llmops-node:test",
                          "/attempts/" + ATTEMPTS.name, *args], capture_output=True, text=True, timeout=180, check=True)
    return json.loads(run.stdout)
