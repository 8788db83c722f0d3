# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plan mode over inventories/lab, compared with the seeds flag by flag.

The expected commands are the seeds' own lines (seed_text.py) expanded like bash with the lab's
addresses; env, mounts and docker settings are transcribed from the seeds' exports and docker runs.
Flag order is not compared (vLLM does not care); every flag, value, JSON field and variable is.
"""

from __future__ import annotations

import json

import argv_meta
import pytest
import seed_text as seed
import yaml
from conftest import CLUSTERS

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch

A2_DEVICES = ["/dev/davinci%d" % i for i in range(8)] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
A3_DEVICES = ["/dev/davinci%d" % i for i in range(16)] + ["/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]
A5_DEVICES = ["/dev/davinci%d" % i for i in range(8)] + ["/dev/davinci_manager", "/dev/hisi_hdc", "/dev/ummu", "/dev/uburma"]
# 004 4.1 docker runs (A2, A3, 950DT) and 000 2.1 (A2 with UCM).
A2_VOLUMES = ["/usr/local/Ascend/driver:/usr/local/Ascend/driver", "/usr/local/Ascend/firmware:/usr/local/Ascend/firmware",
              "/usr/local/sbin/npu-smi:/usr/local/sbin/npu-smi", "/usr/local/sbin:/usr/local/sbin",
              "/etc/hccn.conf:/etc/hccn.conf:ro", "/root/.cache:/root/.cache"]
A3_VOLUMES = ["/usr/local/dcmi:/usr/local/dcmi",
              "/usr/local/Ascend/driver/tools/hccn_tool:/usr/local/Ascend/driver/tools/hccn_tool",
              "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi", "/usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/",
              "/usr/local/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info",
              "/etc/ascend_install.info:/etc/ascend_install.info", "/etc/hccn.conf:/etc/hccn.conf:ro", "/root/.cache:/root/.cache"]
A5_VOLUMES = ["/usr/local/Ascend/driver:/usr/local/Ascend/driver", "/etc/ascend_install.info:/etc/ascend_install.info",
              "/etc/hccl_rootinfo.json:/etc/hccl_rootinfo.json", "/etc/hixlep/:/etc/hixlep/", "/root/.cache:/root/.cache",
              "/usr/local/sbin:/usr/local/sbin", "/usr/local/dcmi:/usr/local/dcmi", "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi",
              "/usr/bin/urma_admin:/usr/bin/urma_admin", "/lib/route.conf:/lib/route.conf"]
A2_UCM_VOLUMES = ["/usr/local/dcmi:/usr/local/dcmi:ro",
                  "/usr/local/Ascend/driver/tools/hccn_tool:/usr/local/Ascend/driver/tools/hccn_tool:ro",
                  "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi:ro", "/usr/local/Ascend/driver:/usr/local/Ascend/driver:ro",
                  "/etc/ascend_install.info:/etc/ascend_install.info:ro", "/etc/hccn.conf:/etc/hccn.conf:ro"]
# How the rendered config files reach the containers (the seeds write them inside by hand).
UCM_CONFIG_MOUNT = "/etc/llmops/ucm/ucm_config_example.yaml:/workspace/ucm_config_example.yaml:ro"
MOONCAKE_MOUNT = "/etc/llmops/mooncake:/etc/llmops/mooncake:ro"
MEMCACHE_MOUNT = "/etc/llmops/memcache:/etc/llmops/memcache:ro"

PD_NET = {"GLOO_SOCKET_IFNAME": "eth0", "TP_SOCKET_IFNAME": "eth0", "HCCL_SOCKET_IFNAME": "eth0"}
A2_TIMEOUTS = {"VLLM_EXECUTE_MODEL_TIMEOUT_SECONDS": "3000", "HCCL_EXEC_TIMEOUT": "3600", "HCCL_CONNECT_TIMEOUT": "1200",
               "VLLM_RPC_TIMEOUT": "3600000"}
A3_HCCS = {"ASCEND_GLOBAL_RESOURCE_CONFIG": '{"comm_resource_config.protocol_desc":["hccs:device"]}',
           "ASCEND_LOCAL_COMM_RES": '{"version":"1.2"}'}
MEMCACHE_ENV = {"PYTHONHASHSEED": "0", "MMC_LOCAL_CONFIG_PATH": "/etc/llmops/memcache/mmc-local.conf",
                "LD_LIBRARY_PATH": "/usr/local/python3.11.13/lib/python3.11/site-packages/memcache_hybrid/lib:/usr/local/python3.11.13/lib",
                "ACL_OP_INIT_MODE": "1", "ASCEND_ENABLE_USE_FABRIC_MEM": "1"}
MOONCAKE_ENV = {"PYTHONHASHSEED": "0", "MOONCAKE_CONFIG_PATH": "/etc/llmops/mooncake/mooncake.json"}
MODEL_004 = "/root/.cache/GLM-5.3-Flash-w8a8"


def assert_same_command(spec, expected_argv):
    assert seed.flags(spec["command"]) == seed.flags(expected_argv), spec["name"]


def assert_docker(spec, devices, volumes, privileged=False, shm_size=None, ipc_mode=None, gpus=None):
    assert (spec["devices"], spec["volumes"], spec["privileged"], spec["shm_size"], spec["ipc_mode"], spec["gpus"]) == (
        devices, volumes, privileged, shm_size, ipc_mode, gpus), spec["name"]
    assert spec["network_mode"] == "host"


def launcher(template, devices, port, dp_size, rank, dp_address, rpc_port, tp, **more):
    """launch_online_dp.py's $1..$7 for one local rank, then the template expanded."""
    positional = {"1": devices, "2": str(port), "3": str(dp_size), "4": str(rank), "5": dp_address, "6": str(rpc_port), "7": str(tp)}
    return seed.expand(template, MODEL_PATH=MODEL_004, **positional, **more)


