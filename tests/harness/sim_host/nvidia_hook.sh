#!/bin/sh
# SIMULATED nvidia-container-runtime-hook (tests only). dockerd registers its "nvidia" device driver
# when this program is on its PATH, turns `--gpus device=0,1` into NVIDIA_VISIBLE_DEVICES=0,1 in the
# container's environment and runs this hook before the container starts. The real hook maps those
# GPUs in; this one records which container asked for which GPUs and lets it start.
[ "$1" = prestart ] || exit 0
mkdir -p /var/log/llmops-sim
python3 -c '
import json, sys
state = json.load(sys.stdin)
config = json.load(open(state["bundle"] + "/config.json"))
gpus = [e.split("=", 1)[1] for e in config["process"]["env"] if e.startswith("NVIDIA_VISIBLE_DEVICES=")]
print(state["id"], gpus[0] if gpus else "-")
' >>/var/log/llmops-sim/nvidia-hook.log
