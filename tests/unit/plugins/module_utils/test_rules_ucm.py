# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""UCM rules, one test per rule: break a seed cluster one way, read the message."""

from __future__ import annotations

import pytest
import seed_clusters as seeds
from rule_cases import single_problem

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster


def test_ucm_unknown_pipeline():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["store_pipeline"] = "Cache|Tape"
    assert "ucm_cache_config.ucm_connectors[0].ucm_connector_config.store_pipeline: unknown pipeline 'Cache|Tape'" in single_problem(cluster)


def test_ucm_storage_backends_set():
    cluster = seeds.ucm_h100()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["storage_backends"] = ""
    assert "storage_backends: no storage backend is set" in single_problem(cluster)


def test_ucm_aio_needs_io_direct():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["posix_io_engine"] = "aio"
    assert "posix_io_engine: aio needs io_direct: true. Fix: set io_direct: true or use psync." in single_problem(cluster)
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["io_direct"] = True
    plan_cluster(cluster)


def test_ucm_nfs_store_needs_event_sync_off():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_name"] = "UcmNfsStore"
    assert "ucm_cache_config.enable_event_sync: UcmNfsStore needs enable_event_sync: false" in single_problem(cluster)


def test_misspelt_ucm_keys_are_refused():
    cluster = seeds.ucm_a2()
    cluster["ucm"]["config"]["ucm_connectors"][0]["ucm_connector_config"]["storage_backend"] = "/data/ucm/cache"
    with pytest.raises(PlanError, match=r"ucm_cache_config.ucm_connectors\[0\].ucm_connector_config.storage_backend: unknown key "
                                        r".*Fix: rename it to storage_backends"):
        plan_cluster(cluster)
