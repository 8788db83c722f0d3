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
import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError, Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

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


def version(text: object) -> tuple[int, ...] | None:
    """(major, minor, patch) of a Mooncake release such as 0.3.11.post1; None when it is none."""
    found = re.match(r"^(\d+)\.(\d+)\.(\d+)", str(text or ""))
    return tuple(int(part) for part in found.groups()) if found else None


def wanted(ha: dict[str, t.Any] | None) -> bool:
    """Whether the inventory asks for HA: a mooncake_master_ha with masters."""
    return bool(ha) and bool((ha or {}).get("hosts"))


def default_cluster_id(cluster: str) -> str:
    """Each cluster its own id, so two clusters sharing an etcd never read each other's leader."""
    return "llmops_" + re.sub(r"[^A-Za-z0-9_.-]", "_", cluster)


class EtcdMember(t.TypedDict):
    host: str
    address: str
    name: str


class Etcd(t.TypedDict):
    deployed: bool  # members the collection deploys, else an etcd the operator runs
    members: list[EtcdMember]
    endpoints: list[str]  # host:port of each client endpoint


class Layout(t.TypedDict):
    """Masters and etcd of a cluster in HA: its planner services, the masters, the id and flags they run with, the
    etcd the engines find the leader through (connstring "a:2379;b:2379", client_address "etcd://..."), and what to
    say (warnings by release; how etcd is guarded, with the firewall on or off)."""

    services: list[dict[str, t.Any]]
    masters: list[dict[str, str]]
    cluster_id: str
    oplog: bool
    connstring: str
    client_address: str
    etcd: Etcd
    flags: dict[str, list[str]]
    warnings: list[str]
    etcd_guard: str
    etcd_open: str


def layout(cluster: str, ha: dict[str, t.Any] | None, settings: dict[str, t.Any]) -> Layout:
    """The HA layout, or PlanError with every problem.

    ``settings``: nodes [{host, address}] (the cluster's, retired ones left out), single_host
    (mooncake_master_host), port, metrics_port, etcd_client_port, etcd_peer_port, version (the Mooncake release of
    the image), args (mooncake_master_args), engine_env ({variable name: env mapping} of the engines' env variables).
    """
    ha = dict(ha or {})
    addresses = {node["host"]: node["address"] for node in settings["nodes"]}
    problems = [Problem(cluster, "%s.%s" % (VARIABLE, key), "is no setting of Mooncake HA", "use one of %s" % ", ".join(HA_KEYS))
                for key in sorted(set(ha) - set(HA_KEYS))]
    masters, found = _listed_hosts(ha, "hosts", addresses, cluster)
    cluster_id = ha.get("cluster_id") or default_cluster_id(cluster)
    problems += found + _master_problems(cluster, masters, settings, cluster_id)
    etcd_hosts, found = _listed_hosts(ha, "etcd_hosts", addresses, cluster)
    endpoints = [str(e) for e in ha.get("etcd_endpoints") or []]
    problems += found + _etcd_problems(cluster, etcd_hosts, endpoints)
    problems += [Problem(cluster, variable, message, fix) for variable, message, fix in
                 _flag_problems(settings.get("args") or []) + _engine_env_problems(settings.get("engine_env") or {}, cluster_id)]
    release = version(settings.get("version"))
    if release is None:
        problems.append(Problem(cluster, "mooncake_master_version", "%r is not a Mooncake release" % settings.get("version"),
                                "give the release in mooncake_master_image, such as 0.3.11.post1"))
    if problems or release is None:
        raise PlanError(problems)
    members: list[EtcdMember] = [{"host": h, "address": addresses[h], "name": "etcd-%s" % re.sub(r"[^A-Za-z0-9-]", "-", h)}
                                 for h in etcd_hosts]
    if members:
        endpoints = ["%s:%d" % (m["address"], settings["etcd_client_port"]) for m in members]
    connstring = ";".join(endpoints)
    oplog = ha.get("oplog") is not False and release >= OPLOG_SINCE
    return {
        "services": _services(masters, members, settings),
        "masters": [{"host": h, "address": addresses[h]} for h in masters],
        "cluster_id": cluster_id,
        "oplog": oplog,
        "connstring": connstring,
        "client_address": "etcd://" + connstring,
        "etcd": {"deployed": bool(members), "members": members, "endpoints": endpoints},
        "flags": {host: _master_flags(addresses[host], settings, cluster_id, connstring, release, oplog) for host in masters},
        "warnings": [] if release >= OPLOG_SINCE else [
            "Mooncake %s keeps no oplog for etcd (from 0.3.12): after a failover the new leader has none of the pool's metadata, "
            "so blocks stored before it are not found again (engines keep serving and store anew)" % settings["version"]],
        "etcd_guard": ETCD_GUARD,
        "etcd_open": ETCD_OPEN,
    }