def devices_of(local_index, tp):
    return ",".join(str(d) for d in range(local_index * tp, (local_index + 1) * tp))


def test_every_playbook_names_exactly_the_seed_containers(lab_plans):
    names = {cluster: sorted(plan.specs()) for cluster, plan in lab_plans.items()}
    assert names["ucm_a2"] == [("ucm_a2_node", "glm47-ucm")]
    assert names["ucm_h100"] == [("ucm_h100_node", "glm47-ucm-h100")]
    assert names["dp_a2"] == [("dp_a2_node0", "vllm-ascend"), ("dp_a2_node1", "vllm-ascend")]
    assert len(names["pd_a2"]) == 2 + 8 + 1 and ("pd_a2_p0", "pd-proxy") in names["pd_a2"]
    assert len(names["pd_pool_a3"]) == 2 + 8 + 1 + 1 and ("pd_pool_a3_prefill", "memcache-meta") in names["pd_pool_a3"]
    assert ("pd_pool_a2_p0", "mooncake-master") in names["pd_pool_a2"]


@pytest.mark.parametrize("cluster,text,model,volumes,env", [
    ("ucm_a2", seed.UCM_A2, "/data/weights/GLM-4.7-W8A8-floatmtp",
     A2_UCM_VOLUMES + ["/data/weights/GLM-4.7-W8A8-floatmtp:/data/weights/GLM-4.7-W8A8-floatmtp:ro", "/data/ucm:/data/ucm", UCM_CONFIG_MOUNT],
     {"ASCEND_RT_VISIBLE_DEVICES": "0,1,2,3,4,5,6,7", "ENABLE_UCM_PATCH": "1", "UCM_LOG_PATH": "/data/ucm/log",
      "VLLM_CPU_AFFINITY": "1", "HCCL_BUFFSIZE": "512", "OMP_PROC_BIND": "false", "OMP_NUM_THREADS": "1",
      "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True", "HCCL_OP_EXPANSION_MODE": "AIV",
      "VLLM_ASCEND_BALANCE_SCHEDULING": "1", "VLLM_ASCEND_ENABLE_TOPK_OPTIMIZE": "1"}),
    ("ucm_h100", seed.UCM_H100, "/data/weights/GLM-4.7-FP8",
     ["/data/weights/GLM-4.7-FP8:/data/weights/GLM-4.7-FP8:ro", "/data/ucm:/data/ucm", UCM_CONFIG_MOUNT],
     {"ENABLE_UCM_PATCH": "1", "UCM_LOG_PATH": "/data/ucm/log"}),
])
def test_000_ucm_routes(lab_plans, cluster, text, model, volumes, env):
    (_where, spec), = lab_plans[cluster].specs().items()
    assert_same_command(spec, seed.expand(text, MODEL_PATH=model))
    assert spec["env"] == env
    if cluster == "ucm_a2":
        assert_docker(spec, A2_DEVICES, volumes, ipc_mode="host")
    else:
        assert_docker(spec, [], volumes, ipc_mode="host", gpus=[str(i) for i in range(8)])
    ((path, content),) = spec["files"].items()
    assert path == "/etc/llmops/ucm/ucm_config_example.yaml"
    assert yaml.safe_load(content) == yaml.safe_load(seed.UCM_YAML)
    assert spec["ready"] == {"http": "http://%s:7800/v1/models" % {"ucm_a2": "192.0.2.10", "ucm_h100": "192.0.2.11"}[cluster]}


