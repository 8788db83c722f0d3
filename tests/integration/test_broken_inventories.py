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
        entry = hosts["all"]["children"][cluster]["hosts"].setdefault(host, {})
        entry.update(values)
        for key in [k for k, v in entry.items() if v is DELETE]:
            del entry[key]
    (lab / "hosts.yml").write_text(yaml.safe_dump(hosts, sort_keys=False))
    return lab


DELETE = object()  # a host var removed from the copy


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
     "host pd_pool_a3_prefill: memcache_pool_metrics_port: memcache_meta (9081) overlaps prefill rank 0 API (9081)"),
    ("port-collision-with-proxy", "pd_a2", set_in(["pd_proxy_port"], 12321), None,
     "host pd_a2_p0: pd_proxy_port: pd_proxy (12321) overlaps prefill rank 0 DP RPC (12321)"),
    ("negative-port-meant-as-off", "pd_pool_a2", set_in(["mooncake_master_metrics_port"], -1), None,
     "host pd_pool_a2_p0: mooncake_master_metrics_port: mooncake_master uses port -1 outside 1-65535"),
    ("memcache-protocol-unknown", "pd_pool_a3", set_in(["memcache_pool_protocol"], "sdma"), None,
     "memcache_pool_protocol must be one of: device_sdma, device_rdma, device_urma, device_uboe, host_rdma, host_urma, "
     "host_tcp, host_shm, got: sdma"),
    ("ucm-cache-not-mounted", "ucm_a2", set_in(["ucm_cache_config"], {"ucm_connectors": [{
        "ucm_connector_name": "UcmPipelineStore",
        "ucm_connector_config": {"store_pipeline": "Cache|Posix", "storage_backends": "/data/ucm/cache:/cache/ucm"}}]}), None,
     "storage_backends: /cache/ucm is under no directory mounted into the engine ("),
    ("service-host-unknown", "pd_pool_a2", set_in(["mooncake_master_host"], "192.0.2.99"), None,
     "cluster pd_pool_a2: mooncake_master_host: '192.0.2.99' is neither a host of the cluster nor the address of one. "
     "Fix: name one of pd_pool_a2_p0, pd_pool_a2_p1, pd_pool_a2_d0, pd_pool_a2_d1"),
    ("visible-devices-by-hand", "dp_a2", set_in(["vllm_engine_env", "ASCEND_RT_VISIBLE_DEVICES"], "0,1,2,3"), None,
     "cluster dp_a2, host dp_a2_node0: vllm_engine_env.ASCEND_RT_VISIBLE_DEVICES: ASCEND_RT_VISIBLE_DEVICES=0,1,2,3, but "
     "the plan gives colocated rank 0 devices 0,1,2,3,4,5,6,7"),
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
     "mooncake_master_segment_size.prefill: '1.5GB' is not a whole multiple of 1 GB. Fix: use a 1 GB-aligned size"),
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
    # unknown keys and variables are named, with the closest known name
    ("misspelt-group-key", "pd_a2", set_in(["vllm_engine_groups", "decode", "kv_prot"], 30100), None,
     "cluster pd_a2: vllm_engine_groups.decode.kv_prot: unknown key (known: dp_size, tp_size,"),
    ("misspelt-extra-config", "pd_a2", set_in(["vllm_engine_mooncake_extra_config", "use_ascend_drect"], True), None,
     "vllm_engine_mooncake_extra_config.use_ascend_drect: unknown key (known: prefill, decode, use_ascend_direct). "
     "Fix: rename it to use_ascend_direct."),
    ("sounds-right-variable", "single_a3", set_in(["vllm_engine_tensor_parallel_size"], 16), None,
     "vllm_engine_tensor_parallel_size is no variable of the collection (set on single_a3_node). "
     "Fix: set vllm_engine_groups.<role>.tp_size instead."),
    ("misspelt-variable", "pd_pool_a2", None, {"pd_pool_a2_p0": {"mooncake_master_segment_sizes": {"prefill": "8GB"}}},
     "mooncake_master_segment_sizes is no variable of the collection (set on pd_pool_a2_p0). "
     "Fix: did you mean mooncake_master_segment_size? Otherwise remove it."),
    ("no-ansible-host", "pd_a2", None, {"pd_a2_d1": {"ansible_host": DELETE}},
     "cluster pd_a2, host pd_a2_d1: ansible_host: address 'pd_a2_d1' is not an IP address"),
    ("missing-nic", "dp_a2", None, {"dp_a2_node1": {"vllm_engine_nic": DELETE}},
     "cluster dp_a2, host dp_a2_node1: vllm_engine_nic: GLOO_SOCKET_IFNAME, TP_SOCKET_IFNAME, HCCL_SOCKET_IFNAME need the name"),
    ("same-address-overlapping-devices", "pd_a3", None, {"pd_a3_decode": {"ansible_host": "192.0.2.31"}},
     "host pd_a3_decode: vllm_engine_device_offset: devices 0-15 overlap devices 0-15 of host pd_a3_prefill, which has the "
     "same address 192.0.2.31 (one machine)"),
    ("placeholder-left", "pd_a2", set_in(["vllm_engine_model"], "<YOUR_MODEL_PATH>"), {"pd_a2_p1": {"ansible_host": "<PREFILL_NODE1_IP>"}},
     "ansible_host still holds the guide's placeholder <PREFILL_NODE1_IP> (on pd_a2_p1). Fix: replace it with this "
     "cluster's real value. vllm_engine_model still holds the guide's placeholder <YOUR_MODEL_PATH> (on pd_a2_p0, pd_a2_p1, "
     "pd_a2_d0, pd_a2_d1)."),
    ("profile-for-other-hardware", "single_a3", set_in(["ascend_driver_profile"], "a2"), None,
     "cluster single_a3: ascend_driver_profile a2 is for a2 hardware, but vllm_engine_hardware is a3 (its devices and "
     "mounts do not fit). Fix: leave ascend_driver_profile empty (it follows vllm_engine_hardware) or use one of a3."),
    ("a2-profile-on-h100", "ucm_h100", set_in(["ascend_driver_profile"], "a2_ucm"), None,
     "ascend_driver_profile a2_ucm is for a2 hardware, but vllm_engine_hardware is h100"),
    ("kv-pool-switch-misspelt", "pd_pool_a2", set_in(["llmops_kv_pool_backend"], "mooncak"), None,
     "llmops_kv_pool_backend must be one of: none, mooncake, memcache, got: mooncak"),
    # Mooncake HA
    ("ha-one-master", "pd_pool_a2", set_in(["mooncake_master_ha"], {"hosts": ["pd_pool_a2_p0"], "etcd_endpoints": ["192.0.2.9:2379"]}),
     None, "cluster pd_pool_a2: mooncake_master_ha.hosts: HA needs two or more masters, got only pd_pool_a2_p0. Fix: name a "
     "second host for a standby master"),
    ("ha-even-etcd", "pd_pool_a2", set_in(["mooncake_master_ha"], {"hosts": ["pd_pool_a2_p0", "pd_pool_a2_p1"],
                                                                   "etcd_hosts": ["pd_pool_a2_p0", "pd_pool_a2_p1"]}),
     None, "mooncake_master_ha.etcd_hosts: 2 members: an even count has no better quorum than one member less. Fix: list an "
     "odd number of hosts, three or more"),
    ("ha-etcd-twice", "pd_pool_a2", set_in(["mooncake_master_ha"], {"hosts": ["pd_pool_a2_p0", "pd_pool_a2_p1"],
                                                                    "etcd_endpoints": ["192.0.2.9:2379"],
                                                                    "etcd_hosts": ["pd_pool_a2_p0", "pd_pool_a2_p1", "pd_pool_a2_d0"]}),
     None, "mooncake_master_ha: gives both etcd_endpoints (an etcd you run) and etcd_hosts (members the collection deploys)"),
    ("ha-cluster-id-differs", "pd_pool_a2", set_in(["mooncake_master_ha"], {
        "hosts": ["pd_pool_a2_p0", "pd_pool_a2_p1"], "etcd_endpoints": ["192.0.2.9:2379"], "cluster_id": "pool-a"}),
     {"pd_pool_a2_p0": {"vllm_engine_role_env": {"prefill": {"MC_STORE_CLUSTER_ID": "pool-b"}}},
      "pd_pool_a2_p1": {"vllm_engine_role_env": {"prefill": {"MC_STORE_CLUSTER_ID": "pool-b"}}},
      "pd_pool_a2_d0": {"vllm_engine_role_env": {"prefill": {"MC_STORE_CLUSTER_ID": "pool-b"}}},
      "pd_pool_a2_d1": {"vllm_engine_role_env": {"prefill": {"MC_STORE_CLUSTER_ID": "pool-b"}}}},
     "vllm_engine_role_env.prefill: MC_STORE_CLUSTER_ID is 'pool-b' but the masters run with cluster id 'pool-a'"),
    ("removed-variable", "dp_a2", set_in(["vllm_engine_ready_timeout"], 60), None,
     "vllm_engine_ready_timeout was removed (set on dp_a2_node0, dp_a2_node1). Fix: use container_launch_ready_timeout"),
]


