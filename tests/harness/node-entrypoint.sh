#!/bin/sh
# Node start: the accelerator stand-ins the engine containers get (character devices for
# /dev/davinci* and the 950DT's /dev/ummu, /dev/uburma; for GPU nodes the simulated nvidia hook and
# nvidia-smi with an "nvidia" runtime), sshd, then the node's own Docker engine in the foreground.
set -e
count=${NODE_NPUS:-8}
i=0
while [ "$i" -lt "$count" ]; do
  [ -e "/dev/davinci$i" ] || mknod "/dev/davinci$i" c 1 3
  i=$((i + 1))
done
if [ "$count" -gt 0 ]; then
  for dev in davinci_manager devmm_svm hisi_hdc ummu uburma; do
    [ -e "/dev/$dev" ] || mknod "/dev/$dev" c 1 3
  done
fi
mkdir -p /var/lib/llmops-sim
echo "${NODE_GPUS:-0}" >/var/lib/llmops-sim/gpus
if [ "${NODE_GPUS:-0}" -gt 0 ]; then
  ln -sf /usr/local/lib/llmops-sim/nvidia_hook.sh /usr/local/bin/nvidia-container-runtime-hook
  ln -sf /usr/local/lib/llmops-sim/nvidia_smi.sh /usr/local/bin/nvidia-smi
  mkdir -p /etc/docker
  echo '{"runtimes": {"nvidia": {"path": "runc"}}}' >/etc/docker/daemon.json
fi
# sshd for inventories that reach the node as Ansible reaches real hosts (nodes.py installs the key).
ssh-keygen -A >/dev/null
mkdir -p /run/sshd
/usr/sbin/sshd
exec dockerd --host unix:///var/run/docker.sock >/var/log/dockerd.log 2>&1