@pytest.mark.parametrize("cluster,text,env,devices,volumes,shm", [
    ("single_a5", seed.SINGLE_A5, {"VLLM_USE_V2_MODEL_RUNNER": "0", "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
                                   "HCCL_BUFFSIZE": "1024"}, A5_DEVICES, A5_VOLUMES, "1g"),
    ("single_a3", seed.SINGLE_A3, {"VLLM_USE_V2_MODEL_RUNNER": "0", "PYTORCH_NPU_ALLOC_CONF": "expandable_segments:True",
                                   "HCCL_OP_EXPANSION_MODE": "AIV", "HCCL_BUFFSIZE": "1024"}, A3_DEVICES, A3_VOLUMES, "100g"),
])
def test_004_5_1_single_node(lab_plans, cluster, text, env, devices, volumes, shm):
    ((_key, spec),) = lab_plans[cluster].specs().items()
    assert_same_command(spec, seed.expand(text))
    assert spec["env"] == env
    assert_docker(spec, devices, volumes, shm_size=shm)
    assert spec["files"] == {}


def test_004_5_2_dp_over_two_a2_nodes(lab_plans):
    plan = lab_plans["dp_a2"]
    for host, text, ip in (("dp_a2_node0", seed.DP_A2_NODE0, "192.0.2.21"), ("dp_a2_node1", seed.DP_A2_NODE1, "192.0.2.22")):
        spec = plan.spec(host, "vllm-ascend")
        # the seed's /path/to/GLM-5.3-Flash-w8a8 is a placeholder in no mounted directory: the lab serves MODEL_004
        argv = [MODEL_004 if word == "/path/to/GLM-5.3-Flash-w8a8" else word for word in seed.expand(text, node0_ip="192.0.2.21")]
        assert_same_command(spec, argv)
        assert spec["env"] == dict(PD_NET, HCCL_IF_IP=ip, VLLM_USE_V2_MODEL_RUNNER="0", HCCL_OP_EXPANSION_MODE="AIV",
                                   PYTORCH_NPU_ALLOC_CONF="expandable_segments:True", HCCL_BUFFSIZE="1024",
                                   ASCEND_RT_VISIBLE_DEVICES="0,1,2,3,4,5,6,7", **A2_TIMEOUTS)
        assert_docker(spec, A2_DEVICES, A2_VOLUMES, privileged=True, shm_size="500g")
    assert plan.spec("dp_a2_node0", "vllm-ascend")["ready"] == {"http": "http://192.0.2.21:8000/v1/models"}
    assert "log" in plan.spec("dp_a2_node1", "vllm-ascend")["ready"]  # headless: no API to probe


def _pd_a3_expectations(cluster, prefill_host, decode_host, p_ip, d_ip, pool):
    """(host, container, argv, env) of every engine in a 5.3 / 5.4 A3 cluster."""
    rows = []
    for role, host, ip, dp, tp, port0, text, kv_text in (
            ("prefill", prefill_host, p_ip, 2, 8, 9081, seed.PD_A3_P, seed.POOL_A3_P),
            ("decode", decode_host, d_ip, 8, 2, 9900, seed.PD_A3_D, seed.POOL_A3_D)):
        for rank in range(dp):
            argv = launcher(text, devices_of(rank, tp), port0 + rank, dp, rank, ip, 12325, tp)
            env = dict(A3_HCCS, **PD_NET, HCCL_IF_IP=ip, PYTORCH_NPU_ALLOC_CONF="expandable_segments:True",
                       VLLM_USE_V2_MODEL_RUNNER="0", HCCL_OP_EXPANSION_MODE="AIV", HCCL_BUFFSIZE="1024",
                       ASCEND_RT_VISIBLE_DEVICES=devices_of(rank, tp))
            if pool:
                # 5.4: add --enable-prefix-caching, replace the kv-transfer-config, add the pool env.
                (kv,) = seed.expand(kv_text, **{"4": str(rank)})
                argv = seed.replace_flag(argv, "--kv-transfer-config", kv) + ["--enable-prefix-caching"]
                env.update(MEMCACHE_ENV)
            rows.append((host, "vllm-ascend-%s-dp%d" % (role, rank), argv, env))
    return rows


