#!/usr/bin/env bash
# Make sure Debian's Prometheus (prometheus and promtool) and Alertmanager are on this machine, for the tests of
# monitoring.yml's targets and rules and of healing, and a Java runtime for ansible-rulebook's rule engine (Drools,
# Java 17 or later). Installing starts no service (apt_install.sh): the tests start their own, on loopback.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus-alertmanager >/dev/null 2>&1; then
  bash "$root/scripts/apt_install.sh" --no-install-recommends prometheus prometheus-alertmanager
fi
command -v java >/dev/null 2>&1 || bash "$root/scripts/apt_install.sh" --no-install-recommends default-jre-headless
echo "prometheus: $(prometheus --version 2>&1 | head -1)"
