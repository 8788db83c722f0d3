# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated engine (tests/harness/sim_vllm) is as strict as vLLM where the deployments need it:
it refuses what vLLM refuses, and a data-parallel group only serves once every rank joined.
Runs the simulator as processes on loopback, with stand-in device nodes in a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest
from conftest import ROOT
from harness import free_port, listens, wait_until

SIM = ROOT / "tests" / "harness" / "sim_vllm" / "vllm_sim.py"


@pytest.fixture
def node(tmp_path):
    """A model folder and eight stand-in /dev/davinci nodes; returns an env for the simulator."""
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "dev").mkdir()
    for index in range(8):
        (tmp_path / "dev" / ("davinci%d" % index)).touch()
    return dict(os.environ, VLLM_SIM_DEV_DIR=str(tmp_path / "dev")), str(tmp_path / "model")


def serve(env, model, *args, devices=None):
    env = dict(env, **({"ASCEND_RT_VISIBLE_DEVICES": devices} if devices else {}))
    return subprocess.Popen([sys.executable, str(SIM), "serve", model, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def answers(url, seconds):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            return json.loads(urllib.request.urlopen(url, timeout=2).read())
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    return None


@pytest.mark.parametrize("args,text", [
    (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    (["--kv-transfer-config", "{not json"], "argument --kv-transfer-config: not valid JSON"),
    (["--data-parallel-size", "two"], "argument --data-parallel-size: invalid int value"),
])
def test_vllm_argument_errors_exit_2(node, args, text):
    env, model = node
    process = serve(env, model, "--tensor-parallel-size", "8", *args)
    output = process.communicate(timeout=30)[0]
    assert process.returncode == 2 and text in output


@pytest.mark.parametrize("args,devices,text", [
    (["--tensor-parallel-size", "4"], "0,1", "tensor-parallel-size 4 x 1 local DP ranks needs 4 visible devices, got [0, 1]"),
    (["--tensor-parallel-size", "2"], "8,9", "ASCEND_RT_VISIBLE_DEVICES names devices [8, 9] that do not exist"),
    (["--tensor-parallel-size", "2", "--kv-transfer-config", '{"kv_connector": "MooncakeConnectorV2", "kv_role": "kv_sender"}'],
     "0,1", "kv_role must be one of"),
    (["--tensor-parallel-size", "2", "--kv-transfer-config",
      '{"kv_connector": "UCMConnector", "kv_role": "kv_both", "kv_connector_module_path": "ucm.integration.vllm.ucm_connector",'
      ' "kv_connector_extra_config": {"UCM_CONFIG_FILE": "/nowhere.yaml"}}'], "0,1", "UCM_CONFIG_FILE '/nowhere.yaml' does not exist"),
    (["--tensor-parallel-size", "2", "--data-parallel-size", "2", "--headless", "--data-parallel-size-local", "1"], "0,1",
     "--headless cannot run DP rank 0: it holds the API server"),
    (["--tensor-parallel-size", "2", "--data-parallel-size", "2", "--headless", "--data-parallel-size-local", "1",
      "--data-parallel-start-rank", "1"], "0,1", "needs --data-parallel-address and --data-parallel-rpc-port"),
])
def test_deployment_errors_stop_the_engine(node, args, devices, text):
    env, model = node
    process = serve(env, model, *args, devices=devices)
    output = process.communicate(timeout=30)[0]
    assert process.returncode == 1 and text in output, output


def test_a_dp_group_serves_only_once_complete_and_decode_needs_the_prefill_kv(node):
    env, model = node
    rpc, api0, api1, kv_port = free_port(), free_port(), free_port(), free_port()
    group = ["--data-parallel-size", "2", "--data-parallel-address", "127.0.0.1", "--data-parallel-rpc-port", str(rpc),
             "--tensor-parallel-size", "2", "--served-model-name", "glm"]
    consumer = '{"kv_connector": "MooncakeConnectorV2", "kv_role": "kv_consumer", "kv_port": "30100"}'
    producer = '{"kv_connector": "MooncakeConnectorV2", "kv_role": "kv_producer", "kv_port": "%d", "engine_id": "p0"}' % kv_port
    rank0 = serve(env, model, "--port", str(api0), "--data-parallel-rank", "0", *group, "--kv-transfer-config", consumer, devices="0,1")
    processes = [rank0]
    try:
        assert answers("http://127.0.0.1:%d/v1/models" % api0, 3) is None  # rank 1 has not joined
        processes.append(serve(env, model, "--port", str(api1), "--data-parallel-rank", "1", *group, "--kv-transfer-config",
                               consumer, devices="2,3"))
        assert answers("http://127.0.0.1:%d/v1/models" % api0, 20)["data"][0]["id"] == "glm"
        assert answers("http://127.0.0.1:%d/v1/models" % api1, 20)["data"][0]["id"] == "glm"
        processes.append(serve(dict(env, VLLM_HOST_IP="127.0.0.1"), model, "--port", str(free_port()), "--tensor-parallel-size",
                               "2", "--kv-transfer-config", producer, devices="4,5"))
        wait_until(lambda: listens(kv_port), 20, "the prefill's side channel on port %d" % kv_port)
        request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % api0, json.dumps(
            {"model": "glm", "prompt": "hi", "max_tokens": 2}).encode(), {"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400  # no kv_transfer_params from a prefill
        params = {"remote_engine_id": "p0", "remote_host": "127.0.0.1", "remote_port": kv_port}
        request = urllib.request.Request("http://127.0.0.1:%d/v1/completions" % api0, json.dumps(
            {"model": "glm", "prompt": "hi", "max_tokens": 2, "kv_transfer_params": params}).encode(), {"Content-Type": "application/json"})
        answer = json.loads(urllib.request.urlopen(request, timeout=10).read())
        assert answer["system_fingerprint"].endswith(":from:p0@127.0.0.1:%d" % kv_port)
    finally:
        for process in processes:
            process.kill()
            process.wait()


def test_a_wrong_dp_port_never_becomes_ready(node):
    env, model = node
    api1 = free_port()
    group = ["--data-parallel-size", "2", "--data-parallel-address", "127.0.0.1", "--tensor-parallel-size", "2"]
    rank0 = serve(env, model, "--port", str(free_port()), "--data-parallel-rank", "0", "--data-parallel-rpc-port", str(free_port()),
                  *group, devices="0,1")
    rank1 = serve(env, model, "--port", str(api1), "--data-parallel-rank", "1", "--data-parallel-rpc-port", str(free_port()),
                  *group, devices="2,3")
    try:
        assert answers("http://127.0.0.1:%d/v1/models" % api1, 6) is None
        assert rank0.poll() is None and rank1.poll() is None  # both wait, neither serves
    finally:
        for process in (rank0, rank1):
            process.kill()
            process.wait()


def test_the_start_delay_counts_from_the_process_start(node):
    """VLLM_SIM_START_DELAY is the engine's whole start time: a process that spent 1 s before the simulator ran (as a
    slow import would) is ready 2 s after it started, not 3 s."""
    env, model = node
    slow_start = ("import runpy, sys, time; time.sleep(1); sys.path.insert(0, %r); sys.argv = [%r] + sys.argv[1:]; "
                  "runpy.run_path(%r, run_name='__main__')" % (str(SIM.parent), str(SIM), str(SIM)))
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", slow_start, "serve", model, "--port", str(free_port()), "--tensor-parallel-size",
                                "2"], env=dict(env, VLLM_SIM_START_DELAY="2", ASCEND_RT_VISIBLE_DEVICES="0,1"),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = []
    try:
        for line in process.stdout:
            output.append(line)
            if "init engine" in line:
                break
        ready = time.monotonic() - started
    finally:
        process.kill()
        process.wait()
    assert output and "init engine" in output[-1], "".join(output)  # the simulator ran and logged its ready line
    took = float(output[-1].rsplit("took", 1)[1].split()[0])
    assert 2.0 <= took < 2.5 and 1.9 <= ready < 2.7, (took, ready, output[-1])
