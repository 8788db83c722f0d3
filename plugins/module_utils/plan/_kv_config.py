# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The ``--kv-transfer-config`` JSON of one engine process.

Key order follows the seeds (000 2.3, 004 5.3 and 5.4) so a rendered value can be
read side by side with the guide; the JSON is compact because it travels as one argv item.
"""

from __future__ import annotations

import json
import typing as t

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster, Group

UCM_CONNECTOR = {
    "kv_connector": "UCMConnector",
    "kv_connector_module_path": "ucm.integration.vllm.ucm_connector",
    "kv_role": "kv_both",
}
EXPECTED_KV_ROLE = {"prefill": "kv_producer", "decode": "kv_consumer", "colocated": "kv_both"}


def compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


def _mooncake_child(cluster: Cluster, group: Group, kv_role: str) -> dict[str, t.Any]:
    child: dict[str, t.Any] = {"kv_connector": "MooncakeConnectorV2", "kv_role": kv_role, "kv_port": str(group.kv_port)}
    if cluster.mooncake_extra_config:
        child["kv_connector_extra_config"] = cluster.mooncake_extra_config
    return child


def _store_child(cluster: Cluster, group: Group, kv_role: str, dp_rank: int) -> dict[str, t.Any]:
    if cluster.pool is None or group.lookup_rpc_port_base is None:  # the pool rules refused the plan before this
        raise ValueError("group %s: a pool connector needs the cluster's pool and lookup_rpc_port_base" % group.name)
    extra: dict[str, t.Any] = {"backend": cluster.pool.backend}
    if cluster.pool.backend == "memcache":
        extra["memcache_dp_init_barrier"] = group.memcache_dp_init_barrier
    extra["use_layerwise"] = cluster.pool.use_layerwise
    if kv_role == "kv_consumer":
        extra["consumer_is_to_load"] = group.consumer_is_to_load
        extra["consumer_is_to_put"] = group.consumer_is_to_put
    extra["lookup_rpc_port"] = group.lookup_rpc_port_base + dp_rank
    return {"kv_connector": "AscendStoreConnector", "kv_role": kv_role, "kv_connector_extra_config": extra}


def _nixl(cluster: Cluster, group: Group, engine_id: str | None) -> dict[str, t.Any]:
    """vLLM's NixlConnector: both sides kv_both (vLLM's disaggregated examples); on CPU the KV is
    staged in host memory (kv_buffer_device cpu)."""
    config: dict[str, t.Any] = {"kv_connector": "NixlConnector", "kv_role": group.kv_role or "kv_both"}
    if engine_id is not None:
        config["engine_id"] = engine_id
    if cluster.hardware == "cpu":
        config["kv_buffer_device"] = "cpu"
    if cluster.nixl_extra_config:
        config["kv_connector_extra_config"] = dict(cluster.nixl_extra_config)
    return config


def kv_transfer_config(cluster: Cluster, group: Group, dp_rank: int, engine_id: str | None) -> dict[str, t.Any] | None:
    """Return the config dict for the process whose first DP rank is ``dp_rank``, or None."""
    kv_role = group.kv_role or EXPECTED_KV_ROLE[group.role]
    if cluster.connector == "nixl":
        return _nixl(cluster, group, engine_id)
    if cluster.connector == "ucm":
        config: dict[str, t.Any] = dict(UCM_CONNECTOR)
        config["kv_connector_extra_config"] = {"UCM_CONFIG_FILE": cluster.ucm_config_file}
        return config
    if cluster.connector != "mooncake":
        return None
    if cluster.pool is None:
        config = _mooncake_child(cluster, group, kv_role)
        if engine_id is not None:
            config = dict(config, engine_id=engine_id)
        return config
    # 004 5.4: MultiConnector; children inherit the parent's engine_id.
    config = {"kv_connector": "MultiConnector", "kv_role": kv_role}
    if engine_id is not None:
        config["engine_id"] = engine_id
    config["kv_connector_extra_config"] = {
        "connectors": [_mooncake_child(cluster, group, kv_role), _store_child(cluster, group, kv_role, dp_rank)]
    }
    return config
