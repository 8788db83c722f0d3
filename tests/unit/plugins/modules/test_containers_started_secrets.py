# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""containers_started secret files: written 0400 in 0700 directories right before a container's action, never as an
argument of docker run."""

from __future__ import annotations

import json
import stat

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import config_files, containers_started

KEY = "engine-key-4711-6a0e3d9b-planted"


def _start(capsys, containers):
    with patch_module_args({"cluster": "lab", "containers": containers}), pytest.raises(SystemExit):
        containers_started.main()
    return json.loads(capsys.readouterr().out)


def _spec(path, text):
    return {"name": "vllm-prefill-dp0", "image": "img", "command": ["sh", "/w.sh", "serve"], "env": {},
            "labels": {"llmops.spec-hash": "1"}, "secret_files": {str(path): text}}


def test_a_secret_file_is_written_0400_in_a_0700_directory_and_never_reaches_docker(capsys, tmp_path, tools):
    path = tmp_path / "secrets" / "vllm-prefill-dp0" / "VLLM_API_KEY"
    result = _start(capsys, [_spec(path, KEY + "\n")])
    assert result["changed"] and result["actions"] == {"vllm-prefill-dp0": "create"}
    assert path.read_text() == KEY + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o400
    assert {stat.S_IMODE(d.stat().st_mode) for d in (path.parent, path.parent.parent)} == {0o700}
    assert KEY not in tools.read_text() and "docker run" in tools.read_text()


def test_a_changed_key_replaces_the_file_at_once_and_a_symlink_in_its_place_is_not_followed(capsys, tmp_path, tools):
    path = tmp_path / "secrets" / "vllm-prefill-dp0" / "VLLM_API_KEY"
    _start(capsys, [_spec(path, KEY + "\n")])
    _start(capsys, [_spec(path, "new-" + KEY + "\n" + KEY + "\n")])
    assert path.read_text() == "new-" + KEY + "\n" + KEY + "\n" and stat.S_IMODE(path.stat().st_mode) == 0o400
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_text("not a key\n")
    path.unlink()
    path.symlink_to(elsewhere)
    _start(capsys, [_spec(path, KEY + "\n")])
    assert elsewhere.read_text() == "not a key\n" and not path.is_symlink() and path.read_text() == KEY + "\n"


def test_config_files_writes_the_live_key_files_that_differ_and_none_in_check_mode(capsys, tmp_path):
    path = tmp_path / "secrets" / "pd-proxy" / "LLMOPS_FRONT_DOOR_KEYS"
    args = {"files": {}, "secret_files": {str(path): KEY + "\n"}}
    with patch_module_args(dict(args, _ansible_check_mode=True)), pytest.raises(SystemExit):
        config_files.main()
    assert json.loads(capsys.readouterr().out)["changed_files"] == [str(path)] and not path.exists()
    for expected in ([str(path)], []):  # written once, then found as planned
        with patch_module_args(args), pytest.raises(SystemExit):
            config_files.main()
        result = json.loads(capsys.readouterr().out)
        assert result["changed_files"] == expected and KEY not in json.dumps(result)
    assert path.read_text() == KEY + "\n" and stat.S_IMODE(path.stat().st_mode) == 0o400