def _listed_hosts(ha: dict[str, t.Any], key: str, addresses: dict[str, str], cluster: str) -> tuple[list[str], list[Problem]]:
    """The hosts ha[key] lists (by name or address, each once, in order), and what is wrong with the list."""
    by_address = {address: host for host, address in addresses.items()}
    listed = [by_address.get(value, value) for value in ha.get(key) or []]
    variable = "%s.%s" % (VARIABLE, key)
    problems = [Problem(cluster, variable, "lists %s twice" % host, "list each host once (two masters or members on one host "
                        "share its ports)", host=host) for host in sorted({h for h in listed if listed.count(h) > 1})]
    problems += [Problem(cluster, variable, "%r is neither a host of the cluster nor the address of one" % host,
                         "name hosts of %s (%s)" % (cluster, ", ".join(sorted(addresses)))) for host in listed if host not in addresses]
    return list(dict.fromkeys(listed)), problems


def _master_problems(cluster: str, masters: list[str], settings: dict[str, t.Any], cluster_id: str) -> list[Problem]:
    problems = []
    if len(masters) < 2:
        problems.append(Problem(cluster, VARIABLE + ".hosts", "HA needs two or more masters, %s" % (
            "got only %s" % masters[0] if masters else "got none"),
            "name a second host for a standby master, or leave mooncake_master_ha unset for the single master of 004 5.4"))
    if settings.get("single_host"):
        problems.append(Problem(cluster, "mooncake_master_host", "places the single master, but mooncake_master_ha places the masters",
                                "leave mooncake_master_host empty and list the masters in mooncake_master_ha.hosts"))
    if not CLUSTER_ID.match(cluster_id):
        problems.append(Problem(cluster, VARIABLE + ".cluster_id", "%r is not a usable id" % cluster_id,
                                "use letters, digits, '_', '.' and '-'"))
    return problems


def _etcd_problems(cluster: str, etcd_hosts: list[str], endpoints: list[str]) -> list[Problem]:
    problems = []
    if etcd_hosts and endpoints:
        problems.append(Problem(cluster, VARIABLE, "gives both etcd_endpoints (an etcd you run) and etcd_hosts (members the "
                                "collection deploys)", "keep one of them"))
    elif not etcd_hosts and not endpoints:
        problems.append(Problem(cluster, VARIABLE, "gives no etcd: the masters elect their leader through one",
                                "list etcd_endpoints of an etcd you run, or etcd_hosts for three members the collection deploys"))
    if etcd_hosts and (len(etcd_hosts) % 2 == 0 or len(etcd_hosts) < 3):
        problems.append(Problem(cluster, VARIABLE + ".etcd_hosts", "%d members: %s" % (
            len(etcd_hosts), "an even count has no better quorum than one member less" if len(etcd_hosts) % 2 == 0
            else "one member fails with the pool it should keep alive"), "list an odd number of hosts, three or more"))
    problems += [Problem(cluster, VARIABLE + ".etcd_endpoints", "%r is not host:port" % endpoint, "give each client endpoint as host:port")
                 for endpoint in endpoints if not ENDPOINT.match(endpoint) or endpoint.startswith("etcd://")]
    return problems


def _master_flags(address: str, settings: dict[str, t.Any], cluster_id: str, connstring: str, release: tuple[int, ...],
                  oplog: bool) -> list[str]:
    """A master's flags in HA mode, by release: the etcd backend flags changed in 0.3.10."""
    backend = (["--ha_backend_type=etcd", "--ha_backend_connstring=" + connstring] if release >= CONNSTRING_SINCE
               else ["--etcd_endpoints=" + connstring])
    return (["--port", str(settings["port"]), "--rpc_address", address, "--metrics_port", str(settings["metrics_port"]),
             "--enable_ha=true", "--cluster_id", cluster_id] + backend + (["--enable_oplog=true"] if oplog else []))


def _services(masters: list[str], members: list[EtcdMember], settings: dict[str, t.Any]) -> list[dict[str, t.Any]]:
    """One planner service per master and per etcd member: their ports are checked with everything on their host."""
    services: list[dict[str, t.Any]] = [
        {"name": "mooncake_master", "host": h, "host_variable": VARIABLE + ".hosts", "ports": [settings["port"], settings["metrics_port"]],
         "variables": ["mooncake_master_port", "mooncake_master_metrics_port"]} for h in masters]
    services += [{"name": "mooncake_etcd", "host": m["host"], "host_variable": VARIABLE + ".etcd_hosts",
                  "ports": [settings["etcd_client_port"], settings["etcd_peer_port"]],
                  "variables": ["mooncake_master_etcd_client_port", "mooncake_master_etcd_peer_port"]} for m in members]
    return services


