# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containers_started firewall: a host's first start loads its firewall table before any container acts."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import containers_started

RULES = "table inet llmops_lab\ndelete table inet llmops_lab\ntable inet llmops_lab {\n}\n"


def _start(capsys, firewall, check=False):
    args = {"cluster": "lab", "containers": [], "firewall": firewall, "_ansible_check_mode": check}
    with patch_module_args(args), pytest.raises(SystemExit):
        containers_started.main()
    return json.loads(capsys.readouterr().out)


def test_the_rules_file_is_written_then_loaded_in_one_nft_transaction(capsys, tmp_path, tools, host_units):
    path = tmp_path / "etc" / "llmops_lab.nft"
    result = _start(capsys, {"file": str(path), "text": RULES, "table": "llmops_lab"})
    assert result["changed"] and result["firewall_loaded"]
    assert path.read_text() == RULES and oct(path.stat().st_mode & 0o777) == "0o644"
    assert tools.read_text().splitlines()[0] == "nft -f %s" % path  # before docker is asked anything
    unit = host_units / "llmops-firewall-llmops_lab.service"  # loaded again at boot; no systemd here to enable it
    assert "ExecStart=%s -f %s" % (tools.parent / "bin" / "nft", path) in unit.read_text().splitlines()
    assert not any(line.startswith("systemctl") for line in tools.read_text().splitlines())


def test_where_systemd_runs_the_boot_unit_is_enabled_before_any_container_acts(capsys, tmp_path, tools, monkeypatch):
    monkeypatch.setattr(containers_started.firewall, "SYSTEMD_RUNNING", str(tmp_path))
    path = tmp_path / "etc" / "llmops_lab.nft"
    _start(capsys, {"file": str(path), "text": RULES, "table": "llmops_lab"})
    assert tools.read_text().splitlines()[:3] == [
        "nft -f %s" % path, "systemctl daemon-reload", "systemctl enable --now llmops-firewall-llmops_lab.service"]


def test_a_table_nft_refuses_stops_the_start_and_says_why(capsys, tmp_path, tools, monkeypatch):
    monkeypatch.setenv("NFT_FAILS", "1")
    result = _start(capsys, {"file": str(tmp_path / "llmops_lab.nft"), "text": RULES, "table": "llmops_lab"})
    assert result["failed"] and "the host firewall was not loaded, so nothing was started" in result["msg"]
    assert "syntax error" in result["msg"]
    assert not any(line.startswith("docker") for line in tools.read_text().splitlines())


def test_check_mode_loads_nothing(capsys, tmp_path, tools):
    path = tmp_path / "llmops_lab.nft"
    result = _start(capsys, {"file": str(path), "text": RULES, "table": "llmops_lab"}, check=True)
    assert result["changed"] and not path.exists()
    assert not any(line.startswith(("nft", "systemctl")) for line in tools.read_text().splitlines())


def test_rules_without_their_table_are_refused_before_anything_is_written(capsys, tmp_path, tools):
    path = tmp_path / "llmops_lab.nft"
    result = _start(capsys, {"file": str(path), "text": RULES, "table": ""})
    assert result["failed"] and "no table named" in result["msg"] and not path.exists()
    assert not tools.exists() or not tools.read_text()
