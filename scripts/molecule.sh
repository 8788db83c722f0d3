#!/usr/bin/env bash
# One molecule scenario (extensions/molecule/<name>) with its log kept in .build/molecule-<name>.log;
# prints the scenario recap, and the end of the log when it fails.
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
[ "$rc" -eq 0 ] || tail -60 "$log"
exit "$rc"