@pytest.mark.parametrize("case,cluster,group_vars,host_vars,message", CASES, ids=[c[0] for c in CASES])
def test_broken_inventory_fails_before_any_host(tmp_path, case, cluster, group_vars, host_vars, message):
    lab = broken_lab(tmp_path, cluster, group_vars, host_vars)
    result = run_playbook(cluster + ".yml", lab, "-i", str(NO_CONNECT), check=False)  # deploy mode
    assert result.returncode != 0, case
    assert message in " ".join(result.output.split()), result.output[-3000:]  # long messages are folded
    assert "TRIPWIRE" not in result.output


@pytest.mark.parametrize("extra,message", [
    ([], "llmops_cluster is not set. Fix: add -e llmops_cluster=<the inventory group of the cluster> (groups with hosts here: "
         "cpu_dp, cpu_pd, dp_a2, pd_2p2d_a2, pd_2p2d_a3, pd_a2, pd_a3, pd_pool_a2, pd_pool_a3, single_a3, single_a5, ucm_a2, ucm_h100)."),
    (["-e", "llmops_cluster=pd_a9"], 'llmops_cluster is "pd_a9", which is no group of this inventory.'),
])
def test_teardown_names_the_cluster_groups_when_the_cluster_is_missing(extra, message):
    result = run_playbook("teardown.yml", LAB, "-i", str(NO_CONNECT), *extra, "-e", "llmops_confirm_teardown=pd_a9", check=False)
    assert result.returncode != 0
    assert message in " ".join(result.output.split())
    assert "TRIPWIRE" not in result.output


