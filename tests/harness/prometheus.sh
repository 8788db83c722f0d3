#!/usr/bin/env bash
# Make sure Debian's Prometheus (prometheus and promtool) is on this machine, for the tests of
# monitoring.yml's targets and rules. Installing starts no service (apt_install.sh): the tests start
# their own Prometheus, on loopback.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  bash "$root/scripts/apt_install.sh" --no-install-recommends prometheus
fi
echo "prometheus: $(prometheus --version 2>&1 | head -1)"
