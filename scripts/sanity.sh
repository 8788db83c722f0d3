#!/usr/bin/env bash
# ansible-test sanity for the collection, offline. ansible-test wants the collection under
# a real .../ansible_collections/llmops/inference path, so the tracked files are copied there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# --no-env: the caller has set up PATH and the collection's paths (scripts/core_lane.sh, for another ansible-core)
if [ "${1:-}" = --no-env ]; then
  shift
else
  # shellcheck source=scripts/env.sh
  . "$root/scripts/env.sh"
fi
# the Python ansible-test runs the tests with: the checkout's (3.11), or the core lane's
python=${SANITY_PYTHON:-3.11}

# ansible-test keeps its virtualenvs under ~/.ansible/test: give it a home inside this checkout,
# so two checkouts never share (or half-delete) them and nothing is written to the real home.
export HOME="${SANITY_HOME:-$root/.build/ansible-test-home}"
# ansible-test bootstraps pip in its venvs with a get-pip script from a host we cannot reach;
# a local stand-in that uses ensurepip does the same job (ansible-test only runs the script with pip's args).
# The script's name carries the pip version this ansible-test bootstraps (24.2 for core 2.19, 25.2 for 2.21).
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
internal=$(python -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')/_internal
pip_version=$(sed -n "s/^ *pip='\([0-9.]*\)',\$/\1/p" "$internal/python_requirements.py")
[ -n "$pip_version" ] || { echo "sanity.sh: no pip version found in $internal/python_requirements.py" >&2; exit 1; }
cat > "$cache/get_pip_${pip_version//./_}.py" <<'PY'
import os, subprocess, sys
env = {k: v for k, v in os.environ.items() if k != "PIP_CONFIG_FILE"}
subprocess.check_call([sys.executable, "-m", "ensurepip"], env=env)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "pip", "install", "--disable-pip-version-check"] + args, env=env)
PY

# inside ansible-test's home, so a core lane's sanity beside this one has a copy of its own
dest="$HOME/collection/ansible_collections/llmops/inference"
rm -rf "$dest"
mkdir -p "$dest"
(cd "$root" && git ls-files -co --exclude-standard -z | xargs -0 tar -cf - --) | tar -C "$dest" -xf -
cd "$dest"
git init -q && git add -A >/dev/null  # ansible-test lists the collection's files through git
ansible-test sanity --local --python "$python" "$@"
