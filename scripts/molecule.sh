#!/usr/bin/env bash
# One molecule scenario (extensions/molecule/<name>) with its log kept in .build/molecule-<name>.log;
# prints the scenario recap and, when it fails, each failed task (CI keeps only the end of the output).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# shellcheck source=scripts/env.sh
. scripts/env.sh
name=$1
log="$root/.build/molecule-$name.log"
NO_COLOR=1 ANSIBLE_NOCOLOR=1 molecule test -s "$name" >"$log" 2>&1
rc=$?
grep -E "\] Executed: " "$log" | sed "s/^INFO *//"
if [ "$rc" -ne 0 ]; then
  # The failed tasks, each with its task line and message, before the end of the log.
  grep -n -B3 -A30 -E "^(fatal|failed): \[" "$log" | head -150
  echo "--- end of $log"
  tail -30 "$log"
fi
exit "$rc"
