# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which containers deploy mode starts, from one `docker ps` of the host."""

from __future__ import annotations

import json

from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import compare, parse_ps


def ps_line(name, state, labels):
    return json.dumps({"ID": name * 4, "Names": name, "State": state, "Status": "Up 3 minutes" if state == "running" else "Exited (1)",
                       "Labels": ",".join("%s=%s" % item for item in labels.items())})


def test_parse_ps_reads_names_states_and_labels():
    text = "\n".join([ps_line("a", "running", {"llmops.cluster": "c", "llmops.spec-hash": "h1"}),
                      ps_line("b", "exited", {"llmops.cluster": "c"}), ""])
    found = parse_ps(text)
    assert found["a"] == {"id": "aaaa", "state": "running", "labels": {"llmops.cluster": "c", "llmops.spec-hash": "h1"},
                          "status": "Up 3 minutes"}
    assert found["b"]["state"] == "exited" and "llmops.spec-hash" not in found["b"]["labels"]


def test_only_what_differs_from_the_plan_is_started():
    specs = [{"name": n, "files": {}} for n in ("ok", "changed", "stopped", "missing")]
    specs[0]["files"] = {"/etc/llmops/x.conf": "x"}
    hashes = {"ok": "h-ok", "changed": "h-new", "stopped": "h-stopped", "missing": "h-missing"}
    running = parse_ps("\n".join([
        ps_line("ok", "running", {"llmops.spec-hash": "h-ok"}),
        ps_line("changed", "running", {"llmops.spec-hash": "h-old"}),
        ps_line("stopped", "exited", {"llmops.spec-hash": "h-stopped"}),
        ps_line("old-plan", "running", {"llmops.spec-hash": "h-gone"}),
    ]))
    result = compare(specs, hashes, running)
    assert result["status"] == {"ok": "ok", "changed": "changed", "stopped": "stopped", "missing": "missing"}
    assert result["start"] == ["changed", "stopped", "missing"]
    assert result["restart"] == []
    assert result["extra"] == ["old-plan"]


def test_a_rewritten_config_file_restarts_the_containers_that_mount_it():
    specs = [{"name": "master", "files": {"/etc/llmops/mooncake/mooncake.json": "{}"}}, {"name": "other", "files": {}}]
    running = parse_ps("\n".join(ps_line(s["name"], "running", {"llmops.spec-hash": "h"}) for s in specs))
    result = compare(specs, {"master": "h", "other": "h"}, running, changed_files=["/etc/llmops/mooncake/mooncake.json"])
    assert result["start"] == ["master"] and result["restart"] == ["master"]
    assert result["status"]["other"] == "ok"


def test_a_restarting_container_counts_as_up():
    running = parse_ps(ps_line("a", "restarting", {"llmops.spec-hash": "h"}))
    assert compare([{"name": "a"}], {"a": "h"}, running)["start"] == []
