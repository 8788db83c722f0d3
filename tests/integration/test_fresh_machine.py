# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The installers the README's two commands rely on, on fresh Debian 12 and Debian 13 roots.

A machine that already has docker.io and prometheus never takes the apt lock, so it hides what a new
user's first run does. This test runs them in a container made from each of the harness's debootstrap
base images (Debian bookworm and trixie minbase with python3 and python3-venv: no docker.io, debootstrap or
prometheus), with this checkout copied in and the pip set-up of this machine kind mounted read-only.
It runs them side by side as scripts/test.sh does:
  1. scripts/bootstrap.sh beside tests/harness/docker_engine.sh (the first lanes' first steps),
  2. tests/harness/prometheus.sh twice at once (the monitoring step and test_pool_recovery's
     fixture) beside docker_engine.sh again (every molecule scenario's create runs it),
each through `docker exec` with its output read to the end and a bound on its time, so an installer
whose daemon keeps its pipe, or one waiting on a lock nobody frees, fails here by name. After each
round no process may hold the apt lock file, and at the end `docker info` answers in the root and
dockerd holds no descriptor it was not given.
"""

from __future__ import annotations

import shlex
import subprocess
import time

import pytest
from conftest import ROOT
from harness import SYSTEM_CONTAINER, machine_pip_mounts

# Fresh roots of Debian 12 and 13 (tests/harness/images.sh): python3 and python3-venv, no docker.io, debootstrap or
# prometheus (Debian 12's is the engines' base, which also has their libraries and etcd)
BASE_IMAGES = {"debian12": "llmops-engine-base:test", "debian13": "llmops-fresh-base:trixie"}
NAME = "llmops-fresh-root"
LOCK = "/tmp/llmops-apt.lock"
CHECKOUT = "/root/checkout"
BOUND = 900  # seconds an installer may take on a fresh root (apt and pip downloads); the hang was forever


def docker(*args, check=True, text=True, **kwargs):
    return subprocess.run(["docker", *args], capture_output=True, text=text, check=check, **kwargs)


def inside(command, check=True):
    return docker("exec", NAME, "bash", "-c", command, check=check)


@pytest.fixture(scope="module", params=sorted(BASE_IMAGES))
def fresh_root(request):
    base_image = BASE_IMAGES[request.param]
    if docker("image", "inspect", base_image, check=False).returncode != 0:
        pytest.fail("%s is missing: tests/harness/images.sh builds it" % base_image)
    docker("rm", "-f", "-v", NAME, check=False)
    docker("volume", "rm", NAME + "-docker", check=False)
    # dockerd inside needs what a harness node gets (tests/harness/nodes.py): every capability the
    # sandbox grants, the cgroup tree and a /var/lib/docker that is not on overlayfs.
    docker("run", "-d", "--name", NAME, "--hostname", NAME, *SYSTEM_CONTAINER, "-v", NAME + "-docker:/var/lib/docker",
           *machine_pip_mounts(), "--label", "llmops.harness=1", base_image, "sleep", "infinity")
    try:
        missing = inside("for tool in dockerd debootstrap prometheus promtool; do command -v $tool || true; done")
        assert missing.stdout.strip() == "", "the base image is not fresh: it has " + missing.stdout
        print("fresh root: %s, %s" % (inside(". /etc/os-release && echo $PRETTY_NAME").stdout.strip(),
                                      inside("python3 --version").stdout.strip()))
        files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                               capture_output=True, check=True).stdout
        existing = b"\0".join(f for f in files.split(b"\0") if f and (ROOT / f.decode()).exists())
        tar = subprocess.run(["tar", "--null", "-T", "-", "-c"], cwd=ROOT, input=existing, capture_output=True, check=True)
        docker("exec", "-i", NAME, "sh", "-c", "mkdir -p %s && tar -x -C %s" % (CHECKOUT, CHECKOUT),
               input=tar.stdout, text=False)
        yield NAME
    finally:
        docker("rm", "-f", "-v", NAME, check=False)
        docker("volume", "rm", NAME + "-docker", check=False)


def side_by_side(*scripts):
    """Runs the scripts in the fresh root at once, each to the end of its output within BOUND seconds;
    [(script, exit code or None when it did not end, seconds, output)]."""
    started = time.monotonic()
    running = [(script, subprocess.Popen(["docker", "exec", NAME, "bash", "-c", "cd %s && bash %s" % (CHECKOUT, script)],
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
               for script in scripts]
    results = []
    for script, process in running:
        try:
            output = process.communicate(timeout=max(1, BOUND - (time.monotonic() - started)))[0]
            code = process.returncode
        except subprocess.TimeoutExpired:
            process.kill()
            output, code = process.communicate()[0], None
        took = round(time.monotonic() - started)
        print("fresh root: %s %s after %d s" % (script, "never ended" if code is None else "ended with %d" % code, took))
        results.append((script, code, took, output))
    return results


def assert_all_ended(results):
    for script, code, took, output in results:
        assert code is not None, "%s did not end within %d s on a fresh root:\n%s" % (script, took, output[-3000:])
        assert code == 0, "%s failed (%d) on a fresh root:\n%s" % (script, code, output[-3000:])


def lock_holders():
    """'pid command' of every process in the fresh root with the apt lock file open."""
    found = inside("for fd in /proc/[0-9]*/fd/*; do [ \"$(readlink $fd 2>/dev/null)\" = %s ] && "
                   "{ pid=${fd#/proc/}; pid=${pid%%%%/*}; echo \"$pid $(tr '\\0' ' ' </proc/$pid/cmdline)\"; }; done | sort -u"
                   % shlex.quote(LOCK), check=False)
    return [line for line in found.stdout.splitlines() if line.strip()]


def test_installers_end_and_leave_no_lock_held_on_a_fresh_root(fresh_root):
    first = side_by_side("scripts/bootstrap.sh", "tests/harness/docker_engine.sh")
    assert_all_ended(first)
    assert lock_holders() == [], "processes still hold %s after the first installers: %s" % (LOCK, lock_holders())

    second = side_by_side("tests/harness/prometheus.sh", "tests/harness/prometheus.sh", "tests/harness/docker_engine.sh")
    assert_all_ended(second)
    assert lock_holders() == [], "processes still hold %s after prometheus.sh: %s" % (LOCK, lock_holders())

    assert "Server Version" in inside("docker info").stdout
    assert inside("command -v prometheus promtool debootstrap").stdout.count("\n") == 3
    # dockerd was given stdin /dev/null and its log (a pipe of the script's caller or the lock would keep
    # that caller waiting): its own descriptors past these are sockets and files of its own
    dockerd = inside("pid=$(pgrep -xo dockerd) && for fd in /proc/$pid/fd/*; do echo \"${fd##*/} $(readlink $fd)\"; done").stdout
    descriptors = dict(line.split(" ", 1) for line in dockerd.splitlines())
    assert descriptors["0"] == "/dev/null", descriptors
    assert descriptors["1"] == descriptors["2"] == CHECKOUT + "/.build/dockerd.log", descriptors
    assert LOCK not in descriptors.values(), descriptors
    # Debian's own prometheus service was not started by the install: the tests start their own
    assert inside("pgrep -x prometheus", check=False).returncode == 1