@pytest.mark.parametrize("cluster,pool", [("pd_a3", False), ("pd_pool_a3", True)])
def test_004_5_3_and_5_4_a3(lab_plans, cluster, pool):
    prefix = "pd_pool_a3" if pool else "pd_a3"
    p_ip, d_ip = ("192.0.2.51", "192.0.2.52") if pool else ("192.0.2.31", "192.0.2.32")
    plan = lab_plans[cluster]
    for host, name, argv, env in _pd_a3_expectations(cluster, prefix + "_prefill", prefix + "_decode", p_ip, d_ip, pool):
        spec = plan.spec(host, name)
        assert_same_command(spec, argv)
        assert spec["env"] == env, name
        assert_docker(spec, A3_DEVICES, A3_VOLUMES + ([MEMCACHE_MOUNT] if pool else []), shm_size="100g")
    proxy = plan.spec(prefix + "_prefill", "pd-proxy")
    # 004 5.3 A3 proxy script: P_N=2 from 9081, D_N=8 from 9900. It runs through the front door's launcher, which
    # hands the upstream script its own argv unchanged.
    assert proxy["command"][:2] == ["python", "/etc/llmops/pd_proxy/front_door.py"]
    assert ["python", proxy["env"]["LLMOPS_FRONT_DOOR_UPSTREAM"]] + proxy["command"][2:] == [
        "python", "/vllm-workspace/vllm-ascend/examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py",
        "--host", "0.0.0.0", "--port", "8081", "--prefiller-hosts", p_ip, p_ip, "--prefiller-ports", "9081", "9082",
        "--decoder-hosts"] + [d_ip] * 8 + ["--decoder-ports"] + [str(p) for p in range(9900, 9908)]
    assert_start_order(plan, pool)


def test_004_5_4_a3_memcache_service_and_configs(lab_plans):
    plan = lab_plans["pd_pool_a3"]
    meta = plan.spec("pd_pool_a3_prefill", "memcache-meta")
    assert meta["command"] == seed.expand(seed.META_SERVICE)
    assert meta["env"] == {"LD_LIBRARY_PATH": MEMCACHE_ENV["LD_LIBRARY_PATH"], "MMC_META_CONFIG_PATH": "/etc/llmops/memcache/mmc-meta.conf"}
    assert meta["files"] == {"/etc/llmops/memcache/mmc-meta.conf": (
        "ock.mmc.meta_service_url = tcp://192.0.2.51:5000\n"
        "ock.mmc.meta_service.config_store_url = tcp://192.0.2.51:6000\n"
        "ock.mmc.meta_service.metrics_url = http://192.0.2.51:8000\n"
        "ock.mmc.log_level = info\n")}
    assert meta["wave"] == 0 and meta["ready"] == {"http": "http://192.0.2.51:8000/health"}
    local = (
        "ock.mmc.meta_service_url = tcp://192.0.2.51:5000\n"
        "ock.mmc.local_service.config_store_url = tcp://192.0.2.51:6000\n"
        "ock.mmc.log_level = info\n"
        "ock.mmc.local_service.world_size = 256\n"
        "ock.mmc.local_service.protocol = device_sdma\n"
        "ock.mmc.local_service.dram.size = 20GB\n"
        "ock.mmc.local_service.max.dram.size = 1024GB\n"
        "ock.mmc.local_service.storage.enabled = false\n")
    for host, name in (("pd_pool_a3_prefill", "vllm-ascend-prefill-dp1"), ("pd_pool_a3_decode", "vllm-ascend-decode-dp7")):
        assert plan.spec(host, name)["files"] == {"/etc/llmops/memcache/mmc-local.conf": local}


