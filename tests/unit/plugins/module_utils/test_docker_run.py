# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Starting a host's containers of a step together: each container's action from one docker ps, and the docker
run of a launch spec, with no environment value on its command line."""

from __future__ import annotations

import itertools

from ansible_collections.llmops.inference.plugins.module_utils.operations import _docker_run as docker_run
from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import HASH_LABEL
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch

SPEC = launch.new_spec(name="vllm-ascend-decode-dp0", host="d0", image="img:1", command=["vllm", "serve", "/m", "--port", "9900"],
                       env={"VLLM_API_KEY": "s3cret-value", "HCCL_IF_IP": "192.0.2.43"}, devices=["/dev/davinci0"],
                       volumes=["/root/.cache:/root/.cache"], ipc_mode="host", shm_size="8g", privileged=True)
LABELS = {HASH_LABEL: "abc", "llmops.cluster": "pd_a2"}


def test_each_container_gets_what_its_state_needs():
    up = {"state": "running", "labels": {HASH_LABEL: "abc"}}
    assert docker_run.action(LABELS, None, False) == "create"
    assert docker_run.action(LABELS, dict(up, labels={HASH_LABEL: "old"}), False) == "recreate"
    assert docker_run.action(LABELS, dict(up, state="exited"), True) == "start"
    assert docker_run.action(LABELS, up, True) == "restart"
    assert docker_run.action(LABELS, up, False) == "none"


def test_docker_run_carries_the_spec_and_no_environment_value():
    argv = docker_run.run_argv("docker", SPEC, LABELS)
    assert argv[:6] == ["docker", "run", "--detach", "--init", "--name", "vllm-ascend-decode-dp0"]
    assert "s3cret-value" not in " ".join(argv) and "192.0.2.43" not in " ".join(argv)
    assert argv[argv.index("--env") + 1] == "HCCL_IF_IP"  # names only: the values come from the client's environment
    pairs = list(itertools.pairwise(argv))
    for pair in (("--ipc", "host"), ("--shm-size", "8g"), ("--device", "/dev/davinci0"), ("--volume", "/root/.cache:/root/.cache"),
                 ("--label", "llmops.cluster=pd_a2"), ("--entrypoint", "vllm")):
        assert pair in pairs
    assert "--privileged" in argv
    assert argv[-5:] == ["img:1", "serve", "/m", "--port", "9900"]  # the image, then the command after the entrypoint
    gpus = docker_run.run_argv("docker", dict(SPEC, gpus=["0", "1"]), LABELS)
    assert gpus[gpus.index("--gpus") + 1] == '"device=0,1"'  # quoted: the CLI reads the value as CSV


def test_a_new_spec_stops_before_it_is_removed_and_run_again():
    calls = docker_run.calls("docker", SPEC, LABELS, "recreate", 60)
    assert [c[1] for c in calls] == ["stop", "rm", "run"] and calls[0][2:4] == ["--time", "60"]
    assert docker_run.calls("docker", SPEC, LABELS, "none", 60) == []
