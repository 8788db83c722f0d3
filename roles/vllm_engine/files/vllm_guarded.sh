#!/bin/sh
# `vllm serve` with llmops_key_guard importable (its --middleware): this directory goes before the image's own
# PYTHONPATH, which is kept (CANN images set theirs), rather than replace it with `docker run -e PYTHONPATH`.
PYTHONPATH="$(dirname "$0")${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
exec vllm "$@"