def _pd_a2_expectations(prefix, base_ip, pool):
    p0, p1, d0, d1 = ("192.0.2.%d" % (base_ip + i) for i in range(4))
    rows = []
    for host, ip, rank, port, role_args in (("p0", p0, 0, 9081, "--api-server-count 1"), ("p1", p1, 1, 9082, "--headless")):
        argv = launcher(seed.PD_A2_P, "0,1,2,3,4,5,6,7", port, 2, rank, p0, 12321, 8, SERVER_ROLE_ARGS=role_args)
        env = dict(PD_NET, **A2_TIMEOUTS, HCCL_IF_IP=ip, VLLM_HOST_IP=ip, PYTORCH_NPU_ALLOC_CONF="expandable_segments:True",
                   VLLM_USE_V2_MODEL_RUNNER="0", HCCL_OP_EXPANSION_MODE="AIV", HCCL_BUFFSIZE="1024", OMP_PROC_BIND="false",
                   OMP_NUM_THREADS="10", ASCEND_RT_VISIBLE_DEVICES="0,1,2,3,4,5,6,7")
        if pool:
            (kv,) = seed.expand(seed.POOL_A2_P, **{"4": str(rank)})
            argv = seed.replace_flag(argv, "--kv-transfer-config", kv)
            env.update(MOONCAKE_ENV)
        rows.append(("%s_%s" % (prefix, host), "vllm-ascend-prefill-dp%d" % rank, argv, env))
    for host, ip, first in (("d0", d0, 0), ("d1", d1, 4)):
        for local in range(4):
            rank = first + local
            argv = launcher(seed.PD_A2_D, devices_of(local, 2), 9900 + local, 8, rank, d0, 12325, 2)
            ports = "%d-%d" % (60000 + rank * 100, 60099 + rank * 100)
            env = dict(PD_NET, **A2_TIMEOUTS, HCCL_IF_IP=ip, VLLM_HOST_IP=ip,
                       PYTORCH_NPU_ALLOC_CONF="expandable_segments:True,pin_memory_expandable_segments:True",
                       VLLM_USE_V2_MODEL_RUNNER="0", HCCL_OP_EXPANSION_MODE="AIV", HCCL_BUFFSIZE="1024", OMP_PROC_BIND="false",
                       OMP_NUM_THREADS="10", HCCL_HOST_SOCKET_PORT_RANGE=ports, HCCL_NPU_SOCKET_PORT_RANGE=ports,
                       ASCEND_RT_VISIBLE_DEVICES=devices_of(local, 2))
            if pool:
                (kv,) = seed.expand(seed.POOL_A2_D, **{"4": str(rank)})
                argv = seed.replace_flag(argv, "--kv-transfer-config", kv)
                env.update(MOONCAKE_ENV)
            rows.append(("%s_%s" % (prefix, host), "vllm-ascend-decode-dp%d" % rank, argv, env))
    return rows


@pytest.mark.parametrize("cluster,base_ip,pool", [("pd_a2", 41, False), ("pd_pool_a2", 61, True)])
def test_004_5_3_and_5_4_a2(lab_plans, cluster, base_ip, pool):
    plan = lab_plans[cluster]
    for host, name, argv, env in _pd_a2_expectations(cluster, base_ip, pool):
        spec = plan.spec(host, name)
        assert_same_command(spec, argv)
        assert spec["env"] == env, name
        assert_docker(spec, A2_DEVICES, A2_VOLUMES + ([MOONCAKE_MOUNT] if pool else []), privileged=True, shm_size="500g")
    p0, d0, d1 = "192.0.2.%d" % base_ip, "192.0.2.%d" % (base_ip + 2), "192.0.2.%d" % (base_ip + 3)
    # 004 5.3 A2 proxy line: one prefiller (P0:9081), D0 and D1 ports 9900-9903 each.
    assert plan.spec(cluster + "_p0", "pd-proxy")["command"][2:] == [
        "--host", "0.0.0.0", "--port", "8081", "--prefiller-hosts", p0, "--prefiller-ports", "9081",
        "--decoder-hosts", d0, d0, d0, d0, d1, d1, d1, d1, "--decoder-ports", "9900", "9901", "9902", "9903",
        "9900", "9901", "9902", "9903"]


