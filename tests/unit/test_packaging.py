# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection claims about its dependencies is what CI runs it with."""

from __future__ import annotations

import json
import pathlib
import re

import ansible.release
import yaml
from ansible.utils.version import SemanticVersion

import ansible_collections.community.docker as community_docker

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _within(version, spec):
    checks = {">=": lambda a, b: a >= b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b}
    for part in spec.split(","):
        part = part.strip()
        operator = next(op for op in (">=", "<=", ">", "<") if part.startswith(op))
        if not checks[operator](SemanticVersion(version), SemanticVersion(part[len(operator):])):
            return False
    return True


def test_the_community_docker_ci_installs_is_within_the_declared_range():
    spec = yaml.safe_load((ROOT / "galaxy.yml").read_text())["dependencies"]["community.docker"]
    manifest = pathlib.Path(community_docker.__path__[0]) / "MANIFEST.json"
    installed = json.loads(manifest.read_text())["collection_info"]["version"]
    assert _within(installed, spec), (installed, spec)
    assert spec.startswith(">=%s" % installed)  # the lowest claimed is the one tested


def test_the_claimed_ansible_cores_are_the_ones_tested():
    """The pinned core (requirements.txt) is the lowest claimed; each other minor the claim admits has a lane of the
    tests (scripts/core_lane.sh in scripts/test.sh); the core running this test is within the claim."""
    spec = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())["requires_ansible"]
    pinned = re.search(r"^ansible-core==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert spec.startswith(">=%s," % pinned)
    lanes = re.findall(r"core_lane\.sh (\d+\.\d+\.\d+)", (ROOT / "scripts" / "test.sh").read_text())
    tested = {".".join(version.split(".")[:2]) for version in [pinned] + lanes}
    assert all(_within(version, spec) for version in lanes)
    ceiling = re.search(r"<(\d+)\.(\d+)\.0$", spec)
    claimed = {"2.%d" % minor for minor in range(int(pinned.split(".")[1]), int(ceiling.group(2)))}
    assert claimed == tested, (claimed, tested)
    assert _within(ansible.release.__version__, spec)


def test_the_license_is_the_one_galaxy_yml_names():
    assert yaml.safe_load((ROOT / "galaxy.yml").read_text())["license"] == ["GPL-3.0-or-later"]
    assert "GNU GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text() and "Version 3" in (ROOT / "LICENSE").read_text()