def _one_a3_machine(data):
    """1P1D on one 16-NPU A3: prefill DP1/TP8 on NPUs 0-7, decode DP4/TP2 on 8-15, own ports."""
    data["vllm_engine_groups"]["prefill"]["dp_size"] = 1
    data["vllm_engine_groups"]["decode"].update(dp_size=4, api_port=9950, kv_port=40100, dp_rpc_port=12400)


def _third_decode_node(data):
    data["vllm_engine_groups"]["decode"]["dp_size"] = 12
    data["vllm_engine_mooncake_extra_config"]["decode"]["dp_size"] = 12


def _other_port_bases(data):
    data["vllm_engine_groups"]["prefill"].update(api_port=18081, kv_port=41000, dp_rpc_port=13321)
    data["vllm_engine_groups"]["decode"].update(api_port=18900, kv_port=42000, hccl_port_range={"base": 50000, "stride": 50, "size": 50})
    data["pd_proxy_port"] = 18000


@pytest.mark.parametrize("case,cluster,group_vars,host_vars,expect", [
    ("p-and-d-on-one-machine", "pd_a3", _one_a3_machine,
     {"pd_a3_prefill": {"vllm_engine_local_ranks": 1},
      "pd_a3_decode": {"ansible_host": "192.0.2.31", "vllm_engine_local_ranks": 4, "vllm_engine_device_offset": 8}},
     ("pd_a3_decode", "vllm-ascend-decode-dp3", "ASCEND_RT_VISIBLE_DEVICES", "14,15")),
    ("more-decode-nodes", "pd_a2", _third_decode_node,
     {"pd_a2_d2": {"ansible_host": "192.0.2.45", "vllm_engine_nic": "eth0", "vllm_engine_role": "decode",
                   "vllm_engine_local_ranks": 4, "vllm_engine_rank_start": 8}},
     ("pd_a2_d2", "vllm-ascend-decode-dp11", "ASCEND_RT_VISIBLE_DEVICES", "6,7")),
    ("service-host-by-address", "pd_pool_a2", set_in(["mooncake_master_host"], "192.0.2.62"), None,
     ("pd_pool_a2_p1", "mooncake-master", None, None)),
    ("other-port-bases", "pd_a2", _other_port_bases, None,
     ("pd_a2_d1", "vllm-ascend-decode-dp7", "HCCL_HOST_SOCKET_PORT_RANGE", "50350-50399")),
], ids=lambda v: v if isinstance(v, str) else "")
def test_valid_variants_keep_planning(tmp_path, case, cluster, group_vars, host_vars, expect):
    """Valid inventories that differ from the lab's keep planning."""
    lab = broken_lab(tmp_path, cluster, group_vars, host_vars)
    plan_dir = tmp_path / "plan"
    result = run_playbook(cluster + ".yml", lab, "-i", str(NO_CONNECT), "-e", "llmops_plan_dir=%s" % plan_dir, check=False)
    assert result.returncode == 0, (case, result.output[-3000:])
    host, name, variable, value = expect
    spec = yaml.safe_load((plan_dir / host / (name + ".json")).read_text())
    if variable is not None:
        assert spec["env"][variable] == value


def test_playbook_refuses_an_inventory_of_another_kind():
    result = run_playbook("pd_a2.yml", LAB, "-i", str(NO_CONNECT), "-e", "llmops_cluster=pd_pool_a2", check=False)
    assert result.returncode != 0
    assert ("cluster pd_pool_a2: this playbook deploys hardware a2, connector mooncake, KV pool none; the inventory has "
            "vllm_engine_hardware a2, vllm_engine_connector mooncake, llmops_kv_pool_backend mooncake.") in " ".join(result.output.split())
    assert "TRIPWIRE" not in result.output


def test_two_playbooks_in_one_run_plan_twice(tmp_path):
    """A site playbook importing a seed playbook and then another verb: the second plan finds the first
    one's facts (_vllm_engine_plan, _llmops_cluster_specs, ...) in hostvars; they are no inventory variables."""
    result = run_playbook(["pd_a2.yml", "pd_a2.yml"], LAB, "-i", str(NO_CONNECT), "-e", "llmops_plan_dir=%s" % (tmp_path / "plan"),
                          check=False)
    assert result.returncode == 0 and result.output.count("cluster pd_a2: plan mode") == 2, result.output[-3000:]