def test_004_5_4_a2_mooncake_master_and_json(lab_plans):
    plan = lab_plans["pd_pool_a2"]
    master = plan.spec("pd_pool_a2_p0", "mooncake-master")
    assert master["command"] == seed.expand(seed.MOONCAKE_MASTER)
    assert (master["wave"], master["ready"]) == (0, {"http": "http://192.0.2.61:9003/metrics"})
    seed_json = {"metadata_server": "P2PHANDSHAKE", "protocol": "ascend", "device_name": "",
                 "master_server_address": "192.0.2.61:50088", "global_segment_size": "8GB", "preferred_segment": True,
                 "prefer_alloc_in_same_node": True, "enable_ssd_offload": False, "tenant_id": "default"}
    for host, name, segment in (("pd_pool_a2_p1", "vllm-ascend-prefill-dp1", "8GB"), ("pd_pool_a2_d0", "vllm-ascend-decode-dp2", "0")):
        files = plan.spec(host, name)["files"]
        assert list(files) == ["/etc/llmops/mooncake/mooncake.json"]
        assert json.loads(files["/etc/llmops/mooncake/mooncake.json"]) == dict(seed_json, global_segment_size=segment)


def assert_start_order(plan, pool):
    """004 5.3: "各组的第一个节点、其余节点、代理": both groups start together, the proxy after them.
    004 5.4: "pool service, decode, prefill, proxy", each ready before the next starts."""
    waves = {name: spec["wave"] for (_h, name), spec in plan.specs().items()}
    engines = {name: wave for name, wave in waves.items() if name.startswith("vllm-ascend-")}
    decode = {wave for name, wave in engines.items() if "-decode-" in name}
    prefill = {wave for name, wave in engines.items() if "-prefill-" in name}
    if pool:
        service = waves.pop("mooncake-master", None)
        service = waves.pop("memcache-meta") if service is None else service
        assert (service, decode, prefill, waves["pd-proxy"]) == (0, {1}, {2}, 3)
    else:
        assert (decode, prefill, waves["pd-proxy"]) == ({0}, {0}, 1)


@pytest.mark.parametrize("cluster,pool", [("pd_a2", False), ("pd_pool_a2", True)])
def test_004_a2_start_order(lab_plans, cluster, pool):
    assert_start_order(lab_plans[cluster], pool)


def test_plan_mode_prints_the_table(lab_plans):
    output = lab_plans["pd_a2"].output
    assert "HOST      WAVE  CONTAINER                DP RANKS  DEVICES          PORTS" in output
    assert "pd_a2_d1  0     vllm-ascend-decode-dp7   7         6,7              9903" in output
    assert "pd_a2_p1  0     vllm-ascend-prefill-dp1  1         0,1,2,3,4,5,6,7  headless" in output
    assert "pd_a2_p0  1     pd-proxy                 -         -                8081" in output


CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_OMP_THREADS_BIND": "nobind", "HF_HUB_OFFLINE": "1"}
CPU_SERVE = ["--served-model-name", "tiny", "--dtype", "float32", "--enforce-eager", "--max-model-len", "2048", "--seed", "1024"]


def test_cpu_dp_rehearses_dp_a2_without_devices(lab_plans):
    """Not a seed: dp_a2's DP layout on vLLM's CPU backend, with vLLM's own DP flags."""
    plan = lab_plans["cpu_dp"]
    # Upstream vLLM 0.32 reads --data-parallel-start-rank on the API node as hybrid load balancing and then
    # refuses the headless node: rank 0 goes without it (dp_a2, on vllm-ascend, says it as the seed does).
    for host, ip, extra in (("cpu_dp_node0", "192.0.2.71", ["--api-server-count", "1"]),
                            ("cpu_dp_node1", "192.0.2.72", ["--headless", "--data-parallel-start-rank", "1"])):
        spec = plan.spec(host, "vllm-cpu")
        assert_same_command(spec, ["vllm", "serve", "/data/models/tiny-llama", "--host", "0.0.0.0", "--port", "8000",
                                   "--data-parallel-size", "2", "--data-parallel-size-local", "1",
                                   "--data-parallel-address", "192.0.2.71", "--data-parallel-rpc-port", "12321",
                                   "--tensor-parallel-size", "1", *CPU_SERVE, *extra])
        assert spec["env"] == dict(CPU_ENV, VLLM_HOST_IP=ip, GLOO_SOCKET_IFNAME="eth0")  # no visible-devices variable
        assert_docker(spec, [], ["/data/models:/data/models:ro"], shm_size="4g")


