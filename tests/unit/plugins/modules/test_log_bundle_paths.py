# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""log_bundle: what a host returns stays under the bundle's root, which is its owner's alone from the start."""

from __future__ import annotations

import json
import os
import stat
import tarfile

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import log_bundle

# what a host that is not to be trusted could return as its entries' names
ESCAPES = {"../../escaped.txt": "a", "/etc/cron.d/x": "b", "./../up/.ssh/authorized_keys": "c", "logs\\..\\..\\win": "d",
           "containers/vllm.log": "fine"}


def _bundle(capsys, dest):
    args = {"dest": str(dest), "cluster": "pd_a2", "specs": [], "hosts": {"../d0": {"entries": ESCAPES, "problems": []}}}
    with patch_module_args(args), pytest.raises(SystemExit):
        log_bundle.main()
    return json.loads(capsys.readouterr().out)


def _tree(root):
    return sorted(os.path.relpath(os.path.join(where, name), root) for where, dirs, files in os.walk(root) for name in dirs + files)


def test_every_entry_lands_under_its_hosts_directory_with_owner_only_modes(capsys, tmp_path):
    dest = tmp_path / "logs"
    result = _bundle(capsys, dest)
    root = result["path"]
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "up").exists()
    files = [path for path in _tree(root) if os.path.isfile(os.path.join(root, path))]
    assert sorted(files) == ["_.._d0/_../_../escaped.txt", "_.._d0/_../up/_.ssh/authorized_keys", "_.._d0/containers/vllm.log",
                             "_.._d0/etc/cron.d/x", "_.._d0/logs/_../_../win", "manifest.json"]
    modes = {path: stat.S_IMODE(os.lstat(os.path.join(root, path)).st_mode) for path in _tree(root)}
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700 and set(modes.values()) == {0o700, 0o600}
    assert stat.S_IMODE(os.stat(result["archive"]).st_mode) == 0o600
    with tarfile.open(result["archive"]) as tar:
        assert all(not member.name.startswith(("/", "..")) and ".." not in member.name.split("/") for member in tar.getmembers())


def test_a_bundle_name_planted_as_a_symlink_is_not_followed(capsys, tmp_path, monkeypatch):
    dest, elsewhere = tmp_path / "logs", tmp_path / "elsewhere"
    dest.mkdir()
    elsewhere.mkdir()
    monkeypatch.setattr(log_bundle.time, "strftime", lambda *_args: "20261206T000000Z")
    (dest / "pd_a2-20261206T000000Z").symlink_to(elsewhere)
    result = _bundle(capsys, dest)
    assert result["failed"] and "the log bundle was not written" in result["msg"] and list(elsewhere.iterdir()) == []
