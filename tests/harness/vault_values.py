# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The harness inventories' secrets as Ansible reads them: their ansible-vault values decrypted with the demo's vault
password (inventories/lab/vault-password, which ansible.cfg names), for the tests, benchmarks and the demo that send
the front door's client key themselves.

    python tests/harness/vault_values.py    # prints the harness front doors' client key
"""

from __future__ import annotations

import pathlib

import yaml
from ansible.parsing.vault import VaultLib, VaultSecret

ROOT = pathlib.Path(__file__).resolve().parents[2]
PASSWORD = ROOT / "inventories" / "lab" / "vault-password"
COMMON = ROOT / "tests" / "harness" / "inventories" / "common" / "harness_nodes.yml"


class _Loader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """YAML that keeps a !vault value as its ciphertext."""


_Loader.add_constructor("!vault", lambda loader, node: {"vault": loader.construct_scalar(node)})


def decrypted(value: object) -> object:
    if isinstance(value, dict) and set(value) == {"vault"}:
        vault = VaultLib([("default", VaultSecret(PASSWORD.read_bytes().strip()))])
        return vault.decrypt(value["vault"].encode()).decode()
    return value


def client_key() -> str:
    """The client key of every harness front door (pd_proxy_client_keys in harness_nodes.yml)."""
    settings = yaml.load(COMMON.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506  # SafeLoader's subclass
    return str(decrypted(settings["pd_proxy_client_keys"][0]))


if __name__ == "__main__":
    print(client_key())