def test_cpu_pd_uses_nixl_with_a_side_channel_per_engine(lab_plans):
    """Not a seed: 1P1D over vLLM's NixlConnector on CPU, behind the vllm-ascend proxy."""
    plan = lab_plans["cpu_pd"]
    kv = '{"kv_connector":"NixlConnector","kv_role":"kv_both","kv_buffer_device":"cpu","kv_connector_extra_config":{"kv_lease_duration":300}}'
    for host, role, ip, port, side in (("cpu_pd_prefill", "prefill", "192.0.2.81", 8100, "5600"),
                                       ("cpu_pd_decode", "decode", "192.0.2.82", 8200, "5700")):
        spec = plan.spec(host, "vllm-cpu-%s" % role)  # one process per node, named by its role
        assert_same_command(spec, ["vllm", "serve", "/data/models/tiny-llama", "--host", "0.0.0.0", "--port", str(port),
                                   "--data-parallel-size", "1", "--tensor-parallel-size", "1", *CPU_SERVE,
                                   "--kv-transfer-config", kv])
        assert spec["env"] == dict(CPU_ENV, VLLM_HOST_IP=ip, VLLM_NIXL_SIDE_CHANNEL_HOST=ip, VLLM_NIXL_SIDE_CHANNEL_PORT=side)
        assert spec["wave"] == 0  # both groups start together, then the proxy
    proxy = plan.spec("cpu_pd_prefill", "pd-proxy")
    assert proxy["wave"] == 1 and proxy["image"] == "quay.io/ascend/vllm-ascend:v0.30.0rc1"
    assert proxy["command"][-8:] == ["--prefiller-hosts", "192.0.2.81", "--prefiller-ports", "8100",
                                     "--decoder-hosts", "192.0.2.82", "--decoder-ports", "8200"]
    # the launcher and the plan's instances (all /instances/add accepts) are files of the spec, mounted read-only
    assert json.loads(proxy["files"]["/etc/llmops/pd_proxy/instances.json"]) == {"prefill": ["192.0.2.81:8100"],
                                                                                 "decode": ["192.0.2.82:8200"]}
    assert "class FrontDoor" in proxy["files"]["/etc/llmops/pd_proxy/front_door.py"]
    assert "class KeyFile" in proxy["files"]["/etc/llmops/pd_proxy/llmops_key_guard.py"]  # its key files' reader
    # its keys: files of their own, written by deploy, mounted read-only
    assert proxy["volumes"] == ["/etc/llmops/pd_proxy:/etc/llmops/pd_proxy:ro", "/etc/llmops/secrets/pd-proxy:/run/llmops/secrets:ro"]


