# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Time to serving on harness nodes, against the floor the seed's start order allows.

Deploys a cluster whose simulated engines take set start times (VLLM_SIM_START_DELAY: decode 20 s,
prefill 30 s by default; the pool service none) and measures, from the moment ansible-playbook
starts, until the first completion through the PD proxy succeeds. Nodes are up and images loaded
before the clock starts. The floor: pd_a2 starts both groups together (004 5.3), so the slower
group's start time; pd_pool_a2 starts pool service, decode, prefill one after the other (004 5.4),
so their sum. Target: within 1.0 x floor + 6 s. Then a no-op re-run is timed (target 5 s; it starts nothing,
so it skips preflight), what preflight's checks cost a deploy that starts something (preflight.yml less a
plan-mode run, images present), and for a
cluster reached over SSH (pd_a2) without the connection settings of docs/connections.md (pipelining, ControlPersist).
With --instances, pd_a2's nodes are measured again as 4P4D (tests/harness/inventories/pd_a2_4p4d: eight
instances, two per node) with the same start times: its time to serving against pd_a2's (target 1.1).
The clusters named by --secure are then measured again on the same nodes with every guard of the front door
on (the engines' key, a client key, TLS with a certificate made here, the host firewall with this machine as
the client network): the first completion is asked over HTTPS with the client key, and it and the no-op run
are timed. With --repeat N each time to serving is the median of N first deploys, each from torn down (this machine
varies by about half a second from run to run). Prints figures and ratios; asserts nothing. Run after `. scripts/env.sh`
(as root, Docker running):

    python benchmarks/time_to_serving.py [--cluster pd_a2 pd_pool_a2] [--decode 20] [--prefill 30] [--secure pd_a2]
                                         [--instances] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAB = ROOT / "inventories" / "lab"
HARNESS = ROOT / "tests" / "harness"
# The proxy of each harness cluster: on its first prefill node (harness inventories), port 8081 (lab).
PROXY = {"pd_a2": "10.213.7.41:8081", "pd_pool_a2": "10.213.7.61:8081"}
PROXY_NODE = {"pd_a2": "llmops-pd-a2-p0", "pd_pool_a2": "llmops-pool-a2-p0"}
sys.path.insert(0, str(HARNESS))
from certificates import install_on_node  # noqa: E402  pylint: disable=wrong-import-position
from vault_values import client_key  # noqa: E402  pylint: disable=wrong-import-position

# the client key of every harness front door (secure by default: the front door asks one of every client)
CLIENT_KEY = client_key()


# pd_a2's nodes as 4P4D: eight instances of the same engines (--instances)
EIGHT_INSTANCES = ("-i", str(HARNESS / "inventories" / "pd_a2_4p4d"))


def playbook(name, cluster, *extra, env=None):
    command = ["ansible-playbook", str(ROOT / "playbooks" / (name + ".yml")), "-i", str(LAB), "-i",
               str(HARNESS / "inventories" / cluster), *extra]
    return subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, **(env or {})))


def over_ssh(cluster):
    """Whether the harness inventory reaches its nodes over SSH (else docker exec)."""
    return (HARNESS / "inventories" / cluster / "group_vars" / "harness_nodes" / "ssh.yml").exists()


def timed(name, cluster, *extra, env=None):
    start = time.monotonic()
    run = playbook(name, cluster, *extra, env=env)
    output, _stderr = run.communicate()
    if run.returncode != 0:
        sys.exit("%s %s failed:\n%s" % (cluster, name, output[-4000:]))
    return time.monotonic() - start, output


def completion(proxy, front):
    """Whether a completion through the proxy, with the client key, comes back with text; front: None (plain HTTP) or
    the SSL context that trusts the front door's CA (HTTPS)."""
    body = json.dumps({"model": "glm", "prompt": "The future of AI is", "max_tokens": 4}).encode()
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + CLIENT_KEY}
    url = "%s://%s/v1/completions" % ("http" if front is None else "https", proxy)
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=5, context=front) as response:
            answer = json.loads(response.read().decode() or "{}")
        return bool(answer.get("choices") and answer["choices"][0].get("text"))
    except (urllib.error.URLError, OSError, ValueError):
        return False


