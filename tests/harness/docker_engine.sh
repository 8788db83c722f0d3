#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine: install Debian's docker.io when dockerd is
# missing, start dockerd when it is not running, wait until `docker info` answers.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
log="$root/.build/dockerd.log"
mkdir -p "$root/.build"
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  exec 9>/tmp/llmops-apt.lock  # scripts/test.sh may run two installers at once: one apt at a time
  flock 9
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io debootstrap >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  nohup dockerd >"$log" 2>&1 &
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info >/dev/null 2>&1 || { echo "docker_engine: dockerd did not start, see $log" >&2; tail -20 "$log" >&2; exit 1; }
echo "docker_engine: $(docker version --format 'server {{.Server.Version}}')"
