#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: cluster_benchmark
short_description: Run one sweep point of vllm bench serve against a cluster, reading its counters around it
version_added: 0.1.0
description:
  - Reads every API engine's and every pool service's C(/metrics), runs C(vllm bench serve) once in a container of
    the cluster's own engine image on this host (C(docker run --rm), host network), then reads the counters again.
  - Returns C(vllm bench serve)'s result JSON (C(--save-result)) and both readings, from which benchmark.yml tells
    what share of the prompt tokens came from the local prefix cache, the PD transfer and the pool (004 9.2).
  - The client key goes to the container as C(OPENAI_API_KEY) by name only (the value is in no argv).
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: none
    details: Sends requests in every mode; it changes nothing on the cluster (run it with check_mode false).
  diff_mode:
    support: none
    details: Nothing to diff.
options:
  specs:
    description: Every launch spec of the cluster; the API engines and pool services among them are read.
    type: list
    elements: dict
    required: true
  image:
    description: Image that has C(vllm); empty for the engines' (that of the first API engine on this host, else of the
      cluster). The container has that engine's volumes (the model, so that the tokenizer path resolves) and non-secret
      environment, but none of its devices.
    type: str
    default: ""
  command:
    description: The client's command; the first element is the container's entrypoint.
    type: list
    elements: str
    default: [vllm, bench, serve]
  volumes:
    description: More volumes of the container, after the engine's.
    type: list
    elements: str
    default: []
  env:
    description: More environment of the container, over the engine's (not for secrets - it is in the argv).
    type: dict
    default: {}
  base_url:
    description: The front door, C(http[s]://address:port); empty for the plan's (the proxy, else the first API rank).
    type: str
    default: ""
  tokenizer:
    description: C(--tokenizer); empty for the model directory the engines load (no hub access).
    type: str
    default: ""
  argv:
    description: The point's workload and sweep flags (the benchmark_points filter).
    type: list
    elements: str
    required: true
  client_key:
    description: Key the front door takes (a client key, else the engines' C(VLLM_API_KEY)); empty for none.
    type: str
    default: ""
  ca_path:
    description: CA file that signed the front door's certificate (HTTPS), mounted and given as C(SSL_CERT_FILE).
    type: str
    default: ""
  host:
    description: This host's inventory name (whose API engine's image the client takes first).
    type: str
    default: ""
  name:
    description: Name of the benchmark container (removed when it ends).
    type: str
    default: llmops-benchmark
  timeout:
    description: Seconds the point may take before its container is removed and the task fails.
    type: int
    default: 1800
  ready_timeout:
    description: Seconds C(vllm bench serve) retries its first request (C(--ready-check-timeout-sec)) before it fails.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Run one sweep point
  llmops.inference.cluster_benchmark:
    specs: "{{ _llmops_cluster_specs }}"
    argv: [--dataset-name, random, --random-input-len, "1024", --random-output-len, "128", --num-prompts, "128",
           --max-concurrency, "8"]
  check_mode: false
"""

RETURN = r"""
result:
  description: C(vllm bench serve)'s result JSON (its keys, e.g. request_throughput, p99_ttft_ms, completed, failed).
  returned: success
  type: dict
before:
  description: By API engine, its role and counters (metric name to the sum over its series) before the run.
  returned: success
  type: dict
after:
  description: The same after the run.
  returned: success
  type: dict
services_before:
  description: By pool service, its counters before the run.
  returned: success
  type: dict
services_after:
  description: The same after the run.
  returned: success
  type: dict
seconds:
  description: Seconds the run took.
  returned: always
  type: float
output:
  description: The last lines the client printed.
  returned: always
  type: str
"""

import json
import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils._text import parse_metrics
from ansible_collections.llmops.inference.plugins.module_utils.operations import _verify as verify
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta

WORKDIR = "/llmops-benchmark"
CA = "/llmops-benchmark-ca.pem"


def counters(specs):
    """{name: {role, metrics}} of each spec; a spec that does not answer counts as no metric."""
    found = {}
    for spec in specs:
        try:
            status, text = http_get(verify.base_url(spec) + "/metrics", timeout=10)
            metrics = parse_metrics(text.decode(errors="replace")) if status == 200 else {}
        except OSError:
            metrics = {}
        found[spec["name"]] = {"role": spec_meta.role(spec), "metrics": metrics}
    return found


def client(specs, params, host):
    """What the client runs and asks: image, volumes, env and model from an API engine's spec (this host's first,
    else the cluster's), the front door's URL."""
    found = verify.targets(specs)
    if not found["api"]:
        return None
    engine = next((s for s in found["api"] if s.get("host") == host), found["api"][0])
    secret = set((engine.get("secret_env") or {}).keys()) if isinstance(engine.get("secret_env"), dict) else set(engine.get("secret_env") or [])
    return {"image": params["image"] or engine["image"], "volumes": list(engine.get("volumes") or []) + params["volumes"],
            "env": dict({k: v for k, v in (engine.get("env") or {}).items() if k not in secret}, **params["env"]),
            "model": spec_meta.served_model(engine), "tokenizer": params["tokenizer"] or spec_meta.model(engine),
            "base_url": params["base_url"] or verify.base_url(found["front"])}


def client_argv(docker, params, run, workdir):
    argv = [docker, "run", "--rm", "--name", params["name"], "--network", "host", "--volume", "%s:%s" % (workdir, WORKDIR)]
    # one volume per container path (docker refuses a duplicate mount point), the later one kept: what the
    # operator adds over the engine's
    targets = {}
    for volume in run["volumes"]:
        parts = volume.split(":")
        targets[parts[1] if len(parts) > 1 else parts[0]] = volume
    for volume in targets.values():
        argv += ["--volume", volume]
    for name, value in sorted(run["env"].items()):  # not secret: the specs' secret environment is not passed here
        argv += ["--env", "%s=%s" % (name, value)]
    if params["ca_path"]:
        argv += ["--volume", "%s:%s:ro" % (params["ca_path"], CA), "--env", "SSL_CERT_FILE=" + CA]
    if params["client_key"]:
        argv += ["--env", "OPENAI_API_KEY"]  # by name: its value comes from the docker client's environment
    argv += ["--entrypoint", params["command"][0], run["image"]] + params["command"][1:]
    argv += ["--base-url", run["base_url"], "--model", run["model"], "--tokenizer", run["tokenizer"]]
    argv += ["--ready-check-timeout-sec", str(params["ready_timeout"])]
    return argv + params["argv"] + ["--save-result", "--result-dir", WORKDIR, "--result-filename", "point.json", "--disable-tqdm"]


def main():
    module = AnsibleModule(
        argument_spec=dict(
            specs=dict(type="list", elements="dict", required=True),
            image=dict(type="str", default=""),
            volumes=dict(type="list", elements="str", default=[]),
            env=dict(type="dict", default={}),
            command=dict(type="list", elements="str", default=["vllm", "bench", "serve"]),
            base_url=dict(type="str", default=""),
            tokenizer=dict(type="str", default="", no_log=False),  # a path, not a secret
            host=dict(type="str", default=""),
            argv=dict(type="list", elements="str", required=True),
            client_key=dict(type="str", default="", no_log=True),
            ca_path=dict(type="str", default=""),
            name=dict(type="str", default="llmops-benchmark"),
            timeout=dict(type="int", default=1800),
            ready_timeout=dict(type="int", default=60),
        ),
        supports_check_mode=False,
    )
    params = module.params
    docker = module.get_bin_path("docker", required=True)
    found = verify.targets(params["specs"])
    run = client(params["specs"], params, params["host"])
    if run is None:
        module.fail_json(msg="the plan has no API engine to benchmark", seconds=0.0, output="")
    environ = {"OPENAI_API_KEY": params["client_key"]} if params["client_key"] else {}
    workdir = tempfile.mkdtemp(prefix="llmops-benchmark-")
    try:
        os.chmod(workdir, 0o777)  # the client may run as another user than root inside its image
        before, services_before = counters(found["api"]), counters(found["services"])
        start = time.monotonic()
        argv = [module.get_bin_path("timeout", required=True), "-k", "10", str(params["timeout"])] + client_argv(docker, params, run, workdir)
        rc, out, err = commands.run(module, argv, environ_update=environ)
        seconds = round(time.monotonic() - start, 1)
        output = "\n".join((out + err).splitlines()[-40:])
        if rc != 0:
            commands.run(module, [docker, "rm", "-f", params["name"]])
            module.fail_json(msg="vllm bench serve against %s ended with exit code %d%s: %s" % (
                run["base_url"], rc, " (over its timeout of %d s)" % params["timeout"] if rc == 124 else "", output[-2000:]),
                seconds=seconds, output=output)
        with open(os.path.join(workdir, "point.json"), encoding="utf-8") as handle:
            result = json.load(handle)
        after, services_after = counters(found["api"]), counters(found["services"])
    except (OSError, ValueError) as err:
        module.fail_json(msg="the benchmark point against %s: %s" % (run["base_url"], err), seconds=0.0, output="")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    # the per-request lists (ttfts, itls, generated texts) stay out of the result: they are large, the report keeps figures
    result = {key: value for key, value in result.items() if not isinstance(value, list)}
    module.exit_json(changed=False, result=result, before=before, after=after, services_before={k: v["metrics"] for k, v in services_before.items()},
                     services_after={k: v["metrics"] for k, v in services_after.items()}, seconds=seconds, output=output)


if __name__ == "__main__":
    main()
