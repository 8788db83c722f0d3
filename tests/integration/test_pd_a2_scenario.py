# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deploy mode for real, as one ordered scenario: the lab's pd_a2 (004 5.3, four A2 nodes) on four harness
nodes, deployed once (the module fixture ``deployed``) and lived with in the order an operator would.

The real vllm-ascend proxy routes a completion to P0 and then to a decode rank; the engines are the simulated
ones (tests/harness/sim_vllm). Bringing the four nodes up and the cluster serving is most of the cost, so the
tests share that one deployment and run in file order, in phases:

1. Serving (read only): every container on its node, models, DP groups, PD decode with the prefill's KV,
   prefix reuse, verify's report.
2. Re-runs and changes: a second run touches nothing, check mode, a changed spec restarts only its container.
3. Failures during a deploy: an exiting container, a rank killed while loading, progress lines, a planted
   secret (each ends by deploying the lab's plan again).
4. Operating it: status healthy and degraded, recovery of a dead rank's DP group, verify failing on a dead
   decode group, stop and start again, a new image rolled group by group, a broken inventory refused.
5. Everything on: the engines' key, client and admin keys, TLS and the host firewall at once, through a second
   run, status, stop and start, verify and a rolled image (the firewall stays on for the teardown).
6. Teardown, last: refused without the cluster's name, then every container removed, the model kept.

Most tests end by deploying the lab's plan again; a test that leaves a fault (the dead rank of
test_status_names_a_dead_rank_and_exits_non_zero) is followed by the one that recovers from it, and phase 6
leaves nothing running. So the order is the scenario's: run the module whole.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import tarfile
import threading
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET

import pytest
from conftest import HERE, LAB, ROOT, run_playbook
from harness import (
    ATTACKER,
    CLIENT,
    SECOND_ATTACKER,
    attacker,
    containers,
    finished_at,
    http_json,
    http_text,
    install_on_node,
    lock_holder,
    node_docker,
    node_exec,
    nodes,
    recap_changed,
    tcp_from,
    wait_http,
    wait_until,
)

INVENTORY = ROOT / "tests" / "harness" / "inventories" / "pd_a2"
NODES = {"pd_a2_p0": ("llmops-pd-a2-p0", "10.213.7.41"), "pd_a2_p1": ("llmops-pd-a2-p1", "10.213.7.42"),
         "pd_a2_d0": ("llmops-pd-a2-d0", "10.213.7.43"), "pd_a2_d1": ("llmops-pd-a2-d1", "10.213.7.44")}
PROXY = "http://10.213.7.41:8081"
TEARDOWN = ("-e", "llmops_cluster=pd_a2", "-e", "llmops_confirm_teardown=pd_a2")


def deploy(*extra, check=True):
    return run_playbook("pd_a2.yml", LAB, "-i", str(INVENTORY), *extra, check=check)


def all_containers():
    return {host: containers(node, "pd_a2") for host, (node, _ip) in NODES.items()}


@pytest.fixture(scope="module")
def deployed():
    nodes(INVENTORY, "up")
    result = deploy()
    yield result
    run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), *TEARDOWN, check=False)


def test_every_container_of_the_plan_runs_on_its_node(deployed):
    running = all_containers()
    assert sorted(running["pd_a2_p0"]) == ["pd-proxy", "vllm-ascend-prefill-dp0"]
    assert sorted(running["pd_a2_p1"]) == ["vllm-ascend-prefill-dp1"]
    assert sorted(running["pd_a2_d0"]) == ["vllm-ascend-decode-dp%d" % r for r in range(4)]
    assert sorted(running["pd_a2_d1"]) == ["vllm-ascend-decode-dp%d" % r for r in range(4, 8)]
    assert all(up for host in running.values() for _started, up in host.values())


def test_every_api_rank_lists_its_model(deployed):
    endpoints = [("10.213.7.41", 9081)] + [(ip, port) for ip in ("10.213.7.43", "10.213.7.44") for port in range(9900, 9904)]
    for ip, port in endpoints:
        models = http_json("http://%s:%d/v1/models" % (ip, port))
        assert [m["id"] for m in models["data"]] == ["glm"], (ip, port)


def test_dp_groups_are_complete(deployed):
    # The headless prefill rank has no API: its log shows the engine finished initialising,
    # which the simulated engine (like vLLM) only does once all DP ranks joined the group.
    logs = node_docker("llmops-pd-a2-p1", "logs", "vllm-ascend-prefill-dp1")
    assert "init engine (profile, create kv cache, warmup model) took" in logs.stdout + logs.stderr
    coordinator = node_docker("llmops-pd-a2-d0", "logs", "vllm-ascend-decode-dp0")
    assert "(8/8)" in coordinator.stdout + coordinator.stderr
    assert "from 10.213.7.44" in coordinator.stdout + coordinator.stderr


def test_completion_through_the_proxy_is_decoded_with_the_prefill_kv(deployed):
    health = wait_http(PROXY + "/healthcheck")
    assert (health["prefill_instances"], health["decode_instances"]) == (1, 8)
    answer = http_json(PROXY + "/v1/completions", {"model": "glm", "prompt": "The future of AI is", "max_tokens": 8}, headers=CLIENT)
    assert answer["object"] == "text_completion" and answer["choices"][0]["text"]
    # decode rank's fingerprint: it reached the prefill's Mooncake port (30000 + rank 0 * tp 8) on P0
    assert re.fullmatch(r"sim-vllm:kv_consumer:[0-9a-f-]+:from:[0-9a-f-]+@10\.213\.7\.41:30000", answer["system_fingerprint"])


def test_repeated_prompts_hit_the_prefix_cache(deployed):
    prompt = " ".join("word%d" % i for i in range(300))  # two full 128-token blocks
    before = http_text("http://10.213.7.41:9081/metrics")
    for _round in range(2):
        http_json(PROXY + "/v1/completions", {"model": "glm", "prompt": prompt, "max_tokens": 4}, headers=CLIENT)
    after = http_text("http://10.213.7.41:9081/metrics")
    hits = [float(re.search(r"^vllm:prefix_cache_hits_total\{.*\} (\S+)$", text, re.M).group(1)) for text in (before, after)]
    assert hits[1] - hits[0] == 256


