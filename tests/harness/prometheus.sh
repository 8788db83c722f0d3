#!/usr/bin/env bash
# Make sure Debian's Prometheus (prometheus and promtool) is on this machine, for the tests of
# monitoring.yml's targets and rules. Installing must not start Debian's own prometheus service:
# the tests start their own, on loopback.
set -euo pipefail
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  policy=/usr/sbin/policy-rc.d
  [ -e "$policy" ] && had_policy=1 || had_policy=0
  [ "$had_policy" = 1 ] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; }
  exec 9>/tmp/llmops-apt.lock  # scripts/test.sh may run two installers at once: one apt at a time
  flock 9
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  [ "$had_policy" = 1 ] || rm -f "$policy"
fi
echo "prometheus: $(prometheus --version 2>&1 | head -1)"
