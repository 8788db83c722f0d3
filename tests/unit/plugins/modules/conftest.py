# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures of the modules' tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """A docker that records its calls and an nft that records its own, failing when NFT_FAILS is set."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    for name, body in (("docker", 'echo "docker $*" >> %s\n' % calls),
                       ("nft", 'echo "nft $*" >> %s\n[ -z "$NFT_FAILS" ] || { echo "syntax error" >&2; exit 1; }\n' % calls)):
        (bin_dir / name).write_text("#!/bin/sh\n" + body)
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return calls
