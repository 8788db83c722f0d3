# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What plan mode costs as a cluster grows: prints measured figures and ratios, asserts nothing.

For each size it generates a pd_a2-shaped inventory (004 5.3: P0 with the prefill API, P1
headless, then decode nodes of four DP ranks each, the decode DP group growing with them) on
documentation addresses (192.0.2.0/24), runs the real `ansible-playbook playbooks/pd_a2.yml` in
plan mode with every host behind the tests' tripwire connection (a host that is contacted fails
the run), and reports the wall time. Target: 64 hosts within 4 x the time of 4 hosts,
128 hosts within a minute. Run after `. scripts/env.sh`:

    python benchmarks/plan_scale.py [--hosts 4 16 64 128] [--repeat 1]
"""

from __future__ import annotations

import argparse
import copy
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAB = ROOT / "inventories" / "lab"
NO_CONNECT = ROOT / "tests" / "integration" / "no_connect.yml"
TRIPWIRE = ROOT / "tests" / "integration" / "connection_plugins"
RANKS_PER_DECODE_NODE = 4


def inventory(directory, hosts):
    """A pd_a2 cluster of ``hosts`` nodes (2 prefill + the rest decode) written under directory."""
    lab = yaml.safe_load((LAB / "group_vars" / "pd_a2.yml").read_text())
    lab_hosts = yaml.safe_load((LAB / "hosts.yml").read_text())["all"]["children"]["pd_a2"]["hosts"]
    decode_nodes = hosts - 2
    dp_size = decode_nodes * RANKS_PER_DECODE_NODE
    group_vars = copy.deepcopy(lab)
    group_vars["vllm_engine_groups"]["decode"]["dp_size"] = dp_size
    # 100 HCCL ports per rank from 60000 fit 55 ranks; a larger group takes 10 each.
    group_vars["vllm_engine_groups"]["decode"]["hccl_port_range"] = {"base": 50000, "stride": 10, "size": 10}
    group_vars["vllm_engine_mooncake_extra_config"]["decode"]["dp_size"] = dp_size
    members = {"pd_a2_p0": lab_hosts["pd_a2_p0"], "pd_a2_p1": lab_hosts["pd_a2_p1"]}
    for index in range(decode_nodes):
        members["pd_a2_d%d" % index] = {
            "ansible_host": "192.0.2.%d" % (index + 50), "vllm_engine_nic": "eth0", "vllm_engine_role": "decode",
            "vllm_engine_local_ranks": RANKS_PER_DECODE_NODE, "vllm_engine_rank_start": index * RANKS_PER_DECODE_NODE,
        }
    (directory / "group_vars").mkdir(parents=True)
    # the lab's settings for every cluster as they are (the client network, and the client key the secure defaults ask
    # for: an ansible-vault value, which Ansible decrypts with the lab's demo password), then pd_a2's
    shutil.copy(LAB / "group_vars" / "all.yml", directory / "group_vars" / "all.yml")
    (directory / "group_vars" / "pd_a2.yml").write_text(yaml.safe_dump(group_vars, sort_keys=False))
    (directory / "hosts.yml").write_text(yaml.safe_dump({"all": {"children": {"pd_a2": {"hosts": members}}}}))
    return directory


def plan_seconds(inventory_dir, plan_dir):
    env = dict(os.environ, ANSIBLE_CONNECTION_PLUGINS=str(TRIPWIRE))
    command = ["ansible-playbook", str(ROOT / "playbooks" / "pd_a2.yml"), "-i", str(inventory_dir), "-i", str(NO_CONNECT),
               "-e", "llmops_plan_dir=%s" % plan_dir]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0 or "TRIPWIRE" in result.stdout:
        sys.exit("plan mode failed for %s:\n%s" % (inventory_dir, (result.stdout + result.stderr)[-3000:]))
    return seconds, sum(1 for _spec in plan_dir.glob("*/*.json"))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[4, 16, 64, 128])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory(prefix="llmops-plan-scale-") as tmp:
        for hosts in args.hosts:
            times = []
            for run in range(args.repeat):
                base = pathlib.Path(tmp) / ("%d-%d" % (hosts, run))
                seconds, specs = plan_seconds(inventory(base / "inventory", hosts), base / "plan")
                times.append(seconds)
            figures[hosts] = statistics.median(times)
            print("plan mode, pd_a2 shape, %3d hosts, %4d launch specs: %6.1f s (median of %d)"
                  % (hosts, specs, figures[hosts], args.repeat), flush=True)
    smallest = min(figures)
    for hosts, seconds in sorted(figures.items()):
        if hosts != smallest:
            print("ratio %d / %d hosts: %.2f (host ratio %.0f)" % (hosts, smallest, seconds / figures[smallest], hosts / smallest))
    if 64 in figures and 4 in figures:
        print("target: 64 hosts within 4 x 4 hosts -> measured %.2f x (%.2f of the target)"
              % (figures[64] / figures[4], figures[64] / figures[4] / 4))
    if 128 in figures:
        print("target: 128 hosts within 60 s -> measured %.1f s (%.2f of the target)" % (figures[128], figures[128] / 60))


if __name__ == "__main__":
    main()