def delays_vars(cluster, decode, prefill):
    """The lab's per-role env with the simulated start delays added (an -e replaces the whole dict)."""
    role_env = yaml.safe_load((LAB / "group_vars" / (cluster + ".yml")).read_text()).get("vllm_engine_role_env") or {}
    for role, delay in (("decode", decode), ("prefill", prefill)):
        role_env[role] = dict(role_env.get(role) or {}, VLLM_SIM_START_DELAY=str(delay))
    return json.dumps({"vllm_engine_role_env": role_env})


def secure_vars(cluster, directory):
    """What the defaults leave off, on: TLS at the front door (the certificate copied to the proxy's node) and the
    engines' key (the host firewall, client and admin keys are on by default); returns the variables and the SSL
    context that trusts the certificate's CA."""
    tls, context = install_on_node(directory, PROXY[cluster].split(":")[0], PROXY_NODE[cluster], "/etc/llmops-bench-tls")
    settings = dict(tls, vllm_engine_secret_env={"VLLM_API_KEY": "bench-engine-key-5c8e1a4f9d2b"})
    return ("-e", json.dumps(settings)), context


def measure(cluster, decode, prefill, secure, shape=(), repeat=1):
    """Time to serving of a torn-down cluster (shape: inventories laid over it, e.g. EIGHT_INSTANCES), the median of
    ``repeat`` first deploys; returns it."""
    subprocess.run([sys.executable, str(HARNESS / "nodes.py"), "up", str(HARNESS / "inventories" / cluster)], check=True,
                   capture_output=True)
    torn_down(cluster, shape)
    guards, front = (), None
    with tempfile.TemporaryDirectory(prefix="llmops-tts-") as directory:
        if secure:
            guards, front = secure_vars(cluster, directory)
        serving = timed_runs(cluster, decode, prefill, tuple(shape) + ("-e", delays_vars(cluster, decode, prefill)) + guards, front,
                             "8 instances (4P4D)" if shape else "", shape, repeat)
    playbook("teardown", cluster, *shape, "-e", "llmops_cluster=" + cluster, "-e", "llmops_confirm_teardown=" + cluster).communicate()
    return serving


def torn_down(cluster, shape):
    """Removes the cluster's containers (its models and config files stay), as before a first deploy."""
    teardown = playbook("teardown", cluster, *shape, "-e", "llmops_cluster=" + cluster, "-e", "llmops_confirm_teardown=" + cluster)
    output, _stderr = teardown.communicate()
    if teardown.returncode != 0:
        sys.exit("%s teardown failed:\n%s" % (cluster, output[-4000:]))


def first_completion(cluster, extra, front):
    """(seconds from the deploy's start to its first completion through the proxy, seconds it ran) of one deploy."""
    start = time.monotonic()
    run = playbook(cluster, cluster, *extra)
    # read while the clock runs: a playbook whose output fills the pipe would wait on its next line (64 KiB)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    serving = None
    while serving is None and time.monotonic() - start < 600:
        if completion(PROXY[cluster], front):
            serving = time.monotonic() - start
        elif run.poll() not in (None, 0):
            reader.join(10)
            sys.exit("%s deploy failed:\n%s" % (cluster, "".join(lines)[-4000:]))
        else:
            # the figure's resolution; until the proxy listens, each attempt is a refused connection
            time.sleep(0.05)
    run.wait()
    reader.join(60)
    output = "".join(lines)
    played = time.monotonic() - start
    if run.returncode != 0 or serving is None:
        sys.exit("%s deploy failed or never served:\n%s" % (cluster, output[-4000:]))
    return serving, played


