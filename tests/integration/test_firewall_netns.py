# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host firewall's default-deny, proven by real nftables over IPv4 and IPv6: pd_a2's front door host's table,
rendered by the planner with its addresses moved onto a veth pair, loaded in a network namespace that
tests/harness/firewall_netns.py makes in a throwaway node container with network admin rights, and probed from a second namespace
by a host of its DP group, a host of another group, a client, the monitoring, an outsider and an IPv6 outsider. Needs
Docker and the harness images."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tests" / "unit" / "plugins" / "module_utils"))
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-position,wrong-import-order

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster  # noqa: E402
from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall  # noqa: E402

HOST, HOST6 = "10.99.0.1", "fd00:99::1"
PEER, CLIENT, MONITORING, OUTSIDER, OUTSIDER6 = "10.99.0.2", "10.99.0.3", "10.99.0.4", "10.99.0.5", "fd00:99::5"
DECODE = "10.99.0.12"  # pd_a2_d0: a host of the cluster in another DP group, no front door
# pd_a2_p0's ports: SSH, the front door, the prefill API (serves /metrics), DP RPC and the Mooncake side channel
# (planned, the cluster's), and 47000, a port vLLM could pick at run time (engine-core, torch.distributed)
SSH, FRONT_DOOR, API, DP_RPC, KV, RUNTIME = 22, 8081, 9081, 12321, 30000, 47000
RELAY = 9410  # the metrics relay beside the front door (host_firewall_metrics_relay_port): the monitoring's way in
PORTS = [SSH, FRONT_DOOR, API, DP_RPC, KV, RUNTIME, RELAY]


BASTION = "10.99.0.6"  # host_firewall_cluster_networks: runs verify, no node
MASTER_RPC, MASTER_METRICS = 50088, 9003


def rules(cluster=None, **settings):
    cluster = cluster or seeds.pd_a2()
    for node, address in zip(cluster["nodes"], [HOST, PEER, "10.99.0.12", "10.99.0.13"]):
        node["address"] = address
    # as host_firewall declares it when there are monitoring networks
    cluster["services"].append({"name": "metrics_relay", "host": "pd_a2_p0", "ports": [RELAY],
                                "variables": ["host_firewall_metrics_relay_port"]})
    settings = dict({"client_networks": [CLIENT], "monitoring_networks": [MONITORING]}, **settings)
    return firewall.ruleset(plan_cluster(cluster), "pd_a2_p0", settings)


def probed(tmp_path, table, sources, ports, restart=False):
    """{SOURCE,PORT: answer} of the table loaded in a namespace of a throwaway node container, and "outbound"; with
    ``restart``, probed after the node's own nftables.service restarted and the collection's boot unit ran ("flushed")."""
    (tmp_path / "rules.nft").write_text(table["text"])
    (tmp_path / "boot.service").write_text(firewall.boot_unit(table["table"], "/rules/rules.nft"))
    probes = ["%s,%d" % (source, port) for source in sources for port in ports]
    restarting = ["--restart-nftables", "/rules/boot.service"] if restart else []
    run = subprocess.run(
        # NET_ADMIN and SYS_ADMIN for the namespaces and nftables (--privileged is refused here: HARNESS_NOTES)
        ["docker", "run", "--rm", "--cap-add", "NET_ADMIN", "--cap-add", "SYS_ADMIN", "--security-opt", "seccomp=unconfined",
         "--security-opt", "apparmor=unconfined", "--network", "none", "--label", "llmops.harness=1",
         "-v", "%s:/fw:ro" % (ROOT / "tests" / "harness"), "-v", "%s:/rules:ro" % tmp_path, "--entrypoint", "python3",
         "llmops-node:test", "/fw/firewall_netns.py", "/rules/rules.nft", "--host", HOST, "--host6", HOST6,
         "--source", *sources, "--listen", *map(str, ports), "--probe", *probes, "--outbound", "%s,5555" % sources[-1], *restarting],
        capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout)
    for source in sources:
        print("from %-11s %s" % (source, ", ".join("%d %s" % (port, seen["%s,%d" % (source, port)]) for port in ports)))
    return seen


def connected(seen, source, ports):
    """The ports of ``ports`` a TCP connection from ``source`` reached."""
    return {port for port in ports if seen["%s,%d" % (source, port)] == "connected"}


def test_a_host_answers_the_cluster_everything_and_anyone_else_only_what_the_plan_opens_to_them(tmp_path):
    table = rules()
    spans = [tuple(int(part) for part in span.split("-")) for span in table["ports"]]
    planned = {port for port in PORTS if any(span[0] <= port <= span[-1] for span in spans)}
    assert planned == {FRONT_DOOR, API, DP_RPC, KV, RELAY}  # SSH and the run-time port are no port of the plan
    # probed after `systemctl restart nftables` as Debian's unit does it (flush ruleset) and the boot unit ran
    seen = probed(tmp_path, table, [PEER, DECODE, CLIENT, MONITORING, OUTSIDER6, OUTSIDER], PORTS, restart=True)
    print("outbound from the host to an outsider:", seen["outbound"])
    assert seen.pop("flushed") is True  # the distribution's restart had removed the table: the unit loaded it again

    # P1, of P0's DP group: its DP RPC, the KV side channel, the run-time ports; the API is the front door's (on P0)
    assert connected(seen, PEER, PORTS) == set(PORTS) - {API}
    assert connected(seen, DECODE, PORTS) == {SSH, FRONT_DOOR, KV, RUNTIME, RELAY}  # another group: no DP RPC
    assert connected(seen, CLIENT, PORTS) == {SSH, FRONT_DOOR}
    assert connected(seen, MONITORING, PORTS) == {SSH, RELAY}  # GET /metrics through the relay; the API serves completions too
    assert connected(seen, OUTSIDER, PORTS) == connected(seen, OUTSIDER6, PORTS) == {SSH}
    refused = [key for key, answer in seen.items() if key != "outbound" and answer != "connected"]
    assert all(seen[key] == "refused" for key in refused)  # a TCP reset each, at once, not a silent drop
    assert seen["outbound"] == "connected"  # the host's own connections get their replies


def test_the_pool_masters_rpc_answers_the_nodes_only_not_an_extra_cluster_network(tmp_path):
    cluster = seeds.pd_pool_a2()
    cluster["services"][-1]["variables"] = ["mooncake_master_port", "mooncake_master_metrics_port"]  # as the role declares
    table = rules(cluster, cluster_networks=[BASTION])
    ports = [MASTER_RPC, MASTER_METRICS, API, RELAY]
    seen = probed(tmp_path, table, [PEER, BASTION, MONITORING], ports)

    assert connected(seen, PEER, ports) == {MASTER_RPC, MASTER_METRICS, RELAY}  # P1 serves no front door, nor verify
    # verify's host reads metrics and asks engines, not the pool's RPC
    assert connected(seen, BASTION, ports) == {MASTER_METRICS, API, RELAY}
    assert connected(seen, MONITORING, ports) == {RELAY}  # the master's metrics port also answers key queries