def verify_cluster():
    return run_playbook("verify.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", check=False)


def test_verify_proves_serving_and_kv_reuse_with_a_report(deployed):
    result = verify_cluster()
    assert result.returncode == 0, result.output[-3000:]
    assert "cluster pd_a2 serves: every check passed" in result.output
    assert re.search(r"vllm-ascend-decode-dp7 \(pd_a2_d1\)\s+/v1/models\s+ok\s+\d+ ms", result.output)
    assert re.search(r"completion through pd-proxy: HTTP 200, time to first token \d+ ms", result.output)
    # the prefill rank saw the long prompt twice: its second pass hit four 128-token blocks
    before, after = map(float, re.search(r"vllm-ascend-prefill-dp0: .*, prefix_cache_hits_total ([\d.]+) -> ([\d.]+)", result.output).groups())
    assert after - before == 512
    # a decode rank took the completion's KV from the prefill
    moved = re.findall(r"vllm-ascend-decode-dp\d: .*external_prefix_cache_hits_total ([\d.]+) -> ([\d.]+)", result.output)
    assert [float(after) - float(before) for before, after in moved] == [5.0]  # the prompt's five tokens, on one rank


# benchmark.yml: real vLLM's `vllm bench serve` (the harness's real-vLLM install, mounted into the client) against the
# simulated engines behind the real proxy; small workloads, each bounded by its prompt count
BENCH_WORKLOADS = {"random": {"dataset": "random", "input_len": 64, "output_len": 16, "num_prompts": 16, "concurrencies": [1, 4]},
                   "shared_prefix": {"dataset": "prefix_repetition", "prefix_len": 256, "input_len": 32, "num_prefixes": 2,
                                     "output_len": 16, "num_prompts": 16, "concurrencies": [4]}}


def benchmark(directory, *extra, workloads=None):
    # an empty mount (nodes started before the build) leaves the simulator's `vllm`, whose usage line says nothing of why
    if node_exec("llmops-pd-a2-p0", "test", "-x", "/opt/llmops-vllm-cpu/bin/vllm").returncode != 0:
        pytest.fail("real vLLM is not in the nodes: run bash tests/harness/vllm_cpu/build.sh, then recreate them "
                    "(python tests/harness/nodes.py down tests/harness/inventories/pd_a2)")
    return run_playbook("benchmark.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", "-e", "llmops_benchmark_dir=%s" % directory,
                        "-e", json.dumps({"llmops_benchmark_workloads": workloads or BENCH_WORKLOADS}), *extra, check=False)


