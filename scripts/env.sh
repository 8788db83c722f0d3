# Source me: puts the checkout's virtualenv and collections first, and keeps Ansible's
# state inside the checkout so nothing is written to ~/.ansible.
_llmops_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export PATH="$_llmops_root/.venv/bin:$PATH"
export ANSIBLE_COLLECTIONS_PATH="$_llmops_root/.build/collections"
export ANSIBLE_HOME="$_llmops_root/.build/ansible-home"
export ANSIBLE_CONFIG="$_llmops_root/ansible.cfg"
export PYTHONPATH="$_llmops_root/.build/collections${PYTHONPATH:+:$PYTHONPATH}"
# The harness's SSH key and known_hosts (tests/harness/nodes.py writes them; harness inventories read this).
export LLMOPS_HARNESS_DIR="$_llmops_root/.build/harness"
