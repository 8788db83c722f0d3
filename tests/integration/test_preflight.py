# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Preflight for real: faults injected on the four pd_a2 harness nodes, the real
playbooks run against them. The nodes' npu-smi is the simulated one (tests/harness/sim_host): it
reports the processes that really hold /dev/davinciN and the health a state file gives."""

from __future__ import annotations

import json
import re
import subprocess

import pytest
from conftest import LAB, ROOT, run_playbook
from harness import containers, node_exec, nodes

# pd_a2 on nodes of its own (tests/harness/inventories/pd_a2_preflight): the deploy step's nodes run beside them
INVENTORY = ROOT / "tests" / "harness" / "inventories" / "pd_a2_preflight"
NODE = {"pd_a2_p0": "llmops-pf-a2-p0", "pd_a2_p1": "llmops-pf-a2-p1", "pd_a2_d0": "llmops-pf-a2-d0", "pd_a2_d1": "llmops-pf-a2-d1"}
# the simulated hccn_tool gives NPU N of the node at 10.213.7.X the address 192.168.X.(10+N)
NPU0 = {"pd_a2_d0": "192.168.47.10", "pd_a2_d1": "192.168.48.10"}
MODEL = "/root/.cache/GLM-5.3-Flash-w8a8"
BAD_IMAGE = "127.0.0.1:5999/llmops-engine:absent"  # a registry on the node's loopback that is not there


def sh(host, script):
    return node_exec(NODE[host], "sh", "-c", script)


def background(host, script):
    subprocess.run(["docker", "exec", "-d", NODE[host], "sh", "-c", script], check=True)
    for _attempt in range(50):
        if node_exec(NODE[host], "pgrep", "-f", "^" + script.split("exec ", 1)[-1].split(" 3<")[0]).stdout.strip():
            return
    raise AssertionError("%s did not start on %s" % (script, host))


def hccn_state(host, state):
    """Write (or with None remove) the simulated hccn_tool's state files on a node: {"link": {"6": "DOWN"}, ...,
    "unreachable": [addresses]}."""
    if state is None:
        return sh(host, "rm -rf /var/lib/llmops-sim/hccn")
    lines = ["mkdir -p /var/lib/llmops-sim/hccn"]
    for key, values in state.items():
        if key == "unreachable":
            lines.append("printf '%s\\n' > /var/lib/llmops-sim/hccn/unreachable" % "\\n".join(values))
        else:
            lines += ["echo %s > /var/lib/llmops-sim/hccn/%s.%s" % (value, key, npu) for npu, value in values.items()]
    return sh(host, " && ".join(lines))


# Each fault: (inject, undo, extra playbook args, the row it must produce: host, check, found pattern).
FAULTS = {
    "npu_held": (lambda: background("pd_a2_d0", "exec sleep 900 3</dev/davinci2"), lambda: sh("pd_a2_d0", "pkill -f 'sleep 900'"), (),
                 ("pd_a2_d0", "devices", r"NPU 2 held by process \d+ \(sleep\)")),
    "npu_missing": (lambda: sh("pd_a2_d1", "rm /dev/davinci5"), lambda: sh("pd_a2_d1", "mknod /dev/davinci5 c 1 3"), (),
                    ("pd_a2_d1", "devices", r"/dev/davinci5 missing")),
    "npu_unhealthy": (lambda: sh("pd_a2_d1", "mkdir -p /var/lib/llmops-sim && echo '{\"health\": {\"6\": \"Critical\"}}' > /var/lib/llmops-sim/npu.json"),
                      lambda: sh("pd_a2_d1", "rm -f /var/lib/llmops-sim/npu.json"), (),
                      ("pd_a2_d1", "devices", r"NPU 6 health Critical")),
    "model_missing": (lambda: sh("pd_a2_p1", "mv %s /root/.cache/moved" % MODEL), lambda: sh("pd_a2_p1", "mv /root/.cache/moved %s" % MODEL), (),
                      ("pd_a2_p1", "mount sources", r"model directory %s missing" % MODEL)),
    "port_held": (lambda: background("pd_a2_p0", "exec python3 -m http.server 9081"), lambda: sh("pd_a2_p0", "pkill -f 'http.server 9081'"), (),
                  ("pd_a2_p0", "ports", r"port 9081 held by process \d+ \(python3\)")),
    "nic_without_address": (lambda: None, lambda: None, ("-e", "vllm_engine_nic=lo"),
                            ("pd_a2_d0", "network", r"NIC lo has 127\.0\.0\.1")),
    "image_pull_fails": (lambda: None, lambda: None, ("-e", "vllm_engine_image=" + BAD_IMAGE),
                         ("pd_a2_p1", "images", re.escape(BAD_IMAGE) + r" missing; pull failed: .+")),
    "link_down": (lambda: hccn_state("pd_a2_d1", {"link": {"6": "DOWN"}}), lambda: hccn_state("pd_a2_d1", None), (),
                  ("pd_a2_d1", "fabric", r"NPU 6 link DOWN")),
    "tls_differs": (lambda: hccn_state("pd_a2_d0", {"tls": {str(n): 1 for n in range(8)}}), lambda: hccn_state("pd_a2_d0", None), (),
                    ("pd_a2_d0", "fabric", r"NPU 3 TLS switch 1")),
    "peer_unreachable": (lambda: hccn_state("pd_a2_p0", {"unreachable": [NPU0["pd_a2_d1"]]}), lambda: hccn_state("pd_a2_p0", None), (),
                         ("pd_a2_p0", "fabric", r"NPU 0 cannot reach %s of pd_a2_d1" % re.escape(NPU0["pd_a2_d1"]))),
    "shm_too_large": (lambda: None, lambda: None, ("-e", json.dumps({"ascend_driver_overrides": {"privileged": False, "shm_size": "900g"}})),
                      ("pd_a2_d0", "memory", r"\d+ GiB of memory in all")),
    "docker_too_old": (lambda: None, lambda: None, ("-e", "llmops_preflight_docker_min=99.0"),
                       ("pd_a2_p1", "container runtime", r"Docker 20\.10\.\S+")),
    "known_bad_version": (lambda: sh("pd_a2_p0", "mkdir -p /usr/local/Ascend/ascend-toolkit/latest && "
                                     "echo version=8.3.RC1 > /usr/local/Ascend/ascend-toolkit/latest/version.cfg"),
                          lambda: sh("pd_a2_p0", "rm -rf /usr/local/Ascend/ascend-toolkit"), (),
                          ("pd_a2_p0", "versions", r"cann 8\.3\.RC1")),
}


def preflight(*extra):
    return run_playbook("preflight.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", *extra, check=False)


def deploy(*extra, check=True):
    return run_playbook("pd_a2.yml", LAB, "-i", str(INVENTORY), *extra, check=check)


def rows(output):
    """The report's rows as (host, check, found) from the debug table."""
    found = []
    for line in re.findall(r'^\s+"(pd_a2_\S+\s+.*)",?$', output, re.M):
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) >= 3 and cells[1] in ("container runtime", "devices", "mount sources", "ports", "network", "images", "versions",
                                            "fabric", "memory"):
            found.append(tuple(cells[:3]))
    return found