def run_dirs(directory):
    return sorted(p for p in directory.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def swept(deployed, tmp_path_factory):
    """One benchmark.yml run of BENCH_WORKLOADS: (its output, the directory its run went to)."""
    directory = tmp_path_factory.mktemp("bench")
    return benchmark(directory), directory


def test_benchmark_sweeps_the_front_door_and_reports_figures_and_hit_shares(swept):
    result, directory = swept
    assert result.returncode == 0, result.output[-3000:]
    for index, point in enumerate(("random concurrency 1", "random concurrency 4", "shared_prefix concurrency 4")):
        assert re.search(r"point %d: %s: 16 of 16 completed, [\d.]+ req/s" % (index + 1, point), result.output), point
    (run,) = run_dirs(directory)
    assert re.fullmatch(r"pd_a2-\d{8}T\d{6}Z", run.name)
    wanted = ["01-random-concurrency-1.json", "02-random-concurrency-4.json", "03-shared_prefix-concurrency-4.json"]
    assert sorted(p.name for p in (run / "points").iterdir()) == wanted
    raw = json.loads((run / "points" / "02-random-concurrency-4.json").read_text())
    assert raw["completed"] == 16 and raw["failed"] == 0 and raw["max_concurrency"] == 4 and raw["total_output_tokens"] == 16 * 16
    summary = json.loads((run / "summary.json").read_text())
    assert summary["images"] == ["llmops-engine:test"] and len(summary["digest"]) == 16 and summary["shape"]
    for row in summary["rows"]:
        # every decode prompt token came by the PD transfer; the sim streams a token at a time
        assert row["shares"]["transfer"] == 1.0 and row["shares"]["prompt_tokens"] > 0 and row["request_throughput"] > 0
    counters = json.loads((run / "counters.json").read_text())
    assert {"vllm-ascend-prefill-dp0", "vllm-ascend-decode-dp7"} <= set(counters[0]["engines_after"])
    assert ET.fromstring((run / "sweep.svg").read_bytes()).tag == "{http://www.w3.org/2000/svg}svg"
    report = (run / "report.txt").read_text()
    assert report.startswith("cluster pd_a2, plan %s" % summary["digest"]) and "PD KV" in report


def test_benchmark_refuses_bad_workloads_and_baselines_before_sending_a_request(deployed, tmp_path_factory):
    directory = tmp_path_factory.mktemp("bench-refused")
    result = benchmark(directory, workloads={"random": {"concurrencies": [1], "input_length": 64}, "slo": {"goodput": {"ttft": 500}}})
    assert result.returncode != 0
    assert "llmops_benchmark_workloads.random.input_length: is no setting of a workload" in result.output
    assert "llmops_benchmark_workloads.slo: sweeps nothing" in result.output
    other = directory / "other"
    other.mkdir()
    (other / "summary.json").write_text(json.dumps({"rows": [], "shape": ["pd_a2_p0/vllm-ascend-prefill-dp0 0,1"]}))
    result = benchmark(directory, "-e", "llmops_benchmark_baseline=%s" % other)
    assert result.returncode != 0 and "llmops_benchmark_baseline: that run measured a cluster of another shape" in result.output
    assert "Nothing was sent" in result.output and "Run the sweep point" not in result.output
    assert [p.name for p in directory.iterdir()] == ["other"]  # no report written


def test_benchmark_flags_a_regression_against_its_baseline(swept, tmp_path_factory):
    """A baseline that served three times the requests a second of the sweep's run (its summary, figures raised): the
    figures measured now are worse, marked as regressions, and the run exits non-zero only when
    llmops_benchmark_fail_on_regression asks. (Slowing the engines down instead cost two deploys, each restarting
    every decode engine.)"""
    assert swept[0].returncode == 0, swept[0].output[-3000:]
    (measured,) = run_dirs(swept[1])
    baseline = tmp_path_factory.mktemp("bench-faster") / measured.name
    baseline.mkdir()
    summary = json.loads((measured / "summary.json").read_text())
    for row in summary["rows"]:
        row["request_throughput"] *= 3
    (baseline / "summary.json").write_text(json.dumps(summary))
    directory = tmp_path_factory.mktemp("bench-regression")
    workloads = {"random": dict(BENCH_WORKLOADS["random"], concurrencies=[4])}
    result = benchmark(directory, "-e", "llmops_benchmark_baseline=%s" % baseline, "-e", "llmops_benchmark_fail_on_regression=true",
                       workloads=workloads)
    assert result.returncode != 0
    assert re.search(r"random concurrency 4: req/s [\d.]+ -> [\d.]+ \(-\d+\.\d%\)  REGRESSION \(beyond 10%\)", result.output)
    assert "figure(s) regressed against %s" % baseline in result.output
    latest = run_dirs(directory)[-1]
    assert json.loads((latest / "summary.json").read_text())["regressions"]
    assert benchmark(directory, "-e", "llmops_benchmark_baseline=%s" % baseline, workloads=workloads).returncode == 0  # not asked


def test_second_run_changes_and_restarts_nothing(deployed):
    before = all_containers()
    result = deploy()
    assert set(recap_changed(result.output).values()) == {0}, result.output[-2000:]
    assert all_containers() == before


def test_check_mode_shows_a_change_and_does_nothing(deployed):
    before = all_containers()
    result = deploy("--check", "--diff", "-e", '{"pd_proxy_extra_flags": {"max-retries": 5}}')
    assert recap_changed(result.output)["pd_a2_p0"] > 0
    # the play says what restarts and why, and --diff shows the changed flag line by line
    assert "step 3 (wave 1, rolled): pd-proxy on pd_a2_p0: --max-retries: (unset) -> 5" in result.output
    assert re.search(r"^\+--max-retries 5$", result.output, re.M)
    assert all_containers() == before


def test_a_changed_spec_restarts_only_its_container(deployed):
    before = all_containers()
    deploy("-e", '{"pd_proxy_extra_flags": {"max-retries": 5}}')
    after = all_containers()
    assert after["pd_a2_p0"]["pd-proxy"][0] != before["pd_a2_p0"]["pd-proxy"][0]
    for host, found in after.items():
        for name, state in found.items():
            if name != "pd-proxy":
                assert state == before[host][name], name
    assert "--max-retries" in node_docker("llmops-pd-a2-p0", "inspect", "-f", "{{json .Args}}", "pd-proxy").stdout
    wait_http(PROXY + "/healthcheck")


def test_a_container_that_exits_fails_the_play_with_its_log(deployed):
    # preflight would refuse the missing model before any start: skip it to see the engine fail
    result = deploy("-e", "vllm_engine_model=/root/.cache/no-such-model", "--skip-tags", "preflight", check=False)
    assert result.returncode != 0
    assert re.search(r"container vllm-ascend-decode-dp\d is exited \d+ before it was ready", result.output)
    assert "model path /root/.cache/no-such-model has no config.json" in result.output
    deploy()  # back to the good plan for the remaining tests
    wait_http(PROXY + "/healthcheck")


def test_a_container_killed_while_starting_fails_the_whole_play_within_seconds(deployed):
    """While every rank is still loading, the play prints every 2 s (container_launch_progress_interval) which ranks
    are: then decode rank 2 on D0 dies. D0's wait fails with its log; the other hosts' waits (whose DP groups can
    never complete) stop at once instead of running into their timeout, and the play fails naming the container."""
    run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), *TEARDOWN)
    slow = {"vllm_engine_role_env": {role: {"VLLM_SIM_START_DELAY": "60"} for role in ("prefill", "decode")},
            "container_launch_progress_interval": 2}
    command = ["ansible-playbook", str(ROOT / "playbooks" / "pd_a2.yml"), "-i", str(LAB), "-i", str(INVENTORY),
               "-e", json.dumps(slow)]
    env = dict(os.environ, ANSIBLE_CONNECTION_PLUGINS=str(HERE / "connection_plugins"))
    play = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(play.stdout), daemon=True)  # the play's output as it comes
    reader.start()
    victim = "vllm-ascend-decode-dp2"
    deadline = time.monotonic() + 90
    while not all_containers()["pd_a2_p1"]:  # the last host's rank exists: every container started
        assert play.poll() is None and time.monotonic() < deadline, "the play ended before all containers started"
        time.sleep(0.5)

    def loading():  # the victim logged its start and sleeps through its start delay (VLLM_SIM_START_DELAY)
        logs = node_docker("llmops-pd-a2-d0", "logs", victim)
        return "vllm serve" in logs.stdout + logs.stderr

    wait_until(loading, 30, "%s's start line" % victim)
    progress = re.compile(r"pd_a2_d1: [0-3] of 4 ready after \d+ s; still loading: vllm-ascend-decode-dp4 \(DP rank 4\)")
    wait_until(lambda: any(progress.search(line) for line in list(lines)), 30, "a progress line naming D1's loading ranks")
    node_docker("llmops-pd-a2-d0", "kill", victim)
    killed = time.monotonic()
    play.wait(timeout=120)
    took = time.monotonic() - killed
    reader.join(timeout=30)
    output = "".join(lines)
    assert play.returncode != 0
    assert took < 15, "the play ended %.1f s after the kill" % took
    assert re.search(r"container %s is exited \d+ before it was ready" % victim, output)
    assert re.search(r"fatal: \[pd_a2_p1\].*stopped waiting for vllm-ascend-prefill-dp1: the wait on host pd_a2_d0 failed", output)
    assert "pd-proxy" not in all_containers()["pd_a2_p0"]  # the next wave never started
    deploy()  # back to the good plan for the remaining tests
    wait_http(PROXY + "/healthcheck")


