#!/bin/sh
# Node start: the NPU device nodes the engine containers get (character devices standing in for
# /dev/davinci*), then the node's own Docker engine in the foreground.
set -e
count=${NODE_NPUS:-8}
i=0
while [ "$i" -lt "$count" ]; do
  [ -e "/dev/davinci$i" ] || mknod "/dev/davinci$i" c 1 3
  i=$((i + 1))
done
for dev in davinci_manager devmm_svm hisi_hdc; do
  [ -e "/dev/$dev" ] || mknod "/dev/$dev" c 1 3
done
exec dockerd --host unix:///var/run/docker.sock >/var/log/dockerd.log 2>&1
