#!/usr/bin/env bash
# Build the harness images locally (no image registry is reachable):
#   llmops-node:test    a cluster node: Debian with its own Docker engine (docker.io), python3, sshd
#   llmops-engine:test  what runs on the nodes: the simulated engine as `vllm`, the real PD proxy
#                       from the vllm-ascend sdist, mooncake_master, the Memcache MetaService and etcd (Debian)
#   llmops-fresh-base:trixie  a fresh Debian 13 root for the fresh-machine test (Debian 12's is llmops-engine-base)
#   llmops-systemd-base:test  a Debian 12 host with systemd, where the healing rulebook's service is installed
# Root file systems come from debootstrap; each image is rebuilt only when its inputs change.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="$root/.build/harness"
mkdir -p "$build"

mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list)

# Versions of the real upstream programs: the proxy of vllm-ascend 0.23.0.post1's sdist, the Mooncake and Memcache
# wheels built for Python 3.11 that run on the CPU.
VLLM_ASCEND=0.23.0.post1
ENGINE_PIP="fastapi<0.124.0 httpx uvicorn pyyaml mooncake-transfer-engine-non-cuda==0.3.13.post1 memcache-hybrid==1.3.0 memfabric-hybrid==1.3.0"
NODE_PACKAGES=docker.io,iptables,nftables,python3,python3-requests,procps,iproute2,ca-certificates,openssh-server
ENGINE_PACKAGES=python3,python3-venv,libibverbs1,libnuma1,libcurl4,ca-certificates,procps,iproute2,etcd-server,etcd-client

inputs_hash() { cat "$@" | sha256sum | cut -c1-16; }
image_has() { [ "$(docker image inspect -f '{{index .Config.Labels "llmops.inputs"}}' "$1" 2>/dev/null)" = "$2" ]; }

rootfs_image() {  # name packages hash [suite]
  local name=$1 packages=$2 hash=$3 suite=${4:-bookworm} dir="$build/rootfs-${1%%:*}-${1##*:}"
  image_has "$name" "$hash" && return 0
  rm -rf "$dir"
  # bounded: the build below waits for it (a mirror that stops answering fails here, by name)
  timeout -k 30 900 debootstrap --variant=minbase --include="$packages" "$suite" "$dir" "$mirror" >"$dir.log" 2>&1 \
    || { echo "images: debootstrap of $name failed or took over 900 s" >&2; tail -20 "$dir.log" >&2; return 1; }
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
  tar -C "$dir" -c . | docker import -c 'CMD ["/bin/bash"]' -c "LABEL llmops.inputs=$hash" - "$name" >/dev/null
  rm -rf "$dir"
}

# The proxy script is fetched from the vllm-ascend source distribution, never committed.
proxy_script() {
  local out="$build/engine-context/load_balance_proxy_server_example.py"
  [ -f "$out" ] && return 0
  local venv="$build/sdist-venv" sdist="$build/sdist"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check setuptools setuptools_scm wheel
  mkdir -p "$sdist" "$(dirname "$out")"
  SOC_VERSION=ascend910b1 "$venv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
    --no-build-isolation -d "$sdist" "vllm-ascend==$VLLM_ASCEND"
  tar -xzf "$sdist/vllm_ascend-$VLLM_ASCEND.tar.gz" -O \
    "vllm_ascend-$VLLM_ASCEND/examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py" >"$out"
}

# A fresh Debian 13 root for the fresh-machine test (Debian 12's is the engine base): python3 and its venv, and the
# certificates and procps (pgrep) that one has too.
FRESH_PACKAGES=python3,python3-venv,ca-certificates,procps
fresh_hash=$(echo "$FRESH_PACKAGES trixie" | sha256sum | cut -c1-16)
rootfs_image llmops-fresh-base:trixie "$FRESH_PACKAGES" "$fresh_hash" trixie &
fresh_job=$!

# A Debian 12 host with systemd (run with /lib/systemd/systemd as its command), for roles/heal_rulebook's service;
# the role installs the rest (the venv, Ansible's pip needs) as on a real host. Its Java runtime is here already: the
# role's apt install of it cost pool-recovery, on CI's critical path, a minute or more of every run.
SYSTEMD_PACKAGES=systemd,systemd-sysv,dbus,python3,python3-venv,ca-certificates,openssh-client,procps,default-jre-headless
systemd_hash=$(echo "$SYSTEMD_PACKAGES" | sha256sum | cut -c1-16)
rootfs_image llmops-systemd-base:test "$SYSTEMD_PACKAGES" "$systemd_hash" &
systemd_job=$!

node_base_hash=$(echo "$NODE_PACKAGES" | sha256sum | cut -c1-16)
node_hash=$(echo "$node_base_hash" | cat - "$here/node-entrypoint.sh" "$here/node.Dockerfile" "$here"/sim_host/* | sha256sum | cut -c1-16)
base_hash=$(echo "$ENGINE_PACKAGES" | sha256sum | cut -c1-16)
rootfs_image llmops-node-base:test "$NODE_PACKAGES" "$node_base_hash" &
node_job=$!
rootfs_image llmops-engine-base:test "$ENGINE_PACKAGES" "$base_hash"
wait "$node_job"
wait "$fresh_job"
wait "$systemd_job"

if ! image_has llmops-node:test "$node_hash"; then
  docker build -q -t llmops-node:test --label "llmops.inputs=$node_hash" -f "$here/node.Dockerfile" "$here" >/dev/null
fi

proxy_script
context="$build/engine-context"
rm -f "$context"/vllm_sim.py "$context"/sim_*.py
cp "$here/engine.Dockerfile" "$here"/sim_vllm/*.py "$context/"
cp /etc/ssl/certs/ca-certificates.crt "$context/host-ca.crt"  # pip in the build trusts what the host trusts
engine_hash=$( (echo "$ENGINE_PIP $base_hash"; cat "$context/engine.Dockerfile" "$here"/sim_vllm/*.py \
  "$context/load_balance_proxy_server_example.py") | sha256sum | cut -c1-16)
if ! image_has llmops-engine:test "$engine_hash"; then
  docker build -q -t llmops-engine:test --label "llmops.inputs=$engine_hash" --build-arg "PIP_PACKAGES=$ENGINE_PIP" \
    -f "$context/engine.Dockerfile" "$context" >/dev/null
fi
docker image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep '^llmops-'