CLIENT_KEYS = ["client-old-4711-5e2a9c0d7b3f", "client-new-4711-8d1f4b6e2a9c"]
ADMIN_KEY = "admin-4711-3b7e0c9a5d2f1e8b"


def attempts_from_outside(client_key, *extra, old_key="", address=ATTACKER):
    """The catalogue (tests/harness/front_door_attempts.py) from a container on the nodes' network that is not a node."""
    found = attacker("--proxy", PROXY, "--engine", "http://10.213.7.43:9900", "--bait-host", address, "--bait-port", "9900",
                     "--client-key", client_key, "--old-key", old_key, "--admin-key", ADMIN_KEY, *extra, address=address)
    return {a["attempt"]: a["status"] for a in found["attempts"]}, found["bait"]


def test_a_planted_secret_reaches_the_engine_and_no_output(deployed, tmp_path):
    """vllm_engine_secret_env reaches the containers; no output shows it, at -vvv, in --diff too. The front door
    then checks client keys: the catalogue of attempts from outside, and a key rotated out."""
    planted = "s3cr3t-planted-4711-9c2e7a1b"
    # the attacker is a client network here: what its keys get is the point (the firewall is on, as by default)
    keys = {"vllm_engine_secret_env": {"VLLM_API_KEY": planted}, "pd_proxy_client_keys": CLIENT_KEYS, "pd_proxy_admin_keys": [ADMIN_KEY],
            "host_firewall_client_networks": ["10.213.7.1/32", ATTACKER + "/32", SECOND_ATTACKER + "/32"]}
    result = deploy("-vvv", "-e", json.dumps(keys))
    assert planted not in result.output and not any(key in result.output for key in CLIENT_KEYS + [ADMIN_KEY])
    assert "the output has been hidden due to the fact that 'no_log: true' was specified" in result.output
    # the keys reach the containers as files (0400 in a 0700 directory), never as environment docker inspect shows
    env = json.loads(node_docker("llmops-pd-a2-d0", "inspect", "-f", "{{json .Config.Env}}", "vllm-ascend-decode-dp0").stdout)
    assert not any(planted in item for item in env)
    key_file = "/etc/llmops/secrets/vllm-ascend-decode-dp0/VLLM_API_KEY"
    assert node_exec("llmops-pd-a2-d0", "stat", "-c", "%a %U", key_file, key_file.rsplit("/", 1)[0]).stdout.split() == [
        "400", "root", "700", "root"]
    assert node_exec("llmops-pd-a2-d0", "cat", key_file).stdout == planted + "\n"
    # the engines' guard refuses every route but /health and /metrics without the key; the proxy sends it
    for path in ("/v1/models", "/invocations", "/tokenize"):
        with pytest.raises(urllib.error.HTTPError, match="401"):
            http_json("http://10.213.7.43:9900" + path)
    assert http_text("http://10.213.7.43:9900/health") == ""
    env = json.loads(node_docker("llmops-pd-a2-p0", "inspect", "-f", "{{json .Config.Env}}", "pd-proxy").stdout)
    assert not any(secret in item for item in env for secret in [planted] + CLIENT_KEYS + [ADMIN_KEY])
    wait_http(PROXY + "/healthcheck")
    with pytest.raises(urllib.error.HTTPError, match="401"):
        http_json(PROXY + "/v1/completions", {"model": "glm", "prompt": "without a key", "max_tokens": 4})
    answer = http_json(PROXY + "/v1/completions", {"model": "glm", "prompt": "with a key", "max_tokens": 4},
                       headers={"Authorization": "Bearer " + CLIENT_KEYS[0]})
    assert answer["choices"][0]["text"]
    # the launcher runs with umask 077: the upstream manager's authkey file (workers > 1) is its owner's alone
    # the proxy's Python processes: argv[1] is the launcher (not docker-init's "-- python ...", nor this one)
    umasks = ("import glob; print(sorted({open(p[:-7] + 'status').read().split('Umask:')[1].split()[0] "
              "for p in glob.glob('/proc/[0-9]*/cmdline') if open(p, 'rb').read().split(b'\\0')[1:2] "
              "== [b'/etc/llmops/pd_proxy/front_door.py']}))")
    assert node_docker("llmops-pd-a2-p0", "exec", "pd-proxy", "python3", "-c", umasks).stdout.strip() == "['0077']"
    tried, bait = attempts_from_outside(CLIENT_KEYS[1])
    print("attempts from outside (client keys %s): %s" % (CLIENT_KEYS, json.dumps(tried, indent=1)))
    # 0: no connection at all (the host firewall refuses the engine's port to a host outside the cluster)
    refused = {name: code for name, code in tried.items() if code in (0, 401, 403)}
    assert tried["the engine API without the engines' key"] == tried["the engine API with a client key"] == 0
    assert set(tried) - set(refused) == {"healthcheck (open)", "completion with a client key"}
    assert tried["healthcheck (open)"] == 200 and tried["completion with a client key"] == 200
    assert tried["/instances/add of the attacker with the admin key"] == 403  # not an instance of the plan
    assert bait == []  # the proxy never asked the attacker, so never sent it the engines' key
    # from the proxy's own host, the admin key adds a planned instance (the upstream answers it)
    post = ("import json, sys, urllib.request as u; r = u.Request('http://127.0.0.1:8081/instances/add', data=json.dumps("
            "{'type': 'decode', 'instances': ['10.213.7.43:9900']}).encode(), headers={'Authorization': 'Bearer ' + sys.argv[1], "
            "'Content-Type': 'application/json'}); print(u.urlopen(r, timeout=10).status)")
    assert node_exec("llmops-pd-a2-p0", "python3", "-c", post, ADMIN_KEY).stdout.strip() == "200"
    # the old client key rotated out: its file is rewritten and the running front door reads it again (nothing
    # restarts), and the old key is refused from then on
    before, started = container_ids(), containers("llmops-pd-a2-p0", "pd_a2")["pd-proxy"]
    rotated = deploy("-e", json.dumps(dict(keys, pd_proxy_client_keys=CLIENT_KEYS[1:])))
    assert container_ids() == before and recap_changed(rotated.output)["pd_a2_p0"] > 0
    assert containers("llmops-pd-a2-p0", "pd_a2")["pd-proxy"] == started  # running since before: never restarted
    assert node_exec("llmops-pd-a2-p0", "cat", "/etc/llmops/secrets/pd-proxy/LLMOPS_FRONT_DOOR_KEYS").stdout == CLIENT_KEYS[1] + "\n"
    # from a second address: the running front door still counts the first one's wrong keys of a moment ago
    tried, bait = attempts_from_outside(CLIENT_KEYS[1], old_key=CLIENT_KEYS[0], address=SECOND_ATTACKER)
    assert tried["completion with a rotated-out key"] == 401 and tried["completion with a client key"] == 200 and bait == []
    # the variants of paths, methods and headers, the engines' routes outside /v1, then key guessing: every one refused
    # (0: the firewall let nothing through; 429: the address guessed too often), the last ones by the rate limit
    tried, bait = attempts_from_outside(CLIENT_KEYS[1], "--variants", "--guess", "25", address=SECOND_ATTACKER)
    print("variants and guesses from outside: %s" % json.dumps(tried, indent=1))
    assert {name for name, code in tried.items() if code not in (0, 401, 403, 429)} <= {"healthcheck (open)", "completion with a client key"}
    assert tried["healthcheck (open)"] == 200 and tried["completion with a client key"] in (200, 429)  # 429: the guesses before
    assert all(tried[name] == 0 for name in tried if name.startswith("an engine's"))
    assert tried["25 wrong keys in a row: the last one"] == tried["the client key right after them"] == 429 and bait == []
    result = deploy("-vvv", "--check", "--diff", "-e", json.dumps(dict(keys, vllm_engine_secret_env={"VLLM_API_KEY": "rotated-" + planted})))
    assert planted not in result.output and recap_changed(result.output)["pd_a2_d0"] > 0  # a rotated key: a file to write
    check_log_bundle(tmp_path, dict(keys, pd_proxy_client_keys=CLIENT_KEYS[1:]))
    deploy()  # back to the good plan for the remaining tests
    wait_http(PROXY + "/healthcheck")


