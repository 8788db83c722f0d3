#!/bin/sh
# SIMULATED nvidia-smi (tests only): the node's GPUs (count in /var/lib/llmops-sim/gpus) for the two
# queries preflight asks; no process is ever reported on them.
count=$(cat /var/lib/llmops-sim/gpus 2>/dev/null || echo 0)
[ "$count" -gt 0 ] || { echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver." >&2; exit 9; }
case "$*" in
  *--query-gpu=index,uuid,name*)
    i=0
    while [ "$i" -lt "$count" ]; do
      echo "$i, GPU-00000000-0000-0000-0000-00000000000$i, NVIDIA H100 80GB HBM3"
      i=$((i + 1))
    done ;;
  *--query-compute-apps*) ;;
  *) echo "simulated nvidia-smi: only --query-gpu and --query-compute-apps are answered" >&2; exit 2 ;;
esac
