# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_state as deploy's one look at a host: the config files a write would change, the firewall's table, and
the running front door's members, against a docker and an admin API that answer on this machine."""

from __future__ import annotations

import json
import os
import sys

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.module_utils.operations import _container_state as container_state
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members
from ansible_collections.llmops.inference.plugins.modules import container_state as module

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from test_front_door_members import FakeAdminApi, cluster_specs  # noqa: E402  pylint: disable=wrong-import-position
from test_instances import two_p_two_d  # noqa: E402  pylint: disable=wrong-import-position


@pytest.fixture
def docker(tmp_path, monkeypatch):
    """A docker whose `ps` prints the containers written with the returned function (name, state, spec hash)."""
    listing = tmp_path / "ps.jsonl"
    listing.write_text("")
    tool = tmp_path / "bin" / "docker"
    tool.parent.mkdir()
    tool.write_text('#!/bin/sh\n[ "$1" = ps ] && cat %s\nexit 0\n' % listing)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % tool.parent)

    def containers(*running):
        listing.write_text("".join(json.dumps({"Names": name, "State": state, "Status": state, "Labels": "%s=%s,%s=c" % (
            container_state.HASH_LABEL, digest, container_state.CLUSTER_LABEL)}) + "\n" for name, state, digest in running))
    return containers


def look(capsys, **args):
    with patch_module_args(dict(cluster="c", **args)), pytest.raises(SystemExit) as exit_info:
        module.main()
    result = json.loads(capsys.readouterr().out)
    assert exit_info.value.code == 0, result
    return result


def test_a_config_file_that_differs_restarts_the_container_mounting_it_and_nothing_is_written(capsys, tmp_path, docker):
    same, other = tmp_path / "same.yaml", tmp_path / "other.yaml"
    same.write_text("a: 1\n")
    other.write_text("b: old\n")
    spec = launch.new_spec(name="vllm-x", host="h", image="img:1", files={str(same): "a: 1\n", str(other): "b: new\n"})
    docker(("vllm-x", "running", launch.spec_hash(spec)))
    nft = tmp_path / "bin" / "nft"  # knows one table: llmops_c
    nft.write_text('#!/bin/sh\n[ "$1 $2 $3 $4" = "list table inet llmops_c" ]\n')
    nft.chmod(0o755)
    result = look(capsys, specs=[spec], files=spec["files"], firewall_table="llmops_c", firewall_file=str(tmp_path / "none.nft"))
    assert result["changed_files"] == [str(other)] and other.read_text() == "b: old\n"
    assert result["status"] == {"vllm-x": "changed"} and result["restart"] == ["vllm-x"]
    assert result["firewall"] == {"nft": str(nft), "loaded": True, "file": False, "unit": False}
    same_files = look(capsys, specs=[spec], files={str(same): "a: 1\n"})
    assert same_files["changed_files"] == [] and same_files["status"] == {"vllm-x": "ok"} and "firewall" not in same_files


def test_a_key_file_the_process_reads_again_is_found_by_its_digest_and_restarts_nothing(capsys, tmp_path, docker):
    key_file = tmp_path / "secrets" / "vllm-x" / "VLLM_API_KEY"
    key_file.parent.mkdir(parents=True)
    key_file.write_text("engine-key-old\n")
    record = {"names": ["VLLM_API_KEY"], "role": "decode", "digest": "0", "files": {"VLLM_API_KEY": str(key_file)}}
    spec = launch.new_spec(name="vllm-x", host="h", image="img:1", secret_env=record,
                           meta={"live": {"flags": [], "files": [str(key_file)]}})
    secret_files.make_live(record, {"VLLM_API_KEY": "engine-key-new"})
    docker(("vllm-x", "running", launch.spec_hash(spec)))
    result = look(capsys, specs=[spec])
    assert result["changed_files"] == [str(key_file)] and key_file.read_text() == "engine-key-old\n"  # nothing written
    assert result["status"] == {"vllm-x": "ok"} and result["restart"] == []
    key_file.write_text("engine-key-new\n")
    assert look(capsys, specs=[spec])["changed_files"] == []


def test_the_running_proxy_is_asked_which_members_it_lists_and_a_stopped_one_is_not(capsys, docker):
    specs = cluster_specs(two_p_two_d())
    proxy, plan = specs[-1], members.planned(specs)
    listed = {"current_prefill_instances": plan["prefill"][:1] + ["192.0.2.60:9081"], "current_decode_instances": plan["decode"]}
    with FakeAdminApi(listed) as fake:
        door = {"url": fake.url, "admin_key": "admin-a\nadmin-b", "members": plan}
        docker((proxy["name"], "running", launch.spec_hash(proxy)))
        result = look(capsys, specs=[proxy], front_door=door)
        assert result["front_door"] == {"missing": {"prefill": plan["prefill"][1:], "decode": []},
                                        "unplanned": {"prefill": ["192.0.2.60:9081"], "decode": []}}
        # the lists are read with an add of nothing, with the first admin key
        assert fake.seen == [("/instances/add", "Bearer admin-a", {"type": "prefill", "instances": []})]
        assert "admin-a" not in json.dumps(result)
        docker((proxy["name"], "exited", launch.spec_hash(proxy)))
        assert "front_door" not in look(capsys, specs=[proxy], front_door=door) and len(fake.seen) == 1
    docker((proxy["name"], "running", launch.spec_hash(proxy)))
    assert "error" in look(capsys, specs=[proxy], front_door=dict(door, url=fake.url))["front_door"]  # no longer answers


def test_a_host_with_a_container_to_start_answers_preflights_gather_in_the_same_call_and_one_without_does_not(
        capsys, tmp_path, docker):
    spec = launch.new_spec(name="vllm-x", host="h", image="img:1")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    gather = {"gather": ["paths", "memory", "firewall"], "paths": [str(model)], "firewall_table": "llmops_c",
              "firewall_file": str(tmp_path / "none.nft")}
    missing = look(capsys, specs=[spec], preflight=gather)  # nothing runs yet: the container starts
    assert missing["start"] == ["vllm-x"]
    facts = missing["preflight"]
    assert facts["paths"][str(model)]["config_json"] is True and facts["memory"]["total"] > 0
    assert facts["firewall"]["loaded"] is False and facts["firewall"]["file"] is False
    docker(("vllm-x", "running", launch.spec_hash(spec)))
    running = look(capsys, specs=[spec], preflight=gather)
    assert running["start"] == [] and "preflight" not in running  # nothing to start: preflight is skipped, nothing gathered


def test_preflights_options_are_checked_as_node_facts_checks_them(capsys, docker):
    spec = launch.new_spec(name="vllm-x", host="h", image="img:1")
    with patch_module_args(dict(cluster="c", specs=[spec], preflight={"gather": ["npus_typo"]})), pytest.raises(SystemExit):
        module.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and result["msg"].startswith("preflight: ") and "npus_typo" in result["msg"]