def matches(found, expected):
    host, check, pattern = expected
    return any(h == host and c == check and re.fullmatch(pattern, f) for h, c, f in found)


def all_containers():
    return {host: containers(node, "pd_a2") for host, node in NODE.items()}


@pytest.fixture(scope="module")
def clean_nodes():
    nodes(INVENTORY, "down")
    nodes(INVENTORY, "up")
    yield
    run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", "-e", "llmops_confirm_teardown=pd_a2", check=False)
    nodes(INVENTORY, "down")


def test_clean_nodes_pass_with_a_summary_per_host(clean_nodes):
    result = preflight()
    assert result.returncode == 0, result.output[-3000:]
    assert "preflight of cluster pd_a2: every host is ready for its part of the plan" in result.output
    assert re.search(r'"pd_a2_d1: docker [\d.]+\S*; npu-smi 23\.0\.6, 8 NPUs; memory', result.output)
    # the NPU ping matrix: prefill nodes to decode nodes, and between the nodes of each DP group
    assert "pd_a2_p0 NPU 0 -> pd_a2_d1 (%s): ok" % NPU0["pd_a2_d1"] in result.output
    assert "pd_a2_d1 NPU 0 -> pd_a2_d0 (%s): ok" % NPU0["pd_a2_d0"] in result.output


