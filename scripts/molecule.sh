#!/usr/bin/env bash
# One molecule scenario (extensions/molecule/<name>) with its log kept in .build/molecule-<name>.log;
# prints the scenario recap and, when it fails, each failed task and the last log lines of every container
# on the scenario's nodes (CI keeps only the end of the output; the nodes are gone once destroyed).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/env.sh
. scripts/env.sh
name=$1
log="$root/.build/molecule-$name.log"
NO_COLOR=1 ANSIBLE_NOCOLOR=1 molecule test -s "$name" --destroy never >"$log" 2>&1
rc=$?
if [ "$rc" -ne 0 ]; then
  {
    echo "=== the containers of the scenario's nodes, as the failure left them"
    for node in $(grep -o 'ansible_host: llmops-[a-z0-9-]*' "tests/harness/inventories/$name/hosts.yml" | cut -d' ' -f2); do
      for container in $(docker exec "$node" docker ps -a --format '{{.Names}}' 2>/dev/null); do
        echo "--- $node / $container: $(docker exec "$node" docker inspect -f '{{.State.Status}} exit {{.State.ExitCode}}' "$container")"
        docker exec "$node" docker logs --tail 25 "$container" 2>&1
      done
    done
  } >>"$log" 2>&1
fi
# --destroy never kept the nodes for the look above: remove them now, whatever the outcome
NO_COLOR=1 ANSIBLE_NOCOLOR=1 molecule destroy -s "$name" >>"$log" 2>&1
grep -E "\] Executed: " "$log" | sed "s/^INFO *//"
if [ "$rc" -ne 0 ]; then
  sed -n '/^=== the containers of the scenario/,$p' "$log" | head -200
  echo "--- end of $log"
  tail -30 "$log"
  # The failed tasks, each with its task line and message, last: CI keeps only the end of the output.
  echo "=== the failed tasks of $name"
  grep -n -B3 -A8 -E "^(fatal|failed): \[" "$log" | head -60
fi
exit "$rc"