def install_certificate(tmp_path):
    """The operator's CA and the front door's certificate on P0 (/etc/llmops-test-tls); returns pd_proxy_tls_* and
    an SSL context that trusts the CA."""
    return install_on_node(tmp_path, "10.213.7.41", "llmops-pd-a2-p0", "/etc/llmops-test-tls")


def check_log_bundle(tmp_path, keys):
    """logs.yml: one bundle with every planned container's log and inspect, the plan and a manifest,
    and its .tar.gz; the planted secret and the front door's keys appear nowhere in it, masked where docker shows env."""
    planted = keys["vllm_engine_secret_env"]["VLLM_API_KEY"]
    secrets = [planted] + keys["pd_proxy_client_keys"] + keys["pd_proxy_admin_keys"]
    result = run_playbook("logs.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", "-e", "llmops_logs_dir=%s" % tmp_path,
                          "-e", json.dumps(keys))
    assert not any(secret in result.output for secret in secrets)
    bundle = next(path for path in tmp_path.iterdir() if path.is_dir())
    assert re.fullmatch(r"pd_a2-\d{8}T\d{6}Z", bundle.name)
    planned = {name for node, _ip in NODES.values() for name in containers(node, "pd_a2")}
    assert len(planned) == 11
    logs = {p.name[:-len(".log")] for p in bundle.glob("*/containers/*.log")}
    assert logs == planned and all(p.stat().st_size > 0 for p in bundle.glob("*/containers/*.log"))
    assert {p.name[:-len(".inspect.json")] for p in bundle.glob("*/containers/*.inspect.json")} == planned
    assert {p.stem for p in bundle.glob("plan/*/*.json")} == planned
    inspect = json.loads((bundle / "pd_a2_d0" / "containers" / "vllm-ascend-decode-dp0.inspect.json").read_text())
    assert "VLLM_API_KEY" not in json.dumps(inspect[0]["Config"]["Env"])  # a file, which the bundle does not take
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert manifest["cluster"] == "pd_a2" and manifest["problems"] == []
    assert "pd_a2_p0/containers/pd-proxy.log" in manifest["files"]
    with tarfile.open(str(bundle) + ".tar.gz") as tar:
        names = tar.getnames()
        assert bundle.name + "/manifest.json" in names
        texts = [tar.extractfile(m).read().decode(errors="replace") for m in tar.getmembers() if m.isfile()]
    assert len(texts) == len(manifest["files"]) + 1 and not any(secret in text for text in texts for secret in secrets)


def status(*extra):
    return run_playbook("status.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", *extra, check=False)


def test_status_shows_a_healthy_cluster_and_exits_zero(deployed, tmp_path):
    """And who holds the cluster's lock: here a stop another controller runs (a lock file it wrote on the first host)."""
    report = tmp_path / "status.json"
    holder = {"token": "ops-2/0a1b2c/4711", "controller": "ops-2", "machine": "0a1b2c", "pid": 4711, "user": "alice",
              "play": "stop", "since": time.time() - 30}
    node_exec("llmops-pd-a2-p0", "sh", "-c", 'mkdir -p /var/lib/llmops/locks && printf %s "$1" > /var/lib/llmops/locks/pd_a2.lock',
              "sh", json.dumps(holder))
    try:
        result = status("-e", "llmops_status_json=%s" % report)
    finally:
        node_exec("llmops-pd-a2-p0", "rm", "-f", "/var/lib/llmops/locks/pd_a2.lock")
    assert result.returncode == 0, result.output[-3000:]
    assert re.search(r"cluster pd_a2: locked for stop by alice from ops-2 \(pid 4711\) since \d+ s", result.output), result.output[-3000:]
    assert json.loads(report.read_text())["lock"] == holder
    rows = json.loads(report.read_text())["containers"]
    assert len(rows) == 11
    assert {(r["state"], r["ready"], r["drift"]) for r in rows} == {("running", "yes", "ok")}
    decode = next(r for r in rows if r["container"] == "vllm-ascend-decode-dp6")
    assert (decode["host"], decode["role"], decode["dp_ranks"], decode["image"]) == ("pd_a2_d1", "decode", "6", "llmops-engine:test")
    assert re.search(r"HOST +CONTAINER +ROLE +INSTANCE +DP RANKS +STATE +READY +STATUS +RESTARTS +IMAGE +DRIFT", result.output)