def timed_runs(cluster, decode, prefill, extra, front, shape="", layers=(), repeat=1):
    """The first completion from a torn-down cluster (the median of ``repeat`` deploys, each from torn down) and a
    no-op re-run; with the guards off (front None) also the no-op run without preflight and, over SSH, without the
    connection settings (the guards do not change those). Returns the time to serving."""
    floor = max(decode, prefill) if cluster == "pd_a2" else decode + prefill
    label = cluster if front is None else cluster + " (secured: keys, TLS, host firewall)"
    label += " as %s" % shape if shape else ""
    figures = []
    for attempt in range(repeat):
        if attempt:
            torn_down(cluster, layers)
        serving, played = first_completion(cluster, extra, front)
        figures.append(serving)
        print("%s: first completion through the proxy %.1f s after the playbook started (playbook ended at %.1f s)"
              % (label, serving, played))
    serving = statistics.median(figures)
    if repeat > 1:
        print("%s: median of %d first deploys %.1f s (%s)" % (label, repeat, serving, ", ".join("%.1f" % f for f in figures)))
    target = floor + 6
    print("%s: floor %d s (decode %d s, prefill %d s, %s) -> floor + %.1f s, ratio %.2f; target floor + 6 = %.1f s -> %.2f of "
          "the target" % (label, floor, decode, prefill, "together" if cluster == "pd_a2" else "one after the other",
                          serving - floor, serving / floor, target, serving / target))
    noop, output = timed(cluster, cluster, *extra)
    changed = [line for line in output.splitlines() if " changed=" in line and " changed=0 " not in line]
    print("%s: second run with nothing changed %.1f s over %s (target 5 s -> %.2f of the target)%s"
          % (label, noop, "SSH" if over_ssh(cluster) else "docker exec", noop / 5,
             "" if not changed else "; CHANGED: %s" % changed))
    if front is not None or shape:
        return serving
    # What preflight's checks cost a deploy that starts something (a run that starts nothing skips them):
    # preflight.yml on the running cluster, less a plan-mode run of the same inventory.
    checked, _output = timed("preflight", cluster, "-e", "llmops_cluster=" + cluster, *extra)
    with tempfile.TemporaryDirectory(prefix="llmops-tts-plan-") as plan_dir:
        planned, _output = timed(cluster, cluster, *extra, "-e", "llmops_plan_dir=" + plan_dir)
    print("%s: preflight's checks take %.1f s of a deploy that starts something (preflight.yml %.1f s, plan mode %.1f s); "
          "the no-op run skipped them" % (cluster, checked - planned, checked, planned))
    if over_ssh(cluster):
        # What the connection settings of docs/connections.md buy over SSH: the same no-op run with pipelining off
        # and a new SSH connection for every task (no ControlMaster / ControlPersist).
        plain, _output = timed(cluster, cluster, *extra, env={"ANSIBLE_PIPELINING": "False", "ANSIBLE_SSH_ARGS": "-o ControlMaster=no"})
        print("%s: over SSH, pipelining and ControlPersist save %.1f s of a no-op run (%.1f s without them, %.1f s with)"
              % (cluster, plain - noop, plain, noop))
    return serving


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cluster", nargs="+", default=["pd_a2", "pd_pool_a2"], choices=sorted(PROXY))
    parser.add_argument("--decode", type=int, default=20, help="simulated decode start time, seconds")
    parser.add_argument("--prefill", type=int, default=30, help="simulated prefill start time, seconds")
    parser.add_argument("--keep-nodes", action="store_true", help="leave the harness nodes up afterwards")
    parser.add_argument("--secure", nargs="*", default=[], choices=sorted(PROXY),
                        help="measure these again with the engines' key, a client key, TLS and the host firewall on")
    parser.add_argument("--instances", action="store_true", help="measure pd_a2's nodes again as 4P4D (eight instances)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="first deploys per figure, each from torn down; the median is reported (the machine varies run to run)")
    args = parser.parse_args()
    for cluster in args.cluster:
        for secure in (False, True) if cluster in args.secure else (False,):
            serving = measure(cluster, args.decode, args.prefill, secure, repeat=args.repeat)
            if cluster == "pd_a2" and args.instances and not secure:
                eight = measure(cluster, args.decode, args.prefill, False, EIGHT_INSTANCES, args.repeat)
                print("pd_a2: 8 instances (4P4D) serve %.1f s after the playbook started against %.1f s for 1 per role: %.2f x "
                      "(target 1.1 x)" % (eight, serving, eight / serving))
        if not args.keep_nodes:
            subprocess.run([sys.executable, str(HARNESS / "nodes.py"), "down", str(HARNESS / "inventories" / cluster)],
                           check=False, capture_output=True)


if __name__ == "__main__":
    main()
