# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""UCM rules: the store, its pipeline and I/O engine, storage backends, and misspelt keys of its YAML."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster, unknown_keys

UCM_STORES = ("UcmPipelineStore", "UcmNfsStore")


UCM_PIPELINES = (
    "Cache|Posix", "Cache|Compress|Posix", "Cache|Empty", "Cache|Fake", "Empty", "Fake",
    "Mooncake", "Mooncake|Posix", "Dram",
)


UCM_IO_ENGINES = ("psync", "aio")


# UCM's YAML keys (as its loader reads them): newer versions add keys, so only near-misses of these are refused.
UCM_TOP_KEYS = ("ucm_connectors", "enable_event_sync", "use_layerwise", "enable_record_traces", "use_lite",
                "persist_token_threshold", "enable_metrics", "metrics_config_path", "hit_ratio", "timeout_ms")


UCM_CONNECTOR_KEYS = ("ucm_connector_name", "ucm_connector_config")


UCM_STORE_KEYS = ("store_pipeline", "storage_backends", "io_direct", "posix_io_engine", "cache_buffer_capacity_gb",
                  "posix_capacity_gb", "posix_gc_trigger_threshold_ratio", "use_gdr")


def ucm_problems(cluster: Cluster) -> list[Problem]:
    if cluster.connector != "ucm":
        return []
    c = cluster.name
    problems = []
    if not cluster.ucm_config_file:
        problems.append(Problem(c, "ucm_cache_config_file", "UCMConnector needs UCM_CONFIG_FILE", "set ucm_cache_config_file"))
    for role in cluster.roles:
        if role != "colocated":
            problems.append(Problem(c, "vllm_engine_groups.%s" % role, "UCMConnector runs kv_both on colocated engines",
                                    "use role colocated with the ucm connector"))
    config = cluster.ucm_config or {}
    connectors = config.get("ucm_connectors")
    if not isinstance(connectors, list) or not connectors or not isinstance(connectors[0], dict):
        return problems + [Problem(c, "ucm_cache_config.ucm_connectors", "needs one store", "list one ucm_connector_name with its config")]
    store = connectors[0]
    name = store.get("ucm_connector_name")
    if name not in UCM_STORES:
        problems.append(Problem(c, "ucm_cache_config.ucm_connectors[0].ucm_connector_name", "unknown store %r" % name,
                                "use one of %s" % ", ".join(UCM_STORES)))
    if name == "UcmNfsStore" and config.get("enable_event_sync", True):
        problems.append(Problem(c, "ucm_cache_config.enable_event_sync", "UcmNfsStore needs enable_event_sync: false", "set it to false"))
    store_config = store.get("ucm_connector_config") or {}
    var = "ucm_cache_config.ucm_connectors[0].ucm_connector_config"
    if name == "UcmPipelineStore" and store_config.get("store_pipeline") not in UCM_PIPELINES:
        problems.append(Problem(c, var + ".store_pipeline", "unknown pipeline %r" % store_config.get("store_pipeline"),
                                "use Cache|Posix for production (known: %s)" % ", ".join(UCM_PIPELINES)))
    if not store_config.get("storage_backends"):
        problems.append(Problem(c, var + ".storage_backends", "no storage backend is set",
                                "set the cache directory, several joined with ':'"))
    engine = store_config.get("posix_io_engine", "psync")
    if engine not in UCM_IO_ENGINES:
        problems.append(Problem(c, var + ".posix_io_engine", "unknown engine %r" % engine, "use psync or aio"))
    if engine == "aio" and store_config.get("io_direct") is not True:
        problems.append(Problem(c, var + ".posix_io_engine", "aio needs io_direct: true", "set io_direct: true or use psync"))
    return problems


def ucm_config_unknown(cluster: Cluster) -> list[Problem]:
    """Misspelt keys of the UCM YAML (ucm_cache_config): UCM ignores what it does not read."""
    if cluster.connector != "ucm" or not isinstance(cluster.ucm_config, dict):
        return []
    config = cluster.ucm_config
    found = unknown_keys(config, UCM_TOP_KEYS, "ucm_cache_config", strict=False)
    connectors = config.get("ucm_connectors")
    if isinstance(connectors, list) and connectors and isinstance(connectors[0], dict):
        where = "ucm_cache_config.ucm_connectors[0]"
        found += unknown_keys(connectors[0], UCM_CONNECTOR_KEYS, where)
        store = connectors[0].get("ucm_connector_config")
        if isinstance(store, dict):
            found += unknown_keys(store, UCM_STORE_KEYS, where + ".ucm_connector_config", strict=False)
    return [Problem(cluster.name, variable, message, fix) for variable, message, fix in found]
