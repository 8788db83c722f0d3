# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Mooncake master HA on etcd: where the masters and the etcd members run, the flags of each,
the address the engines find the leader through, and the inventory mistakes refused before any host is touched.

A single master keeps the pool's metadata in its memory: when it restarts the engines' registrations are gone
(Mooncake #2246). With ``--enable_ha`` two or more masters elect a leader through etcd (the key
``mooncake-store/<cluster_id>/master_view``); the engines' store clients read the leader from etcd
(``master_server_address: etcd://h1:2379;h2:2379``) and follow a failover by themselves, so a master's restart
restarts no engine. Flags by release (read from Mooncake's source): up to 0.3.9 ``--etcd_endpoints``, from
0.3.10 ``--ha_backend_type=etcd --ha_backend_connstring``; ``--enable_oplog`` replicates the metadata to the
standbys, so blocks stored before a failover are still found after it (0.3.12 follows the oplog through etcd).
"""

from __future__ import annotations

import re

from ansible_collections.llmops.inference.plugins.module_utils._plan_errors import PlanError, Problem

VARIABLE = "mooncake_master_ha"
# Mooncake's etcd client (mooncake-common/etcd/etcd_wrapper.go: NewEtcdClient, newStoreClientConfig) builds its
# clientv3.Config from endpoints and timeouts only - no TLS, no credentials - so an etcd asking for client certificates
# would refuse the masters and the engines: etcd is guarded by the host firewall alone (_firewall: the nodes only).
ETCD_GUARD = ("etcd takes no client certificates, since Mooncake's etcd client presents none: the host firewall keeps "
              "etcd's client port and the masters' RPC to the cluster's nodes, and etcd's peer port to its members")
ETCD_OPEN = ("etcd takes no client certificates, since Mooncake's etcd client presents none, and host_firewall_enabled "
             "is false: any host that reaches etcd or a master's RPC can repoint the pool's leader")
HA_KEYS = ("hosts", "cluster_id", "etcd_endpoints", "etcd_hosts", "oplog")
CONNSTRING_SINCE = (0, 3, 10)
OPLOG_SINCE = (0, 3, 12)
# flags the collection sets on every master in HA mode; given in mooncake_master_args they would fight its own
HA_FLAGS = ("--enable_ha", "--etcd_endpoints", "--ha_backend_type", "--ha_backend_connstring", "--rpc_address",
            "--rpc_port", "--cluster_id", "--enable_oplog", "--metrics_port", "--port")
CLUSTER_ID = re.compile(r"^[A-Za-z0-9_.-]+$")
ENDPOINT = re.compile(r"^[A-Za-z0-9_.-]+:\d{1,5}$")


def version(text):
    """(major, minor, patch) of a Mooncake release such as 0.3.11.post1; None when it is none."""
    found = re.match(r"^(\d+)\.(\d+)\.(\d+)", str(text or ""))
    return tuple(int(part) for part in found.groups()) if found else None


def wanted(ha):
    """Whether the inventory asks for HA: a mooncake_master_ha with masters."""
    return bool(ha) and bool((ha or {}).get("hosts"))


def default_cluster_id(cluster):
    """Each cluster its own id, so two clusters sharing an etcd never read each other's leader."""
    return "llmops_" + re.sub(r"[^A-Za-z0-9_.-]", "_", cluster)


def layout(cluster, ha, settings):
    """The HA layout, or PlanError with every problem.

    ``settings``: nodes [{host, address}] (the cluster's, retired ones left out), single_host
    (mooncake_master_host), port, metrics_port, etcd_client_port, etcd_peer_port, version (the Mooncake release of
    the image), args (mooncake_master_args), engine_env ({variable name: env mapping} of the engines' env variables).

    Returns {services (for the planner), masters: [{host, address}], cluster_id, oplog, connstring ("a:2379;b:2379"), client_address
    ("etcd://..."), etcd: {deployed, members: [{host, address, name}], endpoints}, flags: {host: [flag]},
    warnings: [text]}.
    """
    problems = []

    def problem(variable, message, fix, host=None):
        problems.append(Problem(cluster, variable, message, fix, host=host))

    ha = dict(ha or {})
    for key in sorted(set(ha) - set(HA_KEYS)):
        problem("%s.%s" % (VARIABLE, key), "is no setting of Mooncake HA", "use one of %s" % ", ".join(HA_KEYS))
    addresses = {node["host"]: node["address"] for node in settings["nodes"]}
    by_address = {node["address"]: node["host"] for node in settings["nodes"]}

    def hosts_of(key):
        listed = [by_address.get(value, value) for value in ha.get(key) or []]
        for host in sorted({h for h in listed if listed.count(h) > 1}):
            problem("%s.%s" % (VARIABLE, key), "lists %s twice" % host, "list each host once (two masters or members on one host "
                    "share its ports)", host=host)
        for host in listed:
            if host not in addresses:
                problem("%s.%s" % (VARIABLE, key), "%r is neither a host of the cluster nor the address of one" % host,
                        "name hosts of %s (%s)" % (cluster, ", ".join(sorted(addresses))))
        return list(dict.fromkeys(listed))

    masters = hosts_of("hosts")
    if len(masters) < 2:
        problem(VARIABLE + ".hosts", "HA needs two or more masters, %s" % ("got only %s" % masters[0] if masters else "got none"),
                "name a second host for a standby master, or leave mooncake_master_ha unset for the single master of 004 5.4")
    if settings.get("single_host"):
        problem("mooncake_master_host", "places the single master, but mooncake_master_ha places the masters",
                "leave mooncake_master_host empty and list the masters in mooncake_master_ha.hosts")
    cluster_id = ha.get("cluster_id") or default_cluster_id(cluster)
    if not CLUSTER_ID.match(cluster_id):
        problem(VARIABLE + ".cluster_id", "%r is not a usable id" % cluster_id, "use letters, digits, '_', '.' and '-'")
    etcd_hosts = hosts_of("etcd_hosts")
    endpoints = [str(e) for e in ha.get("etcd_endpoints") or []]
    if etcd_hosts and endpoints:
        problem(VARIABLE, "gives both etcd_endpoints (an etcd you run) and etcd_hosts (members the collection deploys)",
                "keep one of them")
    elif not etcd_hosts and not endpoints:
        problem(VARIABLE, "gives no etcd: the masters elect their leader through one",
                "list etcd_endpoints of an etcd you run, or etcd_hosts for three members the collection deploys")
    if etcd_hosts and (len(etcd_hosts) % 2 == 0 or len(etcd_hosts) < 3):
        problem(VARIABLE + ".etcd_hosts", "%d members: %s" % (len(etcd_hosts), "an even count has no better quorum than one member "
                "less" if len(etcd_hosts) % 2 == 0 else "one member fails with the pool it should keep alive"),
                "list an odd number of hosts, three or more")
    for endpoint in endpoints:
        if not ENDPOINT.match(endpoint) or endpoint.startswith("etcd://"):
            problem(VARIABLE + ".etcd_endpoints", "%r is not host:port" % endpoint, "give each client endpoint as host:port")
    _flag_problems(settings.get("args") or [], problem)
    _engine_env_problems(settings.get("engine_env") or {}, cluster_id, problem)
    release = version(settings.get("version"))
    if release is None:
        problem("mooncake_master_version", "%r is not a Mooncake release" % settings.get("version"),
                "give the release in mooncake_master_image, such as 0.3.11.post1")
    if problems:
        raise PlanError(problems)

    members = [{"host": h, "address": addresses[h], "name": "etcd-%s" % re.sub(r"[^A-Za-z0-9-]", "-", h)} for h in etcd_hosts]
    if members:
        endpoints = ["%s:%d" % (m["address"], settings["etcd_client_port"]) for m in members]
    connstring = ";".join(endpoints)
    oplog = ha.get("oplog") is not False and release >= OPLOG_SINCE
    warnings = []
    if release < OPLOG_SINCE:
        warnings.append("Mooncake %s keeps no oplog for etcd (from 0.3.12): after a failover the new leader has none of the "
                        "pool's metadata, so blocks stored before it are not found again (engines keep serving and store anew)"
                        % settings["version"])
    flags = {}
    for host in masters:
        backend = (["--ha_backend_type=etcd", "--ha_backend_connstring=" + connstring] if release >= CONNSTRING_SINCE
                   else ["--etcd_endpoints=" + connstring])
        flags[host] = (["--port", str(settings["port"]), "--rpc_address", addresses[host], "--metrics_port", str(settings["metrics_port"]),
                        "--enable_ha=true", "--cluster_id", cluster_id] + backend + (["--enable_oplog=true"] if oplog else []))
    # one planner service per master and per etcd member: their ports are checked with everything on their host
    services = [{"name": "mooncake_master", "host": h, "host_variable": VARIABLE + ".hosts",
                 "ports": [settings["port"], settings["metrics_port"]],
                 "variables": ["mooncake_master_port", "mooncake_master_metrics_port"]} for h in masters]
    services += [{"name": "mooncake_etcd", "host": m["host"], "host_variable": VARIABLE + ".etcd_hosts",
                  "ports": [settings["etcd_client_port"], settings["etcd_peer_port"]],
                  "variables": ["mooncake_master_etcd_client_port", "mooncake_master_etcd_peer_port"]} for m in members]
    return {
        "services": services,
        "masters": [{"host": h, "address": addresses[h]} for h in masters],
        "cluster_id": cluster_id,
        "oplog": oplog,
        "connstring": connstring,
        "client_address": "etcd://" + connstring,
        "etcd": {"deployed": bool(members), "members": members, "endpoints": endpoints},
        "flags": flags,
        "warnings": warnings,
        "etcd_guard": ETCD_GUARD,
        "etcd_open": ETCD_OPEN,
    }


def _flag_problems(args, problem):
    for arg in args:
        name = str(arg).split("=", 1)[0]
        if name in HA_FLAGS:
            problem("mooncake_master_args", "sets %s, which the collection sets on every master in HA mode" % name,
                    "remove it (the cluster id is mooncake_master_ha.cluster_id, the ports mooncake_master_port and "
                    "mooncake_master_metrics_port)")


def _engine_env_problems(engine_env, cluster_id, problem):
    """The engines find the leader with MC_STORE_CLUSTER_ID (the collection sets it); MOONCAKE_MASTER would win over
    mooncake.json's etcd:// address and pin them to one master (vllm-ascend reads it first)."""
    for variable, env in sorted(engine_env.items()):
        for name, value in sorted((env or {}).items()):
            if name == "MC_STORE_CLUSTER_ID" and str(value) != cluster_id:
                problem(variable, "MC_STORE_CLUSTER_ID is %r but the masters run with cluster id %r: the engines would find "
                        "no master" % (value, cluster_id), "remove it (the collection sets it) or set mooncake_master_ha.cluster_id "
                        "to it")
            if name == "MOONCAKE_MASTER":
                problem(variable, "MOONCAKE_MASTER (%s) wins over mooncake.json's etcd:// address and ties the engines to one "
                        "master" % value, "remove it: in HA mode the engines read the leader from etcd")


def launch_fields(found, settings):
    """The launch spec fields of the etcd members (if deployed) and the masters of a layout.

    ``settings``: master_image, master_name, args (mooncake_master_args), metrics_port, etcd_image, etcd_name,
    etcd_data_dir, etcd_client_port, etcd_peer_port, store_wave, pool_wave.
    """
    fields = []
    members = found["etcd"]["members"]
    peers = ",".join("%s=http://%s:%d" % (m["name"], m["address"], settings["etcd_peer_port"]) for m in members)
    for member in members:
        client = "http://%s:%d" % (member["address"], settings["etcd_client_port"])
        peer = "http://%s:%d" % (member["address"], settings["etcd_peer_port"])
        fields.append({
            "name": settings["etcd_name"], "host": member["host"], "image": settings["etcd_image"],
            # the data directory keeps the member (and the masters' leader key) across restarts: with one there,
            # etcd ignores the --initial-* flags and rejoins as the member it was
            "command": ["etcd", "--name", member["name"], "--data-dir", settings["etcd_data_dir"],
                        "--listen-client-urls", client, "--advertise-client-urls", client,
                        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                        "--initial-cluster", peers, "--initial-cluster-token", found["cluster_id"],
                        "--initial-cluster-state", "new"],
            "volumes": ["%s:%s" % (settings["etcd_data_dir"], settings["etcd_data_dir"])],
            "wave": settings["store_wave"],
            "ready": {"http": client + "/health"},  # 200 once the member sees a leader: the quorum is up
            "meta": {"kind": "pool_store", "data": [settings["etcd_data_dir"]], "metrics_url": client + "/metrics",
                     "ha": {"service": "etcd", "member": member["name"], "client_url": client}},
        })
    peers = ["http://%s:%d/health" % (m["address"], settings["metrics_port"]) for m in found["masters"]]
    for master in found["masters"]:
        metrics = "http://%s:%d" % (master["address"], settings["metrics_port"])
        fields.append({
            "name": settings["master_name"], "host": master["host"], "image": settings["master_image"],
            "command": ["mooncake_master"] + found["flags"][master["host"]] + list(settings.get("args") or []),
            "wave": settings["pool_wave"],
            # /health answers 200 on a standby too, and before the election every master is one: ready is this
            # master leading and serving, or a standby while one of its peers does (master_ready)
            "ready": {"http": metrics + "/health", "ha": "mooncake_master", "peers": [url for url in peers if not url.startswith(metrics)]},
            "meta": {"kind": "pool_service", "backend": "mooncake", "metrics_url": metrics + "/metrics",
                     "ha": {"service": "mooncake_master", "cluster_id": found["cluster_id"], "health_url": metrics + "/health",
                            # what preflight checks: the etcd every host must reach, and what a failover keeps
                            "etcd": found["etcd"]["endpoints"], "etcd_deployed": found["etcd"]["deployed"],
                            "version": settings.get("version"), "oplog": found["oplog"]}},
        })
    return fields


def master_role(health):
    """leader, standby or None (not a member of an HA pool) from a master's /health JSON; leader_warmup is 'warmup'."""
    role = (health or {}).get("role")
    if role == "leader":
        return "leader" if health.get("service_ready") else "warmup"
    return role if role == "standby" else None


def master_ready(health, peers=()):
    """Ready: this master leads and serves, or it is a standby and one of its peers (their /health answers) leads
    and serves (Mooncake 0.3.11+ /health). Engines that start while the leader warms up fail their store's setup."""
    role = master_role(health)
    return role == "leader" or (role == "standby" and any(master_role(peer) == "leader" for peer in peers))
