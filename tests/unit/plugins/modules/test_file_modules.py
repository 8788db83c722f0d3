# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_files, config_files and containers_started's files: write what differs, nothing in check mode, nothing twice."""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import config_files, containers_started, plan_files


def _run(capsys, module, args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        module.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


SPECS = [{"name": "vllm-decode-dp0", "host": "d0", "wave": 0}, {"name": "pd-proxy", "host": "p0", "wave": 1}]


def test_plan_files_writes_each_spec_once_and_check_mode_writes_nothing(capsys, tmp_path):
    code, result = _run(capsys, plan_files, {"dest": str(tmp_path), "specs": SPECS, "_ansible_check_mode": True})
    assert code == 0 and result["changed"] and not list(tmp_path.iterdir())
    code, result = _run(capsys, plan_files, {"dest": str(tmp_path), "specs": SPECS})
    assert sorted(result["written"]) == [str(tmp_path / "d0" / "vllm-decode-dp0.json"), str(tmp_path / "p0" / "pd-proxy.json")]
    assert json.loads((tmp_path / "p0" / "pd-proxy.json").read_text()) == SPECS[1]
    code, result = _run(capsys, plan_files, {"dest": str(tmp_path), "specs": SPECS})
    assert result["changed"] is False


def test_plan_files_refuses_a_spec_that_would_escape_the_plan_directory(capsys, tmp_path):
    code, result = _run(capsys, plan_files, {"dest": str(tmp_path), "specs": [{"name": "x", "host": "../etc"}]})
    assert code == 1 and "no usable host" in result["msg"]


@pytest.mark.skipif(os.geteuid() != 0, reason="making a symlink another user owns needs root (CI runs as root)")
@pytest.mark.parametrize("planted", ["plan", "plan/p0", "plan/p0/pd-proxy.json"])
def test_plan_files_refuses_a_symlink_another_user_planted_in_the_plan_directory(capsys, tmp_path, planted):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "pd-proxy.json").write_text("theirs")
    link = tmp_path / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(theirs / "pd-proxy.json" if planted.endswith(".json") else theirs)
    os.lchown(link, 4242, 4242)
    code, result = _run(capsys, plan_files, {"dest": str(tmp_path / "plan"), "specs": SPECS})
    assert code == 1 and "holds %s, a symlink another user owns: nothing was written" % link in result["msg"]
    assert [path.name for path in theirs.iterdir()] == ["pd-proxy.json"] and (theirs / "pd-proxy.json").read_text() == "theirs"
    os.lchown(link, os.geteuid(), os.getegid())  # the operator's own symlink is followed, as before
    assert _run(capsys, plan_files, {"dest": str(tmp_path / "plan"), "specs": SPECS})[0] == 0


def test_config_files_reports_and_diffs_what_it_changes(capsys, tmp_path):
    path = tmp_path / "mooncake" / "mooncake.json"
    _code, result = _run(capsys, config_files, {"files": {str(path): "{}\n"}, "_ansible_check_mode": True, "_ansible_diff": True})
    assert result["changed_files"] == [str(path)] and not path.exists()
    assert result["diff"] == [{"before_header": str(path), "after_header": str(path), "before": "", "after": "{}\n"}]
    _run(capsys, config_files, {"files": {str(path): "{}\n"}})
    assert path.read_text() == "{}\n" and oct(path.stat().st_mode & 0o777) == "0o644"
    _code, result = _run(capsys, config_files, {"files": {str(path): "{}\n"}})
    assert result["changed"] is False and result["changed_files"] == []


def test_config_files_refuses_relative_paths(capsys):
    code, result = _run(capsys, config_files, {"files": {"etc/x.conf": "x"}})
    assert code == 1 and "not absolute" in result["msg"]


def test_containers_started_writes_the_steps_files_before_its_containers_act(capsys, tmp_path, monkeypatch):
    path = tmp_path / "pd_proxy" / "front_door.py"
    acted = []
    # no Docker here: the host has none of the cluster's containers, and each docker call is recorded, not made
    monkeypatch.setattr(containers_started.AnsibleModule, "get_bin_path", lambda self, name, **kwargs: "/usr/bin/" + name)
    monkeypatch.setattr(containers_started, "cluster_containers", lambda module, docker, cluster: {})
    monkeypatch.setattr(containers_started, "act", lambda docker, container, what, timeout: acted.append((path.exists(), what)))
    spec = {"name": "pd-proxy", "labels": {"llmops.spec-hash": "1"}, "env": {}}
    args = {"cluster": "pd_a2", "containers": [spec], "files": {str(path): "print()\n"}}
    code, result = _run(capsys, containers_started, dict(args, _ansible_check_mode=True))
    assert result["changed_files"] == [str(path)] and not path.exists() and not acted
    code, result = _run(capsys, containers_started, args)
    assert code == 0 and result["changed_files"] == [str(path)] and path.read_text() == "print()\n"
    # the file was there when the container was run
    assert acted == [(True, "create")] and oct(path.stat().st_mode & 0o777) == "0o644"
    # the components' directories, with their parents, before anything else; only those missing, never twice
    cache = tmp_path / "ucm" / "cache"
    code, result = _run(capsys, containers_started, dict(args, dirs=[str(cache), str(tmp_path)], _ansible_check_mode=True))
    assert result["made_dirs"] == [str(cache)] and not cache.exists()
    code, result = _run(capsys, containers_started, dict(args, dirs=[str(cache), str(tmp_path)]))
    # the cache holds what the cluster's requests computed: its owner's alone
    assert result["made_dirs"] == [str(cache)] and cache.is_dir() and oct(cache.stat().st_mode & 0o777) == "0o700"
    code, result = _run(capsys, containers_started, dict(args, containers=[], dirs=[str(cache)]))
    assert result["made_dirs"] == [] and result["changed"] is False
    code, result = _run(capsys, containers_started, dict(args, dirs=["data/ucm"]))
    assert code == 1 and "not absolute" in result["msg"]
    code, result = _run(capsys, containers_started, dict(args, containers=[]))
    assert result["changed_files"] == [] and result["changed"] is False


def test_containers_started_lists_the_hosts_containers_unless_the_look_found_every_one_absent(capsys, monkeypatch):
    listed, acted = [], []
    monkeypatch.setattr(containers_started.AnsibleModule, "get_bin_path", lambda self, name, **kwargs: "/usr/bin/" + name)
    monkeypatch.setattr(containers_started, "cluster_containers", lambda module, docker, cluster: listed.append(cluster) or {})
    monkeypatch.setattr(containers_started, "act", lambda docker, container, what, timeout: acted.append((container["name"], what)))
    specs = [{"name": name, "labels": {"llmops.spec-hash": "1"}, "env": {}} for name in ("prefill-dp0", "pd-proxy")]
    # a first deploy: both absent at the look, so run at once
    code, _result = _run(capsys, containers_started, {"cluster": "pd_a2", "containers": specs, "absent": ["prefill-dp0", "pd-proxy"]})
    assert code == 0 and listed == [] and sorted(acted) == [("pd-proxy", "create"), ("prefill-dp0", "create")]
    # one the look found (or a restart asked): the host's containers are listed first, as always
    for extra in ({"absent": ["prefill-dp0"]}, {"absent": ["prefill-dp0", "pd-proxy"], "restart": ["pd-proxy"]}, {}):
        _run(capsys, containers_started, dict({"cluster": "pd_a2", "containers": specs}, **extra))
    assert listed == ["pd_a2"] * 3
