# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The host firewall's tables from the plan: which ports accept whom, and what is refused."""

from __future__ import annotations

import pytest
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-order
from rule_cases import cpu_pd  # noqa: E402  pylint: disable=wrong-import-order

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster
from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall

SETTINGS = {"client_networks": ["198.51.100.0/24"], "monitoring_networks": ["203.0.113.5"]}


def test_every_planned_port_of_a_host_accepts_the_cluster_and_refuses_the_rest():
    plan = plan_cluster(seeds.pd_a2())
    rules = firewall.rulesets(plan, SETTINGS)
    assert sorted(rules) == ["pd_a2_d0", "pd_a2_d1", "pd_a2_p0", "pd_a2_p1"]
    p0 = rules["pd_a2_p0"]
    planned = {(e["low"], e["high"]) for e in plan["ports"]["pd_a2_p0"] if e["space"] == "host"}
    assert {(8081, 8081), (9081, 9081), (12321, 12321)} <= planned
    assert p0["front_door"] == ["8081"] and p0["metrics"] == []  # the proxy; /metrics only through a relay (below)
    assert p0["cluster_hosts"] == ["192.0.2.41", "192.0.2.42", "192.0.2.43", "192.0.2.44"]
    text = p0["text"]
    assert "tcp dport { 8081 } ip saddr @client_networks accept" in text
    assert "@monitoring_networks accept" not in text  # the API's port serves completions too: the cluster's
    assert "    ip saddr @cluster_hosts accept" in text  # the ports vLLM picks at run time, and the planned ones below
    assert "tcp dport { 22 } accept" in text and p0["ssh"] == ["22"]
    # default-deny: whatever was not accepted above is refused, IPv6 too (the client and cluster sets are IPv4)
    chain = text[text.index("chain input"):].splitlines()
    assert chain[-4:-1] == ["    meta l4proto tcp counter reject with tcp reset", "    counter reject with icmpx type admin-prohibited", "  }"]
    assert text.index("@cluster_hosts accept") < text.index("meta l4proto tcp counter reject")  # accepts, then the refusal
    assert 'iif "lo" accept' in text and "ct state established,related accept" in text
    assert 'comment "llmops %s"' % p0["digest"] in text and "delete table inet llmops_pd_a2" in text
    d0 = rules["pd_a2_d0"]
    assert d0["front_door"] == [] and "@client_networks accept" not in d0["text"]  # no front door on a decode node
    assert d0["metrics"] == [] and "@monitoring_networks accept" not in d0["text"]


def with_relay(cluster, host="pd_a2_p0", port=9410):
    cluster["services"].append({"name": "metrics_relay", "host": host, "ports": [port], "variables": ["host_firewall_metrics_relay_port"]})
    return cluster


def test_the_monitoring_networks_reach_the_metrics_relay_alone():
    """Ports that serve /metrics also serve completions (engine APIs) or the pool's key queries: the monitoring
    networks reach the relay's port and nothing else; the relay's host reaches the engine APIs like the front door's."""
    plan = plan_cluster(with_relay(seeds.pd_a2(), host="pd_a2_d1"))
    rules = firewall.rulesets(plan, SETTINGS)
    d1, p0 = rules["pd_a2_d1"], rules["pd_a2_p0"]
    assert d1["metrics"] == ["9410"] and "tcp dport { 9410 } ip saddr @monitoring_networks accept" in d1["text"]
    assert p0["metrics"] == [] and "@monitoring_networks accept" not in p0["text"]
    assert "set api_clients { type ipv4_addr; flags interval; elements = { 192.0.2.41, 192.0.2.44 } }" in p0["text"]
    assert "set api_clients { type ipv4_addr; flags interval; elements = { 192.0.2.41 } }" in \
        firewall.ruleset(plan_cluster(seeds.pd_a2()), "pd_a2_p0", SETTINGS)["text"]  # without the relay


def test_the_digest_follows_the_rules():
    plan = plan_cluster(seeds.pd_a2())
    same = firewall.ruleset(plan, "pd_a2_p0", SETTINGS)["digest"]
    assert firewall.ruleset(plan, "pd_a2_p0", dict(SETTINGS))["digest"] == same
    assert firewall.ruleset(plan, "pd_a2_p0", dict(SETTINGS, client_networks=["198.51.100.7"]))["digest"] != same


