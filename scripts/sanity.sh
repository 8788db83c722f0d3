#!/usr/bin/env bash
# ansible-test sanity for the collection, offline. ansible-test wants the collection under
# a real .../ansible_collections/llmops/inference path, so the tracked files are copied there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

# ansible-test keeps its virtualenvs under ~/.ansible/test: give it a home inside this checkout,
# so two checkouts never share (or half-delete) them and nothing is written to the real home.
export HOME="$root/.build/ansible-test-home"
# ansible-test bootstraps pip in its venvs with a get-pip script from a host we cannot reach;
# a local stand-in that uses ensurepip does the same job (ansible-test only runs the script with pip's args).
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
cat > "$cache/get_pip_24_2.py" <<'PY'
import os, subprocess, sys
env = {k: v for k, v in os.environ.items() if k != "PIP_CONFIG_FILE"}
subprocess.check_call([sys.executable, "-m", "ensurepip"], env=env)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + args, env=env)
PY

dest="$root/.build/sanity/ansible_collections/llmops/inference"
rm -rf "$dest"
mkdir -p "$dest"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - --) | tar -C "$dest" -xf -
cd "$dest"
git init -q && git add -A >/dev/null  # ansible-test lists the collection's files through git
ansible-test sanity --local --python 3.11 "$@"
