# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the simulated engine checks at start-up, as strictly as the real one where we can know it: the
kv-transfer-config (connectors, roles, ports), the visible devices, the UCM / Mooncake / Memcache configs
and the services they name."""

from __future__ import annotations

import json
import os
import pathlib
import re
import socket
import time

import yaml
from sim_cli import die, log

KNOWN_CONNECTORS = {"UCMConnector", "MooncakeConnectorV2", "MooncakeConnector", "MultiConnector", "AscendStoreConnector"}


KV_ROLES = {"kv_producer", "kv_consumer", "kv_both"}


UCM_PIPELINES = {"Cache|Posix", "Cache|Compress|Posix", "Cache|Empty", "Cache|Fake", "Empty", "Fake", "Mooncake",
                 "Mooncake|Posix", "Dram"}


def visible_devices(tp, local_ranks):
    """The accelerators this engine may use: NPUs (/dev/davinciN, narrowed by ASCEND_RT_VISIBLE_DEVICES),
    or on a GPU host the GPUs Docker's nvidia driver granted (NVIDIA_VISIBLE_DEVICES, from --gpus)."""
    need = tp * local_ranks
    granted = os.environ.get("NVIDIA_VISIBLE_DEVICES")
    if granted is not None:
        gpus = [] if granted in ("", "void", "none") else granted.split(",")
        if "all" in gpus or len(gpus) != need:
            die("tensor-parallel-size %d x %d local DP ranks needs %d GPUs, the container was granted %r"
                % (tp, local_ranks, need, granted))
        return gpus
    dev = pathlib.Path(os.environ.get("VLLM_SIM_DEV_DIR", "/dev"))  # tests of the simulator itself point it elsewhere
    present = sorted(int(m.group(1)) for m in (re.fullmatch(r"davinci(\d+)", p.name) for p in dev.iterdir()) if m)
    if not present:
        die("No accelerator: no /dev/davinci* and no GPU granted (RuntimeError: No CUDA GPUs are available)")
    wanted = os.environ.get("ASCEND_RT_VISIBLE_DEVICES")
    devices = [int(d) for d in wanted.split(",")] if wanted else present
    missing = [d for d in devices if d not in present]
    if missing:
        die("ASCEND_RT_VISIBLE_DEVICES names devices %s that do not exist (have /dev/davinci%s)" % (missing, present))
    if len(devices) < need or (wanted and len(devices) != need):
        die("tensor-parallel-size %d x %d local DP ranks needs %d visible devices, got %s" % (tp, local_ranks, need, devices))
    return devices


def check_reachable(address, what):
    host, port = address.rsplit(":", 1)
    for _attempt in range(30):
        try:
            socket.create_connection((host, int(port)), timeout=2).close()
            return
        except OSError:
            time.sleep(1)
    die("%s %s is not reachable" % (what, address))


def check_master(address):
    """The master (host:port), or in HA mode the etcd its store client reads the leader from (etcd://h1:p1;h2:p2,
    any member): the client fails without one. With etcd, MC_STORE_CLUSTER_ID must name the masters' cluster (the
    real client finds "No master is available" otherwise, checked by it at setup)."""
    if not address.startswith("etcd://"):
        check_reachable(address, "Mooncake master")
        return
    endpoints = [e for e in address[len("etcd://"):].split(";") if e]
    if not endpoints or any(":" not in e for e in endpoints):
        die("Mooncake master_server_address %r: etcd:// needs host:port endpoints separated by ';'" % address)
    check_reachable(endpoints[0], "etcd of the Mooncake masters")


