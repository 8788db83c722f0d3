#!/usr/bin/env bash
# The main job on a fresh Debian machine: set up, then plan the lab's four-node A2 PD cluster
# (004 5.3: P0/P1 prefill DP2/TP8, D0/D1 decode DP8/TP2, MooncakeConnectorV2, PD proxy) and print
# the table of hosts, containers, ranks, devices and ports. Plan mode contacts no host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/bootstrap.sh
# shellcheck source=scripts/env.sh
. scripts/env.sh
plan_dir="$root/.build/demo-plan"
rm -rf "$plan_dir"
ansible-playbook playbooks/pd_a2.yml -i inventories/lab -e llmops_plan_dir="$plan_dir" > "$root/.build/demo-plan.log" \
  || { tail -40 "$root/.build/demo-plan.log"; exit 1; }
python - "$plan_dir" <<'PY'
import glob, json, sys
from ansible_collections.llmops.inference.plugins.module_utils._launch_spec import plan_table
specs = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*/*.json"))]
print("\n".join(plan_table(specs)))
PY
echo
echo "Launch specs (one JSON file per container): $plan_dir/<host>/<container>.json"
echo "Deploy for real: copy inventories/lab, set your addresses, then ansible-playbook playbooks/pd_a2.yml -i <inventory>"