def test_pd_2p2d_a3_runs_two_instances_of_each_role_behind_one_proxy(lab_plans):
    """Not a seed: pd_a3 grown to 2P2D. Instance b of each role is a DP group of its own, its rank 0 the DP master on
    its own node, with pd_a3's flags otherwise; the proxy lists every instance's API ranks."""
    plan = lab_plans["pd_2p2d_a3"]
    for host, name, ip in (("pd_2p2d_a3_decode", "vllm-ascend-decode-dp3", "192.0.2.93"),
                           ("pd_2p2d_a3_decode_b", "vllm-ascend-decode-b-dp3", "192.0.2.94")):
        spec = plan.spec(host, name)
        _words, flags = seed.flags(spec["command"])
        assert (flags["--data-parallel-rank"], flags["--data-parallel-address"], flags["--port"]) == ("3", ip, "9903")
        assert spec["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "6,7" and spec["meta"]["dp_group"] == ip + ":12325"
    assert {spec["meta"]["instance"] for spec in plan.specs().values() if spec["meta"]["kind"] == "engine"} == \
        {"prefill", "prefill-b", "decode", "decode-b"}
    proxy = plan.spec("pd_2p2d_a3_prefill", "pd-proxy")
    instances = json.loads(proxy["files"]["/etc/llmops/pd_proxy/instances.json"])
    assert instances["prefill"] == ["192.0.2.91:9081", "192.0.2.91:9082", "192.0.2.92:9081", "192.0.2.92:9082"]
    assert len(instances["decode"]) == 16 and "192.0.2.94:9907" in instances["decode"]
    # an instance's spec equals its role's first instance's but for its node, DP address and name
    first, other = plan.spec("pd_2p2d_a3_prefill", "vllm-ascend-prefill-dp1"), plan.spec("pd_2p2d_a3_prefill_b", "vllm-ascend-prefill-b-dp1")
    assert [a.replace("192.0.2.92", "192.0.2.91") for a in other["command"]] == first["command"]


def test_pd_2p2d_a2_is_pd_a2_as_an_instance_per_node(lab_plans):
    """Not a seed: pd_a2's four nodes as 2P2D. Each prefill instance is one DP1/TP8 rank, its own DP master; each
    decode instance DP2/TP2 on devices 0-3 of its node; every flag and variable otherwise pd_a2's."""
    plan, seed_plan = lab_plans["pd_2p2d_a2"], lab_plans["pd_a2"]
    names = sorted(plan.specs())
    assert names == [("pd_2p2d_a2_d0", "vllm-ascend-decode-dp0"), ("pd_2p2d_a2_d0", "vllm-ascend-decode-dp1"),
                     ("pd_2p2d_a2_d1", "vllm-ascend-decode-b-dp0"), ("pd_2p2d_a2_d1", "vllm-ascend-decode-b-dp1"),
                     ("pd_2p2d_a2_p0", "pd-proxy"), ("pd_2p2d_a2_p0", "vllm-ascend-prefill-dp0"),
                     ("pd_2p2d_a2_p1", "vllm-ascend-prefill-b-dp0")]
    decode_b = plan.spec("pd_2p2d_a2_d1", "vllm-ascend-decode-b-dp1")
    _words, flags = seed.flags(decode_b["command"])
    assert (flags["--data-parallel-size"], flags["--data-parallel-rank"], flags["--data-parallel-address"], flags["--port"]) == \
        ("2", "1", "192.0.2.104", "9901")
    assert decode_b["env"]["ASCEND_RT_VISIBLE_DEVICES"] == "2,3" and decode_b["meta"]["instance"] == "decode-b"
    seed_decode = seed_plan.spec("pd_a2_d0", "vllm-ascend-decode-dp1")
    assert {k: v for k, v in decode_b["env"].items() if "IP" not in k} == \
        {k: v for k, v in seed_decode["env"].items() if "IP" not in k}
    instances = json.loads(plan.spec("pd_2p2d_a2_p0", "pd-proxy")["files"]["/etc/llmops/pd_proxy/instances.json"])
    assert instances == {"prefill": ["192.0.2.101:9081", "192.0.2.102:9081"],
                         "decode": ["192.0.2.103:9900", "192.0.2.103:9901", "192.0.2.104:9900", "192.0.2.104:9901"]}


@pytest.mark.parametrize("cluster", CLUSTERS)
def test_every_spec_carries_the_plans_meta_and_it_says_what_the_spec_runs(lab_plans, cluster):
    """Every launch spec of every lab cluster has its meta, and each fact of it equals what the spec's argv,
    name, env and rendered files say (the parsers the consumers used before, kept in tests/argv_meta.py), so the
    consumers that read meta now read what they parsed before."""
    specs = lab_plans[cluster].specs()
    assert specs
    for (host, name), spec in specs.items():
        meta = spec["meta"]
        assert meta == dict(argv_meta.read_meta(spec), **{k: v for k, v in meta.items() if k not in argv_meta.read_meta(spec)}), \
            (host, name, meta, argv_meta.read_meta(spec))
        if meta["kind"] == "engine":
            assert (meta["pool"] is not None) == any("AscendStoreConnector" in arg for arg in spec["command"]), name
            assert launch.spec_hash(spec) == launch.spec_hash(dict(spec, meta={"anything": "else"}))  # no part of the hash
    if cluster.startswith("pd"):
        kinds = sorted(spec["meta"]["kind"] for spec in specs.values())
        assert "proxy" in kinds and kinds.count("engine") == len(kinds) - 1 - ("pool" in cluster)