class _Host:
    """An AnsibleModule stand-in with nft installed."""

    @staticmethod
    def get_bin_path(name, *_args, **_kwargs):
        return "/usr/sbin/" + name


def _nft(loaded):
    """commands.run as nft answers with the table as it is loaded (None: not loaded)."""
    def run(_module, argv):
        assert argv[1:4] == ["list", "table", "inet"]
        return (0, loaded, "") if loaded is not None else (1, "", "Error: No such file or directory")
    return run


def _listing(rules):
    """`nft list table` output of a table loaded from these rules."""
    return 'table inet llmops_pd_a2 {\n\tcomment "llmops %s"\n}' % rules["digest"]


def test_the_look_says_whether_the_loaded_table_and_its_file_are_the_planned_ones(tmp_path, monkeypatch):
    plan = plan_cluster(seeds.pd_a2())
    planned = firewall.ruleset(plan, "pd_a2_p0", SETTINGS)
    other = firewall.ruleset(plan, "pd_a2_p0", dict(SETTINGS, client_networks=["198.51.100.7"]))
    path = tmp_path / "llmops_pd_a2.nft"
    path.write_text(planned["text"])
    monkeypatch.setattr(firewall, "BOOT_UNIT_DIR", str(tmp_path))
    unit = tmp_path / "llmops-firewall-llmops_pd_a2.service"
    unit.write_text(firewall.boot_unit("llmops_pd_a2", str(path), "/usr/sbin/nft"))

    def current(loaded):
        monkeypatch.setattr(firewall.commands, "run", _nft(loaded))
        return firewall.found_on_host(_Host(), "llmops_pd_a2", str(path), planned["text"])["current"]

    assert current(_listing(planned)) is True  # deploy then leaves the firewall role out
    assert current(_listing(other)) is False  # loaded with other rules: deploy loads the planned ones
    assert current(None) is False
    unit.unlink()  # loaded, but gone at the next boot: deploy writes its unit again
    assert current(_listing(planned)) is False
    unit.write_text(firewall.boot_unit("llmops_pd_a2", str(path), "/usr/sbin/nft"))
    path.write_text(planned["text"].replace("reject", "drop"))  # the file edited by hand: written again
    assert current(_listing(planned)) is False
    path.unlink()
    assert current(_listing(planned)) is False
    # without the planned text (preflight, or the firewall off) there is no such verdict
    monkeypatch.setattr(firewall.commands, "run", _nft(None))
    assert "current" not in firewall.found_on_host(_Host(), "llmops_pd_a2", str(path))


def test_the_operators_own_services_open_to_the_networks_named_with_them():
    plan = plan_cluster(seeds.pd_a2())
    opened = [{"port": 9100, "networks": ["203.0.113.0/24"]}, {"port": "5000-5002", "protocol": "udp", "networks": ["192.0.2.200"]}]
    text = firewall.ruleset(plan, "pd_a2_d0", dict(SETTINGS, open_ports=opened, ssh_ports=[22, 2222]))["text"]
    assert "tcp dport 9100 ip saddr { 203.0.113.0/24 } accept" in text
    assert "udp dport 5000-5002 ip saddr { 192.0.2.200/32 } accept" in text
    assert "tcp dport { 22, 2222 } accept" in text
    assert text.index("udp dport 5000-5002") < text.index("meta l4proto tcp counter reject")


@pytest.mark.parametrize("settings, message", [
    ({"ansible_ports": {"pd_a2_d0": 2222, "pd_a2_p0": None}}, r"host pd_a2_d0: ansible_port is 2222, which host_firewall_ssh_ports "
     r"\(22\) does not open, so the firewall would lock Ansible out of the host. Fix: add 2222 to host_firewall_ssh_ports"),
    ({"ssh_ports": ["ssh"]}, r"cluster pd_a2: host_firewall_ssh_ports has port 'ssh', which is not a port"),
    ({"open_ports": [{"port": 9100}]}, r"cluster pd_a2: host_firewall_open_ports\[0\] is .*needs a port and the networks"),
    ({"open_ports": [{"port": 70000, "networks": ["203.0.113.0/24"]}]}, r"host_firewall_open_ports\[0\] has port 70000"),
    ({"open_ports": [{"port": 53, "protocol": "sctp", "networks": ["203.0.113.0/24"]}]}, r"has protocol 'sctp'. Fix: tcp or udp"),
])
def test_a_setting_that_would_lock_ansible_out_or_open_nothing_is_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        firewall.rulesets(plan_cluster(seeds.pd_a2()), dict(SETTINGS, **settings))


