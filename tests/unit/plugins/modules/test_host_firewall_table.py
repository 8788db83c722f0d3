# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_firewall_table: the role's way to load a table and its boot unit, or to remove them."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import host_firewall_table

RULES = 'table inet llmops_lab\ndelete table inet llmops_lab\ntable inet llmops_lab {\n  comment "llmops 0123abcd"\n}\n'


def _run(capsys, **args):
    with patch_module_args(dict({"table": "llmops_lab"}, **args)), pytest.raises(SystemExit):
        host_firewall_table.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def listed(tmp_path, monkeypatch):
    """An nft whose `list table inet llmops_lab` prints the file ``listing`` (fails when it is missing); calls recorded."""
    calls, listing = tmp_path / "calls", tmp_path / "listing"
    tool = tmp_path / "bin" / "nft"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\necho "nft $*" >> %s\nif [ "$1" = list ]; then /bin/cat %s 2>/dev/null; exit $?; fi\n'
                    'if [ "$1" = delete ]; then /bin/rm -f %s; fi\n' % (calls, listing, listing))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", str(tool.parent))
    return calls, listing


def test_a_table_loaded_as_planned_with_its_unit_is_left_alone_and_one_that_is_not_is_loaded(capsys, tmp_path, listed, host_units):
    calls, listing = listed
    path = tmp_path / "firewall" / "llmops_lab.nft"
    result = _run(capsys, file=str(path), text=RULES)
    assert result["changed"] and path.read_text() == RULES
    assert "nft -f %s" % path in calls.read_text().splitlines()
    assert (host_units / "llmops-firewall-llmops_lab.service").exists() and result["unit"].endswith("llmops-firewall-llmops_lab.service")
    listing.write_text(RULES)  # the kernel now holds it, with its digest
    calls.write_text("")
    assert _run(capsys, file=str(path), text=RULES)["changed"] is False
    assert not any(" -f " in line for line in calls.read_text().splitlines())
    (host_units / "llmops-firewall-llmops_lab.service").unlink()  # loaded, but gone after a reboot: written again
    assert _run(capsys, file=str(path), text=RULES)["changed"] is True


def test_absent_removes_the_table_its_file_and_its_unit_and_then_has_nothing_to_do(capsys, tmp_path, listed, host_units):
    calls, listing = listed
    path = tmp_path / "firewall" / "llmops_lab.nft"
    _run(capsys, file=str(path), text=RULES)
    listing.write_text(RULES)
    assert _run(capsys, file=str(path), state="absent", _ansible_check_mode=True)["changed"] is True
    assert path.exists() and listing.exists()  # check mode removes nothing
    assert _run(capsys, file=str(path), state="absent")["changed"] is True
    assert "nft delete table inet llmops_lab" in calls.read_text().splitlines()
    assert not path.exists() and not listing.exists() and not (host_units / "llmops-firewall-llmops_lab.service").exists()
    assert _run(capsys, file=str(path), state="absent")["changed"] is False


def test_present_needs_the_rules(capsys, tmp_path, listed):
    result = _run(capsys, file=str(tmp_path / "llmops_lab.nft"))
    assert result["failed"] and "text" in result["msg"]


def test_check_mode_shows_the_rules_that_would_change_and_writes_nothing(capsys, tmp_path, listed):
    calls, _listing = listed
    path = tmp_path / "firewall" / "llmops_lab.nft"
    preview = _run(capsys, file=str(path), text=RULES, _ansible_check_mode=True, _ansible_diff=True)
    assert preview["changed"] and preview["diff"]["before"] == "" and preview["diff"]["after"] == RULES
    assert not path.exists() and not any(" -f " in line for line in calls.read_text().splitlines())
    _run(capsys, file=str(path), text=RULES)
    wider = RULES.replace("0123abcd", "4567ef01")
    assert _run(capsys, file=str(path), text=wider, _ansible_check_mode=True, _ansible_diff=True)["diff"]["before"] == RULES
    assert path.read_text() == RULES
