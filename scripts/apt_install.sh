#!/usr/bin/env bash
# apt_install.sh [APT-OPTION...] PACKAGE...: install the Debian packages that are missing.
#
# scripts/test.sh runs installers side by side, so apt runs one at a time under /tmp/llmops-apt.lock.
# The lock is held by flock alone and only around apt: with -o neither apt nor anything it starts
# inherits the lock's file descriptor, and no package's service is started (policy-rc.d), since the
# scripts start the daemons they need themselves, with the descriptors they need only. Before this
# dockerd, started by a script that held the lock on fd 9, kept it for as long as it ran,
# and every later installer waited on it forever. A wait for the lock is bounded and names its holders.
set -euo pipefail
lock=${LLMOPS_APT_LOCK:-/tmp/llmops-apt.lock}
lock_wait=${LLMOPS_APT_LOCK_WAIT:-900}

if [ "${1:-}" = "--locked" ]; then  # the part run by flock, holding the lock
  shift
  options=() packages=()
  for arg; do
    case $arg in
      -*) options+=("$arg") ;;
      *) dpkg-query -W -f='${Status}' "$arg" 2>/dev/null | grep -q 'ok installed' || packages+=("$arg") ;;
    esac
  done
  [ "${#packages[@]}" -gt 0 ] || exit 0  # another installer put them in while this one waited
  policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    trap 'rm -f "$policy"' EXIT
  fi
  timeout 600 apt-get update -qq
  DEBIAN_FRONTEND=noninteractive timeout 1200 apt-get install -y -qq "${options[@]}" "${packages[@]}" >/dev/null
  exit 0
fi

[ "$#" -gt 0 ] || { echo "apt_install: no package named" >&2; exit 2; }
rc=0
flock -o -E 75 -w "$lock_wait" "$lock" bash "$0" --locked "$@" </dev/null || rc=$?
if [ "$rc" -eq 75 ]; then
  holders=$(for fd in /proc/[0-9]*/fd/*; do
    [ "$(readlink "$fd" 2>/dev/null)" = "$lock" ] && { pid=${fd#/proc/}; pid=${pid%%/*}; echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-80)"; }
  done | sort -u | paste -sd ';')
  echo "apt_install: waited ${lock_wait} s for $lock to install $*; held by: ${holders:-nobody (an flock process)}" >&2
fi
exit "$rc"