@pytest.mark.parametrize("settings, message", [
    ({"client_networks": []}, r"host_firewall_enabled is true \(the default\) and the cluster has a front door .*client_networks is empty.*enabled: false"),
    ({"client_networks": ["198.51.100.0/33"]}, r"host_firewall_client_networks has '198.51.100.0/33', which is not an address"),
    ({"client_networks": ["2001:db8::/32"]}, r"host_firewall_client_networks has 2001:db8::/32: the firewall handles IPv4 only"),
    ({"client_networks": ["198.51.100.0/24"], "monitoring_networks": ["prometheus"]}, r"host_firewall_monitoring_networks has 'prometheus'"),
])
def test_settings_that_would_not_work_are_refused(settings, message):
    with pytest.raises(ValueError, match="cluster pd_a2: " + message):
        firewall.rulesets(plan_cluster(seeds.pd_a2()), settings)


def test_a_cluster_without_a_front_door_needs_no_client_network():
    rules = firewall.rulesets(plan_cluster(seeds.dp_a2()), {})
    assert rules and all(r["front_door"] == [] for r in rules.values())
    assert any(r["ports"] for r in rules.values())  # the API and DP RPC of the group's head node


def test_status_names_a_missing_or_changed_table():
    plan = plan_cluster(seeds.pd_a2())
    rules = firewall.rulesets(plan, SETTINGS)
    loaded = {"rc": 0, "stdout": 'table inet llmops_pd_a2 {\n\tcomment "llmops %s"\n' % rules["pd_a2_p0"]["digest"]}
    listings = {"pd_a2_p0": loaded, "pd_a2_p1": {"rc": 1, "stdout": ""}, "pd_a2_d0": {"rc": 0, "stdout": 'comment "llmops 0"'},
                "pd_a2_d1": {"skipped": True}}
    assert firewall.problems(listings, rules) == [
        "the firewall table inet llmops_pd_a2 on pd_a2_d0 differs from the plan (changed since deploy; deploy loads it again)",
        "the firewall table inet llmops_pd_a2 on pd_a2_p1 is not loaded (deploy loads it)"]


def test_the_pool_services_ports_are_the_clusters_and_their_metrics_the_relays():
    cluster = seeds.pd_pool_a2()
    # the variables the mooncake_master role declares with its ports (declare.yml)
    cluster["services"][-1]["variables"] = ["mooncake_master_port", "mooncake_master_metrics_port"]
    plan = plan_cluster(with_relay(cluster))
    rules = firewall.rulesets(plan, SETTINGS)
    home = next(host for host, ports in plan["ports"].items() if any(e["owner"] == "mooncake_master" for e in ports))
    master = {e["variable"]: str(e["low"]) for e in plan["ports"][home] if e["owner"] == "mooncake_master"}
    rpc, metrics = master["mooncake_master_port"], master["mooncake_master_metrics_port"]
    assert rpc in rules[home]["ports"] and rpc not in rules[home]["metrics"]  # the master's RPC: the cluster's only
    # its metrics port also answers key queries: the cluster's too (the relay on P0 among them); the relay's port the monitoring's
    assert metrics in rules[home]["ports"] and rules[home]["metrics"] == ["9410"]
    # the RPC takes no credentials: the cluster's nodes only, not an extra cluster network (a bastion)
    text = firewall.ruleset(plan, home, dict(SETTINGS, cluster_networks=["203.0.113.77"]))["text"]
    assert "set cluster_nodes { type ipv4_addr; flags interval; elements = { 192.0.2.41, 192.0.2.42, 192.0.2.43, 192.0.2.44 } }" in text
    assert "tcp dport { %s } ip saddr @cluster_nodes accept\n    tcp dport { %s } reject with tcp reset" % (rpc, rpc) in text
    assert text.index("@cluster_nodes accept") < text.index("ip saddr @cluster_hosts accept")  # before the bastion's accept
    assert "203.0.113.77" in text.split("set cluster_hosts")[1].split("\n")[0]


