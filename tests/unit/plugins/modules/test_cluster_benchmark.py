# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_benchmark's client: what it takes from the plan's specs and what its docker run says."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.modules import cluster_benchmark

ENGINE = {"name": "vllm-prefill-dp0", "host": "p0", "image": "engine:1",
          "volumes": ["/data/models:/data/models:ro", "/opt/venv:/opt/venv:ro"],
          "env": {"PATH": "/opt/venv/bin:/usr/bin", "VLLM_API_KEY": "engine-secret", "HF_HUB_OFFLINE": "1"},
          "secret_env": ["VLLM_API_KEY"],
          "meta": {"kind": "engine", "role": "prefill", "api_url": "http://10.0.0.1:8100", "served_model": "glm", "model": "/data/models/glm"}}
PROXY = {"name": "pd-proxy", "host": "p0", "image": "engine:1", "meta": {"kind": "proxy", "api_url": "http://10.0.0.1:8000"}}
PARAMS = {"image": "", "volumes": ["/elsewhere:/opt/venv:ro"], "env": {"TZ": "UTC"}, "tokenizer": "", "base_url": "",
          "command": ["vllm", "bench", "serve"], "argv": ["--num-prompts", "8"], "client_key": "client-secret", "ca_path": "/etc/ca.pem",
          "name": "llmops-benchmark", "ready_timeout": 60}


def test_the_client_runs_the_engines_image_against_the_front_door_without_their_secrets():
    run = cluster_benchmark.client([ENGINE, PROXY], PARAMS, "p0")
    assert run["base_url"] == "http://10.0.0.1:8000" and run["model"] == "glm" and run["tokenizer"] == "/data/models/glm"
    assert run["env"] == {"PATH": "/opt/venv/bin:/usr/bin", "HF_HUB_OFFLINE": "1", "TZ": "UTC"}
    argv = cluster_benchmark.client_argv("docker", PARAMS, run, "/tmp/work")
    text = " ".join(argv)
    assert "engine-secret" not in text and "client-secret" not in text
    assert argv[argv.index("OPENAI_API_KEY") - 1] == "--env"  # the key by name, its value from the client's environment
    # one mount per container path, the operator's over the engine's
    assert "/elsewhere:/opt/venv:ro" in argv and "/opt/venv:/opt/venv:ro" not in argv
    assert argv[argv.index("--entrypoint") + 1:argv.index("--entrypoint") + 5] == ["vllm", "engine:1", "bench", "serve"]
    assert argv[argv.index("--ready-check-timeout-sec") + 1] == "60"
    assert "SSL_CERT_FILE=%s" % cluster_benchmark.CA in argv
    assert argv[-8:] == ["--num-prompts", "8", "--save-result", "--result-dir", cluster_benchmark.WORKDIR, "--result-filename",
                         "point.json", "--disable-tqdm"]
