# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""cluster_benchmark's client: what it takes from the engine's spec and what its docker run says."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.modules import cluster_benchmark

ENGINE = {"name": "vllm-prefill-dp0", "host": "p0", "image": "engine:1", "kind": "engine",
          "volumes": ["/data/models:/data/models:ro", "/opt/venv:/opt/venv:ro"],
          "env": {"PATH": "/opt/venv/bin:/usr/bin", "VLLM_API_KEY": "engine-secret", "HF_HUB_OFFLINE": "1"},
          "secret_env": ["VLLM_API_KEY"]}
PARAMS = {"image": "", "volumes": ["/elsewhere:/opt/venv:ro"], "env": {"TZ": "UTC"}, "tokenizer": "", "base_url": "http://10.0.0.1:8000",
          "command": ["vllm", "bench", "serve"], "argv": ["--num-prompts", "8"], "client_key": "client-secret", "ca_path": "/etc/ca.pem",
          "name": "llmops-benchmark", "ready_timeout": 60}


def test_the_client_runs_the_engines_image_without_their_secrets_and_passes_the_key_by_name(monkeypatch):
    run = {"image": "engine:1", "volumes": ENGINE["volumes"] + PARAMS["volumes"],
           "env": {"PATH": "/opt/venv/bin:/usr/bin", "HF_HUB_OFFLINE": "1", "TZ": "UTC"}, "model": "glm", "tokenizer": "/data/models/glm",
           "base_url": PARAMS["base_url"]}
    argv = cluster_benchmark.client_argv("docker", PARAMS, run, "/tmp/work")
    text = " ".join(argv)
    assert "engine-secret" not in text and "client-secret" not in text
    assert argv[argv.index("OPENAI_API_KEY") - 1] == "--env"
    # one mount per container path, the operator's over the engine's
    assert "/elsewhere:/opt/venv:ro" in argv and "/opt/venv:/opt/venv:ro" not in argv
    assert argv[argv.index("--entrypoint") + 1:argv.index("--entrypoint") + 5] == ["vllm", "engine:1", "bench", "serve"]
    assert argv[argv.index("--ready-check-timeout-sec") + 1] == "60"
    assert "SSL_CERT_FILE=%s" % cluster_benchmark.CA in argv
    assert argv[-8:] == ["--num-prompts", "8", "--save-result", "--result-dir", cluster_benchmark.WORKDIR, "--result-filename",
                         "point.json", "--disable-tqdm"]