def test_etcd_is_kept_to_the_nodes_and_its_peer_port_to_its_members():
    cluster = seeds.pd_pool_a2()
    cluster["services"][-1]["variables"] = ["mooncake_master_port", "mooncake_master_metrics_port"]
    cluster["services"] += [{"name": "mooncake_etcd", "host": host, "ports": [2379, 2380],
                             "variables": ["mooncake_master_etcd_client_port", "mooncake_master_etcd_peer_port"]}
                            for host in ("pd_a2_p0", "pd_a2_p1", "pd_a2_d0")]
    rules = firewall.rulesets(plan_cluster(cluster), SETTINGS)
    text = rules["pd_a2_d0"]["text"]
    assert rules["pd_a2_d0"]["etcd_peers"] == ["2380"] and rules["pd_a2_d0"]["pool_services"] == ["2379"]
    assert "set etcd_members { type ipv4_addr; flags interval; elements = { 192.0.2.41, 192.0.2.42, 192.0.2.43 } }" in text
    assert "tcp dport { 2380 } ip saddr @etcd_members accept" in text and "tcp dport { 2379 } ip saddr @cluster_nodes accept" in text
    assert rules["pd_a2_d1"]["etcd_peers"] == [] and "etcd_members" not in rules["pd_a2_d1"]["text"]  # no member there


def test_inventory_hosts_sharing_a_machine_write_one_table_with_both_instances_ports():
    cluster = cpu_pd()
    cluster["instances"] = {"decode": {"b": {"api_port": 8300, "kv_port": 5800}}}
    cluster["nodes"].append({"host": "box2b", "address": "192.0.2.91", "role": "decode", "instance": "b", "local_ranks": 1})
    rules = firewall.rulesets(plan_cluster(cluster), {"client_networks": ["198.51.100.0/24"]})
    decode_host = next(h for h in rules if h != "box2b" and "8200" in rules[h]["ports"])
    assert rules["box2b"]["text"] == rules[decode_host]["text"]  # one file, one table: neither drops the other's ports
    assert {"8200", "8300"} <= set(rules["box2b"]["ports"])


def test_the_boot_unit_loads_the_table_after_the_distributions_service_flushed_the_ruleset():
    unit = firewall.boot_unit("llmops_pd_a2", "/etc/llmops/firewall/llmops_pd_a2.nft", "/usr/sbin/nft")
    lines = unit.splitlines()
    # Debian's nftables.service runs /etc/nftables.conf (`flush ruleset`) at boot, on restart and on reload
    assert {"After=nftables.service", "PartOf=nftables.service", "ReloadPropagatedFrom=nftables.service"} <= set(lines)
    assert "ExecStart=/usr/sbin/nft -f /etc/llmops/firewall/llmops_pd_a2.nft" in lines
    assert "ExecReload=/usr/sbin/nft -f /etc/llmops/firewall/llmops_pd_a2.nft" in lines
    assert "Before=network-pre.target docker.service shutdown.target" in lines  # no container listens unguarded
    assert lines[lines.index("[Install]") + 1] == "WantedBy=sysinit.target" and "RemainAfterExit=yes" in lines
    assert firewall.boot_unit_path("llmops_pd_a2") == "/etc/systemd/system/llmops-firewall-llmops_pd_a2.service"


class _Recorder(_Host):
    """An AnsibleModule stand-in that records the commands run and sets no mode."""

    def __init__(self):
        self.ran = []

    def set_mode_if_different(self, *_args):
        return False

    def run(self, _module, argv):
        self.ran.append(argv[1:])
        if argv[1:3] == ["list", "table"]:
            return (0 if self.loaded else 1), "", ""
        if argv[1:3] == ["delete", "table"]:
            self.loaded = False
        return 0, "", ""

    loaded = True