# Every fault of FAULTS but npu_unhealthy (the re-run test's) in two runs, each a report of many rows: the faults on the
# nodes together, then those of the inventory's settings together. Each row is a problem, and one problem fails the
# run, so each fault alone would fail it; a run per fault cost a preflight run each (about 25 s on a slow machine).
ON_THE_NODES = ["npu_held", "npu_missing", "model_missing", "port_held", "known_bad_version", "link_down", "tls_differs", "peer_unreachable"]
IN_THE_INVENTORY = ["nic_without_address", "image_pull_fails", "shm_too_large", "docker_too_old"]


def test_every_fault_is_found_and_faults_on_several_hosts_come_in_one_report(clean_nodes):
    assert sorted(ON_THE_NODES + IN_THE_INVENTORY + ["npu_unhealthy"]) == sorted(FAULTS)  # each fault in a run
    for name in ON_THE_NODES:
        FAULTS[name][0]()
    try:
        result = preflight()
    finally:
        for name in ON_THE_NODES:
            FAULTS[name][1]()
    assert_refused(result, ON_THE_NODES)


def test_every_fault_of_the_inventorys_settings_is_found_in_one_report(clean_nodes):
    extra = [arg for name in IN_THE_INVENTORY for arg in FAULTS[name][2]]
    assert_refused(preflight(*extra), IN_THE_INVENTORY)


def assert_refused(result, names):
    """The run failed, found each fault's row (host, check, found) among its problems, and started nothing."""
    assert result.returncode != 0
    found = rows(result.output)
    assert [name for name in names if not matches(found, FAULTS[name][3])] == [], found
    assert "found %d problem(s)" % len(found) in result.output
    assert "nothing was started or stopped" in result.output
    assert all_containers() == {host: {} for host in NODE}


def test_a_deploy_whose_preflight_fails_starts_nothing_and_skip_tags_skips_it(clean_nodes):
    inject, undo, _extra, expected = FAULTS["model_missing"]
    inject()
    try:
        result = deploy(check=False)
        assert result.returncode != 0 and matches(rows(result.output), expected)
        assert all_containers() == {host: {} for host in NODE}
        skipped = deploy("--skip-tags", "preflight", "--list-tasks")
        assert "Gather what the plan depends on" not in skipped.output
        assert "Gather what the plan depends on" in deploy("--list-tasks").output
    finally:
        undo()


def test_a_host_without_docker_is_reported_by_preflight_and_stops_deploy_by_name(clean_nodes):
    """Deploy looks at every host before preflight; a host it cannot look at is preflight's to report."""
    sh("pd_a2_d1", "mv /usr/bin/docker /usr/bin/docker.moved")
    try:
        result = deploy(check=False)
        skipped = deploy("--skip-tags", "preflight", check=False)
    finally:
        sh("pd_a2_d1", "mv /usr/bin/docker.moved /usr/bin/docker")
    assert result.returncode != 0 and matches(rows(result.output), ("pd_a2_d1", "container runtime", r"docker does not answer: .+"))
    assert skipped.returncode != 0
    assert "host pd_a2_d1: its containers could not be compared with the plan (Failed to find required executable" in skipped.output
    assert all_containers() == {host: {} for host in NODE}


def test_a_rerun_on_the_running_cluster_passes_and_a_failed_one_stops_nothing(clean_nodes):
    deploy()
    before = all_containers()
    result = preflight()
    assert result.returncode == 0, result.output[-3000:]  # its own containers hold the ports and NPUs
    inject, undo, _extra, expected = FAULTS["npu_unhealthy"]
    inject()
    try:
        # a re-run that starts nothing checks nothing (preflight.yml above does, any time)
        unchanged = deploy(check=False)
        result = deploy("-e", json.dumps({"pd_proxy_extra_flags": {"max-retries": 5}}), check=False)
    finally:
        undo()
    assert unchanged.returncode == 0, unchanged.output[-3000:]
    assert "preflight of cluster pd_a2: skipped, every container runs with its planned spec and none starts" in unchanged.output
    assert "Gather what the plan depends on" not in unchanged.output
    assert result.returncode != 0 and matches(rows(result.output), expected)
    assert all_containers() == before  # the proxy's change waits; nothing running was stopped
