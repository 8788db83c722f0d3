#!/usr/bin/env bash
# Prepare this checkout on a fresh Debian machine: a virtualenv with the pinned tools, the
# community.docker and ansible.posix collections (taken from the ansible wheel on PyPI, since
# no Galaxy server is reachable) and this collection linked where Ansible looks for it.
# Idempotent: a second run only checks. Source scripts/env.sh afterwards for the paths.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build="$root/.build"
mkdir -p "$build"

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "bootstrap: Python 3.11 or newer is needed (found $("$python" --version 2>&1))" >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  if ! "$python" -m venv .venv 2>/dev/null; then
    rm -rf .venv
    bash scripts/apt_install.sh python3-venv
    "$python" -m venv .venv
  fi
fi
stamp=.venv/.requirements.sha
want=$(cat requirements.txt requirements-dev.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt
  echo "$want" > "$stamp"
fi

# community.docker, what it depends on (community.library_inventory_filtering_v1: ansible-doc and antsibull-docs load
# it) and ansible.posix, unpacked from the pinned ansible wheel (3 MB of 256).
collections="$build/collections"
if [ ! -f "$collections/ansible_collections/community/library_inventory_filtering_v1/MANIFEST.json" ]; then
  wheels="$build/wheels"
  mkdir -p "$wheels" "$collections"
  .venv/bin/pip download -q --disable-pip-version-check --no-deps -d "$wheels" ansible==12.3.0
  .venv/bin/python - "$wheels"/ansible-12.3.0-py3-none-any.whl "$collections" <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1:]
with zipfile.ZipFile(wheel) as zf:
    members = [m for m in zf.namelist()
               if m.startswith(("ansible_collections/community/docker/", "ansible_collections/ansible/posix/",
                                "ansible_collections/community/library_inventory_filtering_v1/"))]
    zf.extractall(dest, members)
PY
fi
mkdir -p "$collections/ansible_collections/llmops"
ln -sfn "$root" "$collections/ansible_collections/llmops/inference"
# sed reads to the end: head closing the pipe early made ansible print a BrokenPipeError traceback
echo "bootstrap: ready ($(.venv/bin/ansible --version | sed -n 1p))"
