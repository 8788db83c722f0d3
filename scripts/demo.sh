#!/usr/bin/env bash
# The main job on a fresh Debian machine: a local demo of the lab's four-node Atlas 800I A2
# Prefill/Decode cluster (004 5.3: P0/P1 prefill DP2/TP8, D0/D1 decode DP8/TP2, MooncakeConnectorV2,
# the vllm-ascend PD proxy). It installs and starts a Docker engine if needed, builds the harness
# images, starts four node containers that each run their own Docker engine, prints the plan,
# deploys with playbooks/pd_a2.yml and sends a completion through the proxy.
# The engines are SIMULATED (no NPU here); the proxy is the real one.
#   scripts/demo.sh          bring the demo cluster up (again: changes nothing)
#   scripts/demo.sh --down   tear it down and remove the nodes
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
inventory=tests/harness/inventories/pd_a2
bash scripts/bootstrap.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh
log="$root/.build/demo.log"
: >"$log"

run() {  # quiet unless it fails
  "$@" >>"$log" 2>&1 || { echo "demo: '$*' failed; the end of $log:" >&2; tail -40 "$log" >&2; exit 1; }
}

if [ "${1:-}" = "--down" ]; then
  if docker info >/dev/null 2>&1; then
    run ansible-playbook playbooks/teardown.yml -i inventories/lab -i "$inventory" -e llmops_cluster=pd_a2 -e llmops_confirm_teardown=pd_a2
    run python tests/harness/nodes.py down "$inventory"
  fi
  echo "demo: torn down"
  exit 0
fi

echo "demo: Docker engine and harness images (the first run builds them: a few minutes)"
run bash tests/harness/docker_engine.sh
run bash tests/harness/images.sh
echo "demo: four nodes, each with its own Docker engine"
run python tests/harness/nodes.py up "$inventory"

plan_dir="$root/.build/demo-plan"
rm -rf "$plan_dir"
run ansible-playbook playbooks/pd_a2.yml -i inventories/lab -i "$inventory" -e llmops_plan_dir="$plan_dir"
echo "demo: the plan (launch specs in $plan_dir/<host>/<container>.json)"
python - "$plan_dir" <<'PY'
import glob, json, sys
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import plan_table
specs = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*/*.json"))]
print("\n".join(plan_table(specs)))
PY

echo "demo: deploying with ansible-playbook playbooks/pd_a2.yml -i inventories/lab -i $inventory"
run ansible-playbook playbooks/pd_a2.yml -i inventories/lab -i "$inventory"
grep -E '^pd_a2_\w+ +: ok=' "$log" | tail -4

echo "demo: a completion through the PD proxy on P0 (10.213.7.41:8081)"
python - <<'PY'
import json, sys, urllib.request
sys.path.insert(0, "tests/harness")
from vault_values import client_key
# the front door serves clients with a key (secure by default): the harness inventories' client key, in ansible-vault
key = client_key()
body = json.dumps({"model": "glm", "prompt": "The future of AI is", "max_tokens": 8}).encode()
request = urllib.request.Request("http://10.213.7.41:8081/v1/completions", body,
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + key})
answer = json.load(urllib.request.urlopen(request, timeout=60))
print(json.dumps(answer, indent=2))
print("decoded by", answer["system_fingerprint"].split(":from:")[0], "with the KV of prefill", answer["system_fingerprint"].split(":from:")[1])
PY
echo "demo: up. Tear it down with: scripts/demo.sh --down"
