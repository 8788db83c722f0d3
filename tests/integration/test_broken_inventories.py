# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Broken copies of the lab inventory: each rule fails the real playbook, in deploy mode, with
the planner's message, before any host is reached (the hosts use the tripwire connection)."""

from __future__ import annotations

import shutil

import pytest
import yaml

from conftest import LAB, NO_CONNECT, run_playbook


def broken_lab(tmp_path, cluster, group_vars=None, host_vars=None):
    """A copy of inventories/lab with cluster's group vars edited and some host vars set."""
    lab = tmp_path / "lab"
    shutil.copytree(LAB, lab)
    path = lab / "group_vars" / (cluster + ".yml")
    data = yaml.safe_load(path.read_text())
    if group_vars:
        group_vars(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    hosts = yaml.safe_load((lab / "hosts.yml").read_text())
    for host, values in (host_vars or {}).items():
        hosts["all"]["children"][cluster]["hosts"][host].update(values)
    (lab / "hosts.yml").write_text(yaml.safe_dump(hosts, sort_keys=False))
    return lab


def set_in(path, value):
    def edit(data):
        node = data
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


CASES = [
    ("duplicate-rank", "pd_a2", None, {"pd_a2_d1": {"vllm_engine_rank_start": 3}},
     "cluster pd_a2, host pd_a2_d1, rank 3: vllm_engine_rank_start: rank 3 is already run by host pd_a2_d0"),
    ("ranks-exceed-devices", "single_a3", set_in(["vllm_engine_groups", "colocated", "tp_size"], 32), None,
     "host single_a3_node: vllm_engine_local_ranks: 1 local ranks x tp_size 32 from device 0 need 32 devices, the node has 16"),
    ("wrong-dp-address", "dp_a2", set_in(["vllm_engine_groups", "colocated", "dp_address"], "192.0.2.22"), None,
     "vllm_engine_groups.colocated.dp_address: 192.0.2.22 is not the address 192.0.2.21 of the DP master dp_a2_node0"),
    ("headless-master", "dp_a2", None, {"dp_a2_node0": {"vllm_engine_headless": True, "vllm_engine_api_server_count": None}},
     "host dp_a2_node0, rank 0: vllm_engine_headless: the DP master (rank 0) of role colocated must serve the API"),
    ("port-collision-with-pool-service", "pd_pool_a3", set_in(["memcache_pool_metrics_port"], 9081), None,
     "host pd_pool_a3_prefill: memcache_meta port: memcache_meta (9081) overlaps prefill rank 0 API (9081)"),
    ("port-collision-with-proxy", "pd_a2", set_in(["pd_proxy_port"], 12321), None,
     "host pd_a2_p0: pd_proxy port: pd_proxy (12321) overlaps prefill rank 0 DP RPC (12321)"),
    ("declared-topology", "pd_a2", set_in(["vllm_engine_mooncake_extra_config", "decode", "dp_size"], 4), None,
     "vllm_engine_mooncake_extra_config.decode: declares {'dp_size': 4, 'tp_size': 2} but the decode group is"),
    ("kv-port-in-ascend-direct-range", "pd_a3", set_in(["vllm_engine_groups", "prefill", "kv_port"], 30000), None,
     "vllm_engine_groups.prefill.kv_port: ports 30000-30017 overlap AscendDirectTransport's random range [20000, 36000)"),
    ("kv-role", "pd_a3", set_in(["vllm_engine_groups", "decode", "kv_role"], "kv_producer"), None,
     "vllm_engine_groups.decode.kv_role: decode ranks must be kv_consumer, got kv_producer"),
    ("duplicate-engine-id", "pd_pool_a2", set_in(["vllm_engine_groups", "decode", "engine_id_template"], "glm53-flash-prefill-dp{dp_rank}"),
     None, "engine_id glm53-flash-prefill-dp0 is also used by"),
    ("pythonhashseed-differs", "pd_pool_a2", None, {"pd_pool_a2_d1": {"vllm_engine_pythonhashseed": "1"}},
     "host pd_pool_a2_d1: vllm_engine_pythonhashseed: PYTHONHASHSEED is '1' here but '0'"),
    ("tenant-differs", "pd_pool_a2", None, {"pd_pool_a2_p1": {"mooncake_master_tenant_id": "team-b"}},
     "mooncake_master_tenant_id differs between hosts ('default' on pd_pool_a2_p0, pd_pool_a2_d0, pd_pool_a2_d1; "
     "'team-b' on pd_pool_a2_p1). Fix: set it once for the cluster"),
    # any cluster-wide setting, not only the ones the planner compares
    ("image-differs", "pd_a2", None, {"pd_a2_d1": {"vllm_engine_image": "other:tag"}},
     "vllm_engine_image differs between hosts ("),
    ("segment-not-gb-aligned", "pd_pool_a2", set_in(["mooncake_master_segment_size", "prefill"], "1.5GB"), None,
     "mooncake_master_segment_size.prefill: '1.5GB' is not a whole number of GB"),
    ("world-size-too-small", "pd_pool_a3", set_in(["memcache_pool_world_size"], 16), None,
     "memcache_pool_world_size: world_size 16 does not cover the 32 workers"),
    ("layerwise-hybrid", "pd_pool_a3", set_in(["vllm_engine_kv_pool_use_layerwise"], True), None,
     "vllm_engine_kv_pool_use_layerwise: a hybrid model has groups that cannot be prefix-cached"),
    ("ucm-aio-without-io-direct", "ucm_a2", set_in(["ucm_cache_config"], {
        "ucm_connectors": [{"ucm_connector_name": "UcmPipelineStore", "ucm_connector_config": {
            "store_pipeline": "Cache|Posix", "storage_backends": "/data/ucm/cache", "posix_io_engine": "aio"}}]}), None,
     "posix_io_engine: aio needs io_direct: true"),
    ("ucm-unknown-pipeline", "ucm_h100", set_in(["ucm_cache_config"], {
        "ucm_connectors": [{"ucm_connector_name": "UcmPipelineStore", "ucm_connector_config": {
            "store_pipeline": "Cache|Tape", "storage_backends": "/data/ucm/cache"}}]}), None,
     "store_pipeline: unknown pipeline 'Cache|Tape'"),
    ("no-image", "single_a5", set_in(["vllm_engine_image"], ""), None,
     "cluster single_a5: vllm_engine_image ('') and vllm_engine_model ('Eco-Tech/GLM-5.3-Flash-w8a8-mxfp8') must both be set"),
    ("malformed-size", "pd_a2", set_in(["vllm_engine_groups", "decode", "tp_size"], "two"), None,
     "The cluster description is malformed: vllm_engine_groups.decode: tp_size must be int"),
]


@pytest.mark.parametrize("case,cluster,group_vars,host_vars,message", CASES, ids=[c[0] for c in CASES])
def test_broken_inventory_fails_before_any_host(tmp_path, case, cluster, group_vars, host_vars, message):
    lab = broken_lab(tmp_path, cluster, group_vars, host_vars)
    result = run_playbook(cluster + ".yml", lab, "-i", str(NO_CONNECT), check=False)  # deploy mode
    assert result.returncode != 0, case
    assert message in result.output, result.output[-3000:]
    assert "TRIPWIRE" not in result.output


def test_playbook_refuses_an_inventory_of_another_kind():
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode != 0
    assert ("cluster pd_pool_a2: this playbook deploys hardware a2, connector mooncake, KV pool none; the inventory has "
            "vllm_engine_hardware a2, vllm_engine_connector mooncake, llmops_kv_pool_backend mooncake.") in " ".join(result.output.split())
    assert "TRIPWIRE" not in result.output
