# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The healing rulebook's service: the collections and the inventory it is given, and its pins."""

from __future__ import annotations

import pathlib

import pytest
import yaml

from ansible_collections.llmops.inference.plugins.module_utils.services import _heal_service as heal_service

ROOT = pathlib.Path(__file__).resolve().parents[4]


def test_each_collection_comes_from_the_first_path_that_has_it():
    system = {"llmops.inference": {"version": "0.0.9"}, "community.docker": {"version": "4.8.5"}}
    found = {"/home/ops/.ansible/collections/ansible_collections": {"llmops.inference": {"version": "0.1.0"}},
             "/usr/lib/python3/dist-packages/ansible_collections": system}
    assert heal_service.collection_paths(found, ["llmops.inference", "community.docker"]) == [
        {"name": "llmops.inference", "path": "/home/ops/.ansible/collections/ansible_collections/llmops/inference"},
        {"name": "community.docker", "path": "/usr/lib/python3/dist-packages/ansible_collections/community/docker"}]
    with pytest.raises(heal_service.MissingCollection, match=r"community\.general is not installed on the controller"):
        heal_service.collection_paths(found, ["community.general"])


def test_inventory_sources_merge_into_one_directory_file_by_file(tmp_path):
    lab, harness = tmp_path / "lab", tmp_path / "harness"
    for where in (lab / "group_vars", lab / "credentials" / "pd_a2", harness / "group_vars", harness / ".git"):
        where.mkdir(parents=True)
    for path in (lab / "hosts.yml", lab / "group_vars" / "all.yml", lab / "group_vars" / "nodes.yml", lab / "README.md",
                 lab / "credentials" / "pd_a2" / "admin-key", harness / "hosts.yml", harness / "group_vars" / "nodes.yml",
                 harness / ".hidden", harness / ".git" / "HEAD"):
        path.write_text("---\n")
    extra = tmp_path / "extra.yml"
    extra.write_text("---\n")
    assert heal_service.inventory_copies([str(lab), str(harness), str(extra)]) == [
        {"src": str(lab / "credentials" / "pd_a2" / "admin-key"), "dest": "credentials/pd_a2/admin-key"},
        {"src": str(lab / "group_vars" / "all.yml"), "dest": "group_vars/all.yml"},
        {"src": str(harness / "group_vars" / "nodes.yml"), "dest": "group_vars/nodes.yml"},  # the later source's
        {"src": str(lab / "hosts.yml"), "dest": "01-hosts.yml"},
        {"src": str(harness / "hosts.yml"), "dest": "02-hosts.yml"},
        {"src": str(extra), "dest": "03-extra.yml"}]
    with pytest.raises(heal_service.NotAnInventory, match=r"heal_rulebook_inventory: localhost, is no file or directory"):
        heal_service.inventory_copies(["localhost,"])


def test_the_service_pins_what_the_controller_pins():
    pins = {}
    for name in ("requirements.txt", "requirements-dev.txt"):
        for line in (ROOT / name).read_text().splitlines():
            if "==" in line and not line.startswith("#"):
                package, version = line.split("==")
                pins[package.strip()] = version.strip()
    defaults = yaml.safe_load((ROOT / "roles" / "heal_rulebook" / "defaults" / "main.yml").read_text())
    service = dict(pin.split("==") for pin in defaults["heal_rulebook_python_packages"])
    assert service == {name: pins[name] for name in service}
    assert set(service) == {"ansible-core", "ansible-rulebook", "aiohttp"}