def check_kv_config(config, dp_rank, tp):
    """Validate the connector tree; return (role, engine_id, mooncake kv_port, ucm config, pool backend)."""
    info = {"role": None, "engine_id": config.get("engine_id"), "kv_port": None, "ucm": None, "pool": None}

    def visit(node, where):
        name = node.get("kv_connector")
        if name not in KNOWN_CONNECTORS:
            die("%s: unknown kv_connector %r" % (where, name))
        role = node.get("kv_role")
        if role not in KV_ROLES:
            die("%s: kv_role must be one of %s, got %r" % (where, sorted(KV_ROLES), role))
        info["role"] = info["role"] or role
        if role != info["role"]:
            die("%s: kv_role %s differs from the parent's %s" % (where, role, info["role"]))
        extra = node.get("kv_connector_extra_config") or {}
        if name == "MultiConnector":
            children = extra.get("connectors")
            if not isinstance(children, list) or not children:
                die("%s: MultiConnector needs kv_connector_extra_config.connectors" % where)
            for i, child in enumerate(children):
                visit(child, "%s.connectors[%d]" % (where, i))
        elif name.startswith("MooncakeConnector"):
            if not str(node.get("kv_port", "")).isdigit():
                die("%s: kv_port must be a port number, got %r" % (where, node.get("kv_port")))
            info["kv_port"] = int(node["kv_port"])
            path = os.environ.get("MOONCAKE_CONFIG_PATH")
            if path:
                mooncake = json.loads(pathlib.Path(path).read_text())
                check_master(mooncake["master_server_address"])
        elif name == "AscendStoreConnector":
            if not isinstance(extra.get("lookup_rpc_port"), int):
                die("%s: AscendStoreConnector needs an integer lookup_rpc_port" % where)
            backend = extra.get("backend")
            info["pool"] = {"backend": backend, "lookup_rpc_port": extra["lookup_rpc_port"],
                            "consumer_is_to_load": bool(extra.get("consumer_is_to_load")),
                            "consumer_is_to_put": bool(extra.get("consumer_is_to_put"))}
            if backend == "mooncake" and not os.environ.get("MOONCAKE_CONFIG_PATH"):
                die("%s: backend mooncake needs MOONCAKE_CONFIG_PATH" % where)
            if backend == "memcache":
                info["mmc"] = check_memcache()
        elif name == "UCMConnector":
            if node.get("kv_connector_module_path") != "ucm.integration.vllm.ucm_connector":
                die("%s: UCMConnector needs kv_connector_module_path ucm.integration.vllm.ucm_connector" % where)
            info["ucm"] = check_ucm(extra.get("UCM_CONFIG_FILE"))

    visit(config, "--kv-transfer-config")
    return info


def check_memcache():
    path = os.environ.get("MMC_LOCAL_CONFIG_PATH")
    if not path or not pathlib.Path(path).is_file():
        die("backend memcache needs MMC_LOCAL_CONFIG_PATH naming mmc-local.conf, got %r" % path)
    conf = {}
    for line in pathlib.Path(path).read_text().splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            conf[key.strip()] = value.strip()
    url = conf.get("ock.mmc.meta_service_url", "")
    if not url.startswith("tcp://"):
        die("mmc-local.conf: ock.mmc.meta_service_url must be tcp://HOST:PORT, got %r" % url)
    check_reachable(url[len("tcp://"):], "Memcache MetaService")
    return conf


def check_ucm(path):
    if not path or not pathlib.Path(path).is_file():
        die("UCM_CONFIG_FILE %r does not exist" % path)
    config = yaml.safe_load(pathlib.Path(path).read_text())
    store = config["ucm_connectors"][0]
    store_config = store["ucm_connector_config"]
    if store["ucm_connector_name"] == "UcmPipelineStore" and store_config.get("store_pipeline") not in UCM_PIPELINES:
        die("UCM: unknown store_pipeline %r" % store_config.get("store_pipeline"))
    backends = [pathlib.Path(p) for p in str(store_config.get("storage_backends", "")).split(":") if p]
    if not backends or not all(p.is_dir() for p in backends):
        die("UCM: storage_backends %r must be existing directories" % store_config.get("storage_backends"))
    log("create UcmPipelineStore with config: %s" % json.dumps(store_config))
    return {"backends": backends}
