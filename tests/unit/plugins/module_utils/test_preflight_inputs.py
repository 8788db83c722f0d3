# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What preflight asks node_facts to look at, and what deploy creates itself."""

from __future__ import annotations

import os
import sys

from ansible_collections.llmops.inference.plugins.module_utils.preflight import _preflight_inputs as preflight_inputs

sys.path.insert(0, os.path.dirname(__file__))
from preflight_cases import ENGINE, VOLUMES, good_facts, meta, only, report  # noqa: E402  pylint: disable=wrong-import-position


def test_rendered_configs_and_created_directories_need_not_exist_yet():
    spec = dict(ENGINE, volumes=VOLUMES + ["/data/ucm:/data/ucm"])
    assert "/etc/llmops/mooncake/mooncake.json" not in preflight_inputs.wanted_paths(meta([spec]), ["/data/ucm/cache"])
    assert "/data/ucm" not in preflight_inputs.wanted_paths(meta([spec]), ["/data/ucm/cache"])
    assert report(good_facts(), specs=[spec], options={"created": ["/data/ucm/cache", "/data/ucm/log"]})["rows"] == []
    assert preflight_inputs.model_dirs(meta([spec])) == ["/root/.cache/GLM"]
    # an engine's key file, which deploy writes right before the engine starts
    keyed = dict(spec, volumes=spec["volumes"] + ["/etc/llmops/secrets/vllm-d0:/run/llmops/secrets:ro"],
                 secret_env={"names": ["VLLM_API_KEY"], "files": {"VLLM_API_KEY": "/etc/llmops/secrets/vllm-d0/VLLM_API_KEY"}})
    assert "/etc/llmops/secrets/vllm-d0" not in preflight_inputs.wanted_paths(meta([keyed]), ["/data/ucm/cache"])


def test_ucm_storage_must_have_room_for_its_posix_capacity():
    yaml_text = "ucm_connectors:\n- ucm_connector_config:\n    storage_backends: /data/ucm/cache\n    posix_capacity_gb: {cap}\n"
    spec = dict(ENGINE, files=dict(ENGINE["files"], **{"/etc/llmops/ucm/ucm.yaml": yaml_text.format(cap=100)}))
    assert preflight_inputs.ucm_storage(meta([spec])) == {"/data/ucm/cache": 100}
    assert "/data/ucm/cache" in preflight_inputs.gather_inputs(meta([spec]), ["/data/ucm/cache"])["paths"]
    facts = good_facts()
    facts["d0"]["facts"]["paths"]["/data/ucm/cache"] = {"exists": False, "free_bytes": 50 << 30}
    row = only(report(facts, specs=[spec], options={"created": ["/data/ucm/cache"]}))
    assert (row["found"], row["needed"]) == ("50 GiB free under /data/ucm/cache", "posix_capacity_gb 100")
    no_gc = dict(ENGINE, files=dict(ENGINE["files"], **{"/etc/llmops/ucm/ucm.yaml": yaml_text.format(cap=0)}))
    assert report(facts, specs=[no_gc], options={"created": ["/data/ucm/cache"]})["rows"] == []