def test_status_names_a_dead_rank_and_exits_non_zero(deployed):
    node_docker("llmops-pd-a2-d0", "kill", "vllm-ascend-decode-dp2")
    result = status()
    assert result.returncode != 0
    assert "cluster pd_a2 is degraded: vllm-ascend-decode-dp2 on pd_a2_d0 is exited (stopped)" in " ".join(result.output.split())
    result = verify_cluster()
    assert result.returncode != 0
    assert "cluster pd_a2 did not verify: vllm-ascend-decode-dp2 on pd_a2_d0 is exited (stopped)" in " ".join(result.output.split())


def test_deploy_recovers_the_dead_rank_by_restarting_its_whole_dp_group_only(deployed):
    """One rank of a running DP group cannot rejoin it: the whole decode group restarts, on both
    decode nodes; the prefill group and the proxy keep running untouched."""
    before = all_containers()
    result = deploy()
    assert "vllm-ascend-decode-dp5 on pd_a2_d1: restarted with its DP group (vllm-ascend-decode-dp2: not running (stopped))" in result.output
    after = all_containers()
    for host, found in after.items():
        for name, (started, up) in found.items():
            assert up, name
            assert (started != before[host][name][0]) == ("-decode-" in name), name
    assert status().returncode == 0
    assert verify_cluster().returncode == 0


def test_verify_fails_when_the_decode_group_is_down(deployed):
    for host in ("pd_a2_d0", "pd_a2_d1"):
        node = NODES[host][0]
        node_docker(node, "stop", "-t", "1", *containers(node, "pd_a2"))
    result = verify_cluster()
    assert result.returncode != 0
    output = " ".join(result.output.split())
    assert "vllm-ascend-decode-dp7 on pd_a2_d1 is exited (stopped)" in output
    assert re.search(r"a completion through pd-proxy on pd_a2_p0 answered HTTP \d+", output)
    deploy()
    assert verify_cluster().returncode == 0


def container_ids():
    return {name: node_docker(node, "inspect", "-f", "{{.Id}}", name).stdout.strip()
            for host, (node, _ip) in NODES.items() for name in containers(node, "pd_a2")}


def wait_for_pid(node, command):
    for _attempt in range(50):
        found = node_exec(node, "pgrep", "-f", "^" + command).stdout.split()
        if found:
            return found[0]
        time.sleep(0.1)
    raise AssertionError("%s never started on %s" % (command, node))


def test_stop_in_reverse_order_then_deploy_starts_the_same_containers(deployed):
    ids = container_ids()
    # a leftover process holds D0's NPU 3 (as a surviving EngineCore would, vLLM #9888)
    subprocess.run(["docker", "exec", "-d", "llmops-pd-a2-d0", "sh", "-c", "exec sleep 600 3</dev/davinci3"], check=True)
    stray = wait_for_pid("llmops-pd-a2-d0", "sleep 600")
    result = run_playbook("stop.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", "-e", "llmops_stop_timeout=10", check=False)
    assert result.returncode != 0
    assert ("host pd_a2_d0: NPU 3 is still held by process %s (sleep, 58000 MB) although the cluster is stopped" % stray
            in " ".join(result.output.split()))
    node_exec("llmops-pd-a2-d0", "kill", stray)
    result = run_playbook("stop.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", "-e", "llmops_stop_timeout=10")
    assert "no process holds the cluster's NPUs" in result.output
    assert not any(up for host in all_containers().values() for _started, up in host.values())
    proxy_stopped = finished_at("pd-proxy", "llmops-pd-a2-p0")
    engines_stopped = [finished_at(name, node) for host, (node, _ip) in NODES.items() for name in containers(node, "pd_a2")
                       if name != "pd-proxy"]
    assert proxy_stopped < min(engines_stopped)  # the proxy went first
    assert all("llmops_pd_a2" in tables(node) for node, _ip in NODES.values())  # stopping leaves the host firewall's rules
    deploy()
    assert container_ids() == ids  # started again, not recreated
    assert all(up for host in all_containers().values() for _started, up in host.values())
    answer = http_json(PROXY + "/v1/completions", {"model": "glm", "prompt": "back again", "max_tokens": 4}, headers=CLIENT)
    assert answer["choices"][0]["text"]


def test_a_new_image_rolls_group_by_group_in_start_order(deployed):
    """Every engine changes image: --check --diff names it first; then the decode DP group restarts
    and is waited for before the prefill group restarts (the plan's order, decode first as in 004
    5.4), then the proxy; no group restarts alongside another."""
    for node, _ip in NODES.values():
        node_docker(node, "tag", "llmops-engine:test", "llmops-engine:rolled")
    change = ("-e", "vllm_engine_image=llmops-engine:rolled")
    preview = deploy("--check", "--diff", *change)
    assert re.search(r"^-image: llmops-engine:test\n\+image: llmops-engine:rolled$", preview.output, re.M)
    assert "step 2 (wave 0, rolled): vllm-ascend-decode-dp4 on pd_a2_d1: image: llmops-engine:test -> llmops-engine:rolled" in preview.output
    # one instance per role: rolling it is an outage, refused unless accepted (the harness accepts it), nothing restarted
    before = container_ids()
    refused = deploy(*change, "-e", "llmops_accept_outage=false", check=False)
    assert refused.returncode != 0 and container_ids() == before
    assert lock_holder([node for node, _ip in NODES.values()], "pd_a2") is None  # the refusing play gave its lock back
    assert "step 2 restarts every serving instance of role decode (decode): nothing of that role serves until it is back; " \
           "step 3 restarts every serving instance of role prefill (prefill)" in " ".join(refused.output.split())
    assert "Fix: give the role a second instance (vllm_engine_instances)" in " ".join(refused.output.split())
    result = deploy(*change)
    lines = re.findall(r"step (\d+) \(wave (\d+), rolled\): (\S+) on", result.output)
    assert [(step, name.split("-")[2]) for step, _wave, name in lines if name.startswith("vllm-")] == \
        [("2", "decode")] * 8 + [("3", "prefill")] * 2
    started = {name: started for found in all_containers().values() for name, (started, _up) in found.items()}
    prefill = [t for name, t in started.items() if "-prefill-" in name]
    decode = [t for name, t in started.items() if "-decode-" in name]
    assert max(decode) < min(prefill) and max(prefill) < started["pd-proxy"]
    images = {node_docker(node, "inspect", "-f", "{{.Config.Image}}", name).stdout.strip()
              for host, (node, _ip) in NODES.items() for name in containers(node, "pd_a2")}
    assert images == {"llmops-engine:rolled"}
    answer = http_json(PROXY + "/v1/completions", {"model": "glm", "prompt": "rolled", "max_tokens": 4}, headers=CLIENT)
    assert answer["choices"][0]["text"]


