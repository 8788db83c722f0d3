#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine: install Debian's docker.io (and debootstrap, for
# images.sh) when missing, start dockerd when it is not running, wait until `docker info` answers.
# dockerd starts detached with its log as its only output and no other inherited descriptor (daemon.py):
# it must not hold the apt lock, or a pipe of whoever runs this script, for as long as it runs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
log="$root/.build/dockerd.log"
mkdir -p "$root/.build"
if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  bash "$root/scripts/apt_install.sh" docker.io debootstrap
fi
if ! docker info >/dev/null 2>&1; then
  python3 "$here/daemon.py" "$log" dockerd >/dev/null
  for _ in $(seq 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info >/dev/null 2>&1 || { echo "docker_engine: dockerd did not start within 60 s, see $log" >&2; tail -20 "$log" >&2; exit 1; }
echo "docker_engine: $(docker version --format 'server {{.Server.Version}}')"
