#!/usr/bin/env bash
# The collection on another ansible-core than the pinned one (requirements.txt), with Debian 13's Python (3.13) in a
# container made from the harness's fresh Debian 13 root (tests/harness/images.sh):
#   scripts/core_lane.sh 2.21.5 [unit] [plan-mode] [sanity] [deploy]
# unit: the unit tests; plan-mode: the lab's plans against the seeds; sanity: ansible-test sanity of that core;
# deploy: ucm_a2 onto a harness node of its own (converge, a second converge that changes nothing, verify, teardown).
# ansible-core 2.20 and later need Python 3.12, which this machine's Python (3.11) is not. The checkout is mounted at
# its own path, so the collection's link in .build/collections resolves the same inside; the harness node is reached
# with the host's Docker (its socket and client mounted).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
core=$1
shift
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(unit plan-mode sanity deploy)
lane="$root/.build/core-$core"
image=llmops-fresh-base:trixie

inside() {  # the checks, in the container
  export HOME="$lane/home" PATH="$lane/venv/bin:$PATH"
  export ANSIBLE_COLLECTIONS_PATH="$root/.build/collections" PYTHONPATH="$root/.build/collections"
  export ANSIBLE_HOME="$lane/ansible-home" ANSIBLE_CONFIG="$root/ansible.cfg" LLMOPS_HARNESS_DIR="$root/.build/harness"
  mkdir -p "$HOME"
  if [ ! -x "$lane/venv/bin/ansible" ]; then
    python3 -m venv "$lane/venv"
    # the test tools at the versions the pinned lane uses
    "$lane/venv/bin/pip" install -q --disable-pip-version-check "ansible-core==$core" \
      $(grep -E '^(pytest|hypothesis|httpx|openai|aiohttp)==' "$root/requirements-dev.txt")
  fi
  echo "core_lane: $(ansible --version | sed -n 1p), $(python3 --version)"
  cd "$root"
  local check
  for check in "${checks[@]}"; do
    echo "--- core $core: $check"
    case $check in
      unit) python -m pytest -q -p no:cacheprovider tests/unit ;;
      plan-mode) python -m pytest -q -p no:cacheprovider tests/integration/test_lab_plans.py ;;
      sanity)
        command -v git >/dev/null || bash scripts/apt_install.sh git
        SANITY_HOME="$lane/ansible-test-home" SANITY_PYTHON=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
          bash scripts/sanity.sh --no-env ;;
      deploy)
        local inventory=(-i inventories/lab -i tests/harness/inventories/ucm_a2_core)
        ansible-playbook playbooks/ucm_a2.yml "${inventory[@]}"
        ansible-playbook playbooks/ucm_a2.yml "${inventory[@]}" | tee "$lane/second.log"
        grep -qE "changed=[1-9]" "$lane/second.log" && { echo "core_lane: the second converge changed something" >&2; exit 1; }
        ansible-playbook playbooks/verify.yml "${inventory[@]}" -e llmops_cluster=ucm_a2
        ansible-playbook playbooks/teardown.yml "${inventory[@]}" -e llmops_cluster=ucm_a2 -e llmops_confirm_teardown=ucm_a2 ;;
      *) echo "core_lane: no check $check" >&2; exit 2 ;;
    esac
  done
}

if [ "${CORE_LANE_INSIDE:-}" = 1 ]; then
  inside
  exit
fi
mkdir -p "$lane"
deploy=0
for check in "${checks[@]}"; do [ "$check" != deploy ] || deploy=1; done
# shellcheck source=scripts/env.sh
[ "$deploy" = 0 ] || { . "$root/scripts/env.sh"; python tests/harness/nodes.py up tests/harness/inventories/ucm_a2_core; }
# what makes pip work on a machine of this kind (its CA, its package folders, its configuration), where it has them
mounts=()
while read -r path; do
  [ ! -e "$path" ] || mounts+=(-v "$path:$path:ro")
done <"$root/tests/harness/machine_pip_paths"
rc=0
docker run --rm --network host -e CORE_LANE_INSIDE=1 -v "$root:$root" -w "$root" "${mounts[@]}" \
  -v /var/run/docker.sock:/var/run/docker.sock -v "$(command -v docker):/usr/bin/docker:ro" \
  "$image" bash "$root/scripts/core_lane.sh" "$core" "${checks[@]}" || rc=$?
[ "$deploy" = 0 ] || python tests/harness/nodes.py down tests/harness/inventories/ucm_a2_core || rc=1
exit $rc
