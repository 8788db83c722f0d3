# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the modules' tests."""

from __future__ import annotations

import pytest

from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall


@pytest.fixture(autouse=True)
def host_units(tmp_path, monkeypatch):
    """The firewall's boot units go under tmp_path, on a host that runs no systemd (a test may say it does)."""
    units = tmp_path / "systemd-units"
    monkeypatch.setattr(_firewall, "BOOT_UNIT_DIR", str(units))
    monkeypatch.setattr(_firewall, "SYSTEMD_RUNNING", str(tmp_path / "no-systemd-runs-here"))
    return units


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A docker, an nft and a systemctl that record their calls, nft failing when NFT_FAILS is set."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name, body in (("docker", 'echo "docker $*" >> %s\n' % calls),
                       ("nft", 'echo "nft $*" >> %s\n[ -z "$NFT_FAILS" ] || { echo "syntax error" >&2; exit 1; }\n' % calls),
                       ("systemctl", 'echo "systemctl $*" >> %s\n' % calls)):
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return calls