def _flag_problems(args: list[t.Any]) -> list[tuple[str, str, str]]:
    found = []
    for arg in args:
        name = str(arg).split("=", 1)[0]
        if name in HA_FLAGS:
            found.append(("mooncake_master_args", "sets %s, which the collection sets on every master in HA mode" % name,
                          "remove it (the cluster id is mooncake_master_ha.cluster_id, the ports mooncake_master_port and "
                          "mooncake_master_metrics_port)"))
    return found


def _engine_env_problems(engine_env: dict[str, t.Any], cluster_id: str) -> list[tuple[str, str, str]]:
    """The engines find the leader with MC_STORE_CLUSTER_ID (the collection sets it); MOONCAKE_MASTER would win over
    mooncake.json's etcd:// address and pin them to one master (vllm-ascend reads it first)."""
    found = []
    for variable, env in sorted(engine_env.items()):
        for name, value in sorted((env or {}).items()):
            if name == "MC_STORE_CLUSTER_ID" and str(value) != cluster_id:
                found.append((variable, "MC_STORE_CLUSTER_ID is %r but the masters run with cluster id %r: the engines would find "
                              "no master" % (value, cluster_id), "remove it (the collection sets it) or set mooncake_master_ha.cluster_id "
                              "to it"))
            if name == "MOONCAKE_MASTER":
                found.append((variable, "MOONCAKE_MASTER (%s) wins over mooncake.json's etcd:// address and ties the engines to one "
                              "master" % value, "remove it: in HA mode the engines read the leader from etcd"))
    return found


def launch_fields(found: Layout, settings: dict[str, t.Any]) -> list[LaunchSpec]:
    """The launch spec fields of the etcd members (if deployed) and the masters of a layout.

    ``settings``: master_image, master_name, args (mooncake_master_args), metrics_port, etcd_image, etcd_name,
    etcd_data_dir, etcd_client_port, etcd_peer_port, store_wave, pool_wave.
    """
    fields: list[LaunchSpec] = []
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
            "meta": {"kind": "pool_store", "port": settings["etcd_client_port"], "data": [settings["etcd_data_dir"]], "metrics_url": client + "/metrics",
                     "ha": {"service": "etcd", "member": member["name"], "client_url": client}},
        })
    healths = ["http://%s:%d/health" % (m["address"], settings["metrics_port"]) for m in found["masters"]]
    for master in found["masters"]:
        metrics = "http://%s:%d" % (master["address"], settings["metrics_port"])
        fields.append({
            "name": settings["master_name"], "host": master["host"], "image": settings["master_image"],
            "command": ["mooncake_master"] + found["flags"][master["host"]] + list(settings.get("args") or []),
            "wave": settings["pool_wave"],
            # /health answers 200 on a standby too, and before the election every master is one: ready is this
            # master leading and serving, or a standby while one of its peers does (master_ready)
            "ready": {"http": metrics + "/health", "ha": "mooncake_master", "peers": [url for url in healths if not url.startswith(metrics)]},
            "meta": {"kind": "pool_service", "backend": "mooncake", "port": settings["metrics_port"], "metrics_url": metrics + "/metrics",
                     "ha": {"service": "mooncake_master", "cluster_id": found["cluster_id"], "health_url": metrics + "/health",
                            # what preflight checks: the etcd every host must reach, and what a failover keeps
                            "etcd": found["etcd"]["endpoints"], "etcd_deployed": found["etcd"]["deployed"],
                            "version": settings.get("version"), "oplog": found["oplog"]}},
        })
    return fields


def master_role(health: dict[str, t.Any] | None) -> str | None:
    """leader, standby or None (not a member of an HA pool) from a master's /health JSON; leader_warmup is 'warmup'."""
    role = (health or {}).get("role")
    if role == "leader":
        return "leader" if (health or {}).get("service_ready") else "warmup"
    return "standby" if role == "standby" else None


def master_ready(health: dict[str, t.Any] | None, peers: Iterable[dict[str, t.Any] | None] = ()) -> bool:
    """Ready: this master leads and serves, or it is a standby and one of its peers (their /health answers) leads
    and serves (Mooncake 0.3.11+ /health). Engines that start while the leader warms up fail their store's setup."""
    role = master_role(health)
    return role == "leader" or (role == "standby" and any(master_role(peer) == "leader" for peer in peers))