@pytest.mark.parametrize("extra,message", [
    # wrong DP address: the decode master is D0, not D1
    ({"vllm_engine_groups": {"prefill": {"dp_size": 2, "tp_size": 8, "dp_rpc_port": 12321, "kv_port": 30000, "api_port": 9081},
                             "decode": {"dp_size": 8, "tp_size": 2, "kv_port": 30100, "api_port": 9900, "dp_address": "10.213.7.44",
                                        "hccl_port_range": {"base": 60000, "stride": 100, "size": 100}}}},
     "vllm_engine_groups.decode.dp_address: 10.213.7.44 is not the address 10.213.7.43 of the DP master pd_a2_d0"),
    # colliding ports: the proxy on P0's prefill API port
    ({"pd_proxy_port": 9081}, "host pd_a2_p0: pd_proxy_port: pd_proxy (9081) overlaps prefill rank 0 API (9081)"),
])
def test_a_broken_inventory_fails_with_the_planner_message_and_changes_nothing(deployed, extra, message):
    before = all_containers()
    result = deploy("-e", json.dumps(extra), check=False)
    assert result.returncode != 0
    assert message in result.output
    assert all_containers() == before


FIREWALL = {"host_firewall_enabled": True, "host_firewall_client_networks": [ATTACKER + "/32"]}
# Listeners of the plan that only the cluster may reach: P0's prefill API, DP RPC (its DP master) and Mooncake side
# channel, D0's first decode API; and the front door, which the client network may.
INTERNAL = ["10.213.7.41:9081", "10.213.7.41:12321", "10.213.7.41:30000", "10.213.7.43:9900"]
FRONT_DOOR = "10.213.7.41:8081"
# a port no plan names, as vLLM picks at run time (engine-core, DP coordinator, torch.distributed): a listener of the test's
RUNTIME = "10.213.7.41:47000"


def tables(node):
    return node_exec(node, "nft", "list", "tables").stdout.split()


def secure_completion(context, prompt):
    """A completion through the front door over HTTPS with a client key: its text."""
    answer = http_json("https://" + FRONT_DOOR + "/v1/completions", {"model": "glm", "prompt": prompt, "max_tokens": 4},
                       headers={"Authorization": "Bearer " + CLIENT_KEYS[1]}, context=context)
    return answer["choices"][0]["text"]


