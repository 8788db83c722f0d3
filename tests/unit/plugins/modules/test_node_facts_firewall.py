# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts gather firewall: what deploy needs to know to skip removing a firewall that is not there."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import node_facts


def _gather(capsys, table, path):
    args = {"gather": ["firewall"], "firewall_table": table, "firewall_file": path}
    with patch_module_args(args), pytest.raises(SystemExit):
        node_facts.main()
    return json.loads(capsys.readouterr().out)["facts"]["firewall"]


@pytest.fixture
def fake_nft(tmp_path, monkeypatch):
    """An nft that knows one table, llmops_lab: `nft list table inet llmops_lab` succeeds, any other fails."""
    tool = tmp_path / "bin" / "nft"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\n[ "$1 $2 $3 $4" = "list table inet llmops_lab" ]\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tool.parent))
    return str(tool)


def test_a_loaded_table_and_its_file_are_both_seen(capsys, tmp_path, fake_nft):
    rules = tmp_path / "llmops_lab.nft"
    rules.write_text("table inet llmops_lab {}\n")
    assert _gather(capsys, "llmops_lab", str(rules)) == {"nft": fake_nft, "loaded": True, "file": True, "unit": False}


def test_another_clusters_table_and_a_missing_file_are_not(capsys, tmp_path, fake_nft):
    assert _gather(capsys, "llmops_other", str(tmp_path / "llmops_other.nft")) == {"nft": fake_nft, "loaded": False, "file": False, "unit": False}