def test_load_writes_the_boot_unit_and_enables_it_where_systemd_runs(tmp_path, monkeypatch):
    rules = tmp_path / "rules" / "llmops_pd_a2.nft"
    rules.parent.mkdir()
    monkeypatch.setattr(firewall, "BOOT_UNIT_DIR", str(tmp_path / "units"))
    host = _Recorder()
    monkeypatch.setattr(firewall.commands, "run", host.run)
    monkeypatch.setattr(firewall, "SYSTEMD_RUNNING", str(tmp_path / "no-systemd"))
    assert firewall.load(host, str(rules), "table inet llmops_pd_a2 {}\n", "llmops_pd_a2") is None
    unit = tmp_path / "units" / "llmops-firewall-llmops_pd_a2.service"
    assert unit.read_text() == firewall.boot_unit("llmops_pd_a2", str(rules), "/usr/sbin/nft")
    assert host.ran == [["-f", str(rules)]]  # a host without systemd (a container): the unit is written, nothing enabled
    monkeypatch.setattr(firewall, "SYSTEMD_RUNNING", str(tmp_path))
    host.ran = []
    assert firewall.load(host, str(rules), "table inet llmops_pd_a2 {}\n", "llmops_pd_a2") is None
    assert host.ran == [["-f", str(rules)], ["enable", "--now", unit.name]]  # unchanged unit: no daemon-reload
    unit.write_text("edited by hand")
    host.ran = []
    firewall.load(host, str(rules), "table inet llmops_pd_a2 {}\n", "llmops_pd_a2")
    assert host.ran == [["-f", str(rules)], ["daemon-reload"], ["enable", "--now", unit.name]]
    assert unit.read_text() == firewall.boot_unit("llmops_pd_a2", str(rules), "/usr/sbin/nft")
    # the firewall turned off: table, rules file and unit go, the unit disabled first
    host.ran = []
    assert firewall.remove(host, "llmops_pd_a2", str(rules)) == (True, None)
    assert not rules.exists() and not unit.exists()
    assert host.ran == [["list", "table", "inet", "llmops_pd_a2"], ["delete", "table", "inet", "llmops_pd_a2"],
                        ["disable", "--now", unit.name], ["daemon-reload"]]
    host.ran = []
    assert firewall.remove(host, "llmops_pd_a2", str(rules)) == (False, None)  # nothing left: nothing done


def test_inside_the_cluster_each_planned_port_answers_the_hosts_that_use_it():
    plan = plan_cluster(seeds.pd_a2())
    assert {e["reach"] for ports in plan["ports"].values() for e in ports} == {"clients", "api", "group", "engines", None}
    settings = dict(SETTINGS, verify_hosts=["pd_a2_d1"], cluster_networks=["203.0.113.77"])
    rules = firewall.rulesets(plan, settings)
    p0, d0 = rules["pd_a2_p0"], rules["pd_a2_d0"]
    # engine APIs: the front door's host (P0), the host verify runs from and the extra cluster networks (a bastion)
    assert p0["kept"]["api_clients"] == ["9081"] and d0["kept"]["api_clients"] == ["9900-9903"]
    assert "set api_clients { type ipv4_addr; flags interval; elements = { 192.0.2.41, 192.0.2.44, 203.0.113.77/32 } }" in d0["text"]
    # DP RPC and HCCL host sockets: the group's own hosts; the KV side channels: every engine's host
    assert p0["kept"]["group_prefill"] == ["12321"] and d0["kept"]["group_decode"] == ["12325", "60000-60399"]
    assert "set group_decode { type ipv4_addr; flags interval; elements = { 192.0.2.43, 192.0.2.44 } }" in d0["text"]
    assert p0["kept"]["engine_hosts"] == ["30000-30007", "30016"]
    text = d0["text"]
    for name, ports in d0["kept"].items():  # each accepted from its set, then reset for anyone else...
        listed = ", ".join(ports)
        accept, refuse = "tcp dport { %s } ip saddr @%s accept" % (listed, name), "tcp dport { %s } reject with tcp reset" % listed
        assert text.index(accept) < text.index(refuse) < text.index("    ip saddr @cluster_hosts accept")  # ...first


def test_without_a_front_door_the_engine_apis_answer_the_cluster():
    plan = plan_cluster(seeds.pd_a2())
    plan["ports"] = {host: [e for e in ports if e["reach"] != "clients"] for host, ports in plan["ports"].items()}
    rules = firewall.ruleset(plan, "pd_a2_p0", {"monitoring_networks": ["203.0.113.5"]})
    assert "api_clients" not in rules["kept"] and "@api_clients" not in rules["text"]  # clients are the cluster's hosts
    assert rules["kept"]["group_prefill"] == ["12321"]