def test_everything_on_the_host_firewall_keeps_internal_ports_to_the_cluster(deployed, tmp_path):
    """host_firewall, with every other guard on too: the engines' key, client and admin keys, TLS at the
    front door. From the plan, every host's own nftables table: outside the cluster only the front door answers,
    and only to the client network; inside, each planned port answers the hosts that use it. Then, all of it on: a second run, status,
    --check --diff, a table removed by hand, the benchmark over HTTPS, a new image rolled group by group and verify
    checking the front door's certificate (stop leaves the rules: the stop test). The firewall is left on for the
    teardown."""
    tls, context = install_certificate(tmp_path)
    for node, _ip in NODES.values():  # the image the rolled-image phase left, whichever tests ran before
        node_docker(node, "tag", "llmops-engine:test", "llmops-engine:rolled")
    # this machine (the nodes' gateway) asks the front door itself, as a host of the cluster would (cpu_pd's harness too)
    everything = dict(FIREWALL, **tls, host_firewall_cluster_networks=["10.213.7.1/32"], vllm_engine_secret_env={"VLLM_API_KEY": "engine-key-4711-6a0e3d9b"},
                      pd_proxy_client_keys=CLIENT_KEYS[1:], pd_proxy_admin_keys=[ADMIN_KEY], vllm_engine_image="llmops-engine:rolled")
    on = ("-e", json.dumps(everything))
    node_exec("llmops-pd-a2-p0", "nft", "add", "table", "inet", "other_owner")  # someone else's rules
    node_exec("llmops-pd-a2-p0", "sh", "-c", "setsid python3 -m http.server %s </dev/null >/dev/null 2>&1 &" % RUNTIME.split(":")[1])
    before = tcp_from("attacker", INTERNAL + [FRONT_DOOR, RUNTIME])
    assert set(before.values()) == {"refused"}, before  # the default firewall: the attacker is no client network yet
    result = deploy(*on)
    assert all(recap_changed(result.output)[host] > 0 for host in NODES)  # every host loaded its table
    outside, inside = tcp_from("attacker", INTERNAL + [FRONT_DOOR, RUNTIME]), tcp_from("llmops-pd-a2-p1", INTERNAL + [FRONT_DOOR, RUNTIME])
    print("from the attacker: %s; from pd_a2_p1: %s" % (outside, inside))
    # default-deny: the run-time port too is the cluster's alone
    assert {a: outside[a] for a in INTERNAL + [RUNTIME]} == dict.fromkeys(INTERNAL + [RUNTIME], "refused") and outside[FRONT_DOOR] == "connected"
    # inside, per service: P1, of P0's DP group, reaches its DP RPC, the KV side channel and the run-time port; the
    # engines' APIs answer the front door's host (P0), verify's (the cluster's first) and this machine (a cluster
    # network); D1, of the decode group, gets no prefill DP RPC
    assert inside == {"10.213.7.41:9081": "refused", "10.213.7.41:12321": "connected", "10.213.7.41:30000": "connected",
                      "10.213.7.43:9900": "refused", FRONT_DOOR: "connected", RUNTIME: "connected"}, inside
    assert tcp_from("llmops-pd-a2-d1", INTERNAL[1:]) == {"10.213.7.41:12321": "refused", "10.213.7.41:30000": "connected",
                                                         "10.213.7.43:9900": "refused"}
    assert "llmops_pd_a2" in tables("llmops-pd-a2-d1") and "other_owner" in tables("llmops-pd-a2-p0")
    assert secure_completion(context, "behind everything")
    with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
        http_text(PROXY + "/healthcheck")  # HTTPS only: no plain HTTP on the port
    # a second run loads nothing, and does not enter the firewall role at all (the look found every table and file as
    # planned); status checks every table; --check --diff shows a change and applies none
    second = deploy(*on).output
    again = recap_changed(second)
    assert {host: again[host] for host in NODES} == dict.fromkeys(NODES, 0)
    assert "host_firewall : Validating arguments against arg spec 'apply'" not in second
    assert status(*on).returncode == 0
    wider = dict(everything, host_firewall_client_networks=[ATTACKER + "/32", "10.213.7.251/32"])
    shown = deploy("--check", "--diff", "-e", json.dumps(wider))
    assert "+  set client_networks { type ipv4_addr; flags interval; elements = { 10.213.7.250/32, 10.213.7.251/32 } }" in shown.output
    assert "10.213.7.251" not in node_exec("llmops-pd-a2-p0", "nft", "list", "table", "inet", "llmops_pd_a2").stdout
    # a table someone removed is named by status and loaded again by deploy
    node_exec("llmops-pd-a2-d1", "nft", "delete", "table", "inet", "llmops_pd_a2")
    degraded = status(*on)
    assert degraded.returncode != 0
    assert "the firewall table inet llmops_pd_a2 on pd_a2_d1 is not loaded" in " ".join(degraded.output.split())
    assert recap_changed(deploy(*on).output)["pd_a2_d1"] > 0
    assert tcp_from("attacker", ["10.213.7.44:9900"]) == {"10.213.7.44:9900": "refused"}
    # the benchmark's client trusts the operator's CA (SSL_CERT_FILE in its container) and asks over HTTPS with a
    # client key
    (tmp_path / "bench").mkdir()
    small = {"random": dict(BENCH_WORKLOADS["random"], num_prompts=4, concurrencies=[2])}
    benched = benchmark(tmp_path / "bench", *on, workloads=small)
    assert benched.returncode == 0, benched.output[-3000:]
    assert "point 1: random concurrency 2: 4 of 4 completed" in benched.output
    # a new image rolls group by group with all of it on, and a rotated engines' key goes with it (the engines' key
    # files are written in place: they take the old key too until a later run empties vllm_engine_retiring_api_keys;
    # the front door, restarted last, sends the new one); the cluster serves behind it afterwards
    old_key, new_key = everything["vllm_engine_secret_env"]["VLLM_API_KEY"], "engine-key-4712-9b1c7e2d5f"
    back = ("-e", json.dumps(dict(everything, vllm_engine_image="llmops-engine:test", vllm_engine_secret_env={"VLLM_API_KEY": new_key},
                                  vllm_engine_retiring_api_keys=[old_key])))
    rolled = deploy(*back)
    lines = re.findall(r"step (\d+) \(wave (\d+), rolled\): (\S+) on", rolled.output)
    assert [(step, name.split("-")[2]) for step, _wave, name in lines if name.startswith("vllm-")] == \
        [("2", "decode")] * 8 + [("3", "prefill")] * 2
    assert old_key not in rolled.output and new_key not in rolled.output
    assert secure_completion(context, "rolled behind everything")
    for key in (old_key, new_key):  # this machine is a host of the cluster here: it reaches the engines' ports
        assert http_json("http://10.213.7.43:9900/v1/models", headers={"Authorization": "Bearer " + key})["data"]
    assert tcp_from("attacker", INTERNAL) == dict.fromkeys(INTERNAL, "refused")
    # verify, from the cluster's first host, checks the front door's certificate against the operator's CA
    verified = run_playbook("verify.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", *back, check=False)
    assert verified.returncode == 0, verified.output[-3000:]
    assert re.search(r"completion through pd-proxy: HTTP 200, time to first token \d+ ms", verified.output)
    assert status(*back).returncode == 0
    node_exec("llmops-pd-a2-p0", "pkill", "-f", "http.server " + RUNTIME.split(":")[1])


@pytest.mark.parametrize("confirmation", [[], ["-e", "llmops_confirm_teardown=pd_pool_a2"]])
def test_teardown_refuses_without_the_cluster_name_as_confirmation(deployed, confirmation):
    before = all_containers()
    result = run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), "-e", "llmops_cluster=pd_a2", *confirmation, check=False)
    assert result.returncode != 0
    assert "teardown.yml removes every container of cluster pd_a2 on every host" in " ".join(result.output.split())
    assert "Fix: add -e llmops_confirm_teardown=pd_a2 to confirm" in " ".join(result.output.split())
    assert all_containers() == before


def test_teardown_removes_every_container_and_keeps_the_model(deployed):
    # Two containers an older plan of this cluster left behind (labelled, but in no spec now).
    for name in ("vllm-ascend-decode-old1", "vllm-ascend-decode-old2"):
        node_docker("llmops-pd-a2-d0", "run", "-d", "--name", name, "--label", "llmops.cluster=pd_a2", "--entrypoint", "sleep",
                    "llmops-engine:test", "600")
    assert "vllm-ascend-decode-old2" in all_containers()["pd_a2_d0"]
    run_playbook("teardown.yml", LAB, "-i", str(INVENTORY), *TEARDOWN)
    assert all_containers() == {host: {} for host in NODES}
    # the host firewall the previous phase left on: its tables gone, someone else's kept
    assert not any("llmops_pd_a2" in tables(node) for node, _ip in NODES.values())
    assert "other_owner" in tables("llmops-pd-a2-p0")
    assert "config.json" in node_exec("llmops-pd-a2-p0", "ls", "/root/.cache/GLM-5.3-Flash-w8a8").stdout
