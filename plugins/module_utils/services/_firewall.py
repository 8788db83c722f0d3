# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host firewall rules from the plan: default-deny, each host answering only what the cluster needs.

For each host this renders one nftables table of the collection's own (``inet llmops_<cluster>``), loaded
atomically by ``nft -f``, which other owners' tables never see. Its input chain accepts, in order:
- loopback, replies to connections the host made (ct established), ICMP and ICMPv6 (path MTU, IPv6 neighbour
  discovery) and DHCP client leases;
- SSH (``ssh_ports``: Ansible's own way in);
- the front door (the PD proxy's port) from the client networks, and the metrics relay's port from the monitoring
  networks: the ports that serve /metrics serve more (an engine's completions, the Mooncake master's key queries, etcd's
  store), so the monitoring gets ``GET /metrics`` through the relay (_metrics_relay) and those ports stay the cluster's;
- the KV pool's services (the Mooncake master's RPC, etcd's client port, Memcache's) from the cluster's nodes only, not
  the operator's extra cluster networks: they take no credentials (Mooncake's etcd client sets no TLS, see
  _pool_ha.ETCD_GUARD), so a bastion that runs verify has no business there; etcd's peer port from the etcd members only;
- anything else from the cluster's hosts: the ports the plan binds (``plan["ports"]``: engine APIs, DP RPC, HCCL host
  socket ranges, Mooncake and NIXL side channels, lookup RPC, pool metrics) and the ones vLLM picks at run time
  (engine-core and DP coordinator sockets, torch.distributed, transfer-engine handshakes), which vLLM's security
  guide keeps to an isolated network;
- the operator's own services (``open_ports``), from the networks named with them;
and refuses everything else, IPv4 and IPv6: TCP with a reset, the rest with ICMP administratively prohibited. The
table's comment carries a digest of its rules: status and deploy compare it with what is loaded.

The table survives a reboot and the distribution's own service: a oneshot systemd unit per table loads the same file
after nftables.service (Debian's /etc/nftables.conf begins with ``flush ruleset``, at boot and on every restart or
reload of that service) and again whenever that service restarts or reloads.
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import re
import typing as t
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils._files import read_text, write_text

BOOT_UNIT_DIR = "/etc/systemd/system"
SYSTEMD_RUNNING = "/run/systemd/system"
# The table's comment: the digest of its rules, written by ruleset() and read back by status and the look.
DIGEST_COMMENT = 'comment "llmops %s"'
_DIGEST = re.compile(re.escape(DIGEST_COMMENT).replace("%s", "([0-9a-f]+)"))

# where each host keeps its table's rules file unless host_firewall_rules_dir says otherwise
RULES_DIR = "/etc/llmops/firewall"


def boot_unit_path(table: str) -> str:
    return "%s/llmops-firewall-%s.service" % (BOOT_UNIT_DIR, table)


def boot_unit(table: str, path: str, nft: str = "/usr/sbin/nft") -> str:
    """The systemd unit that loads ``path`` at boot and after nftables.service (as ordered as that unit is: before the
    network is up and before Docker starts the containers whose ports the table guards)."""
    load_it = "%s -f %s" % (nft, path)
    return "\n".join([
        "# llmops.inference host_firewall: table inet %s, loaded again after nftables.service flushed the ruleset" % table,
        "[Unit]",
        "Description=llmops.inference host firewall (table inet %s)" % table,
        "DefaultDependencies=no",
        "Wants=network-pre.target",
        "After=nftables.service",
        "Before=network-pre.target docker.service shutdown.target",
        "Conflicts=shutdown.target",
        "PartOf=nftables.service",
        "ReloadPropagatedFrom=nftables.service",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "ExecStart=" + load_it,
        "ExecReload=" + load_it,
        "",
        "[Install]",
        "WantedBy=sysinit.target",
        ""])


def systemd_runs() -> bool:
    """Whether systemd is the host's init (sd_booted(3) looks for this directory)."""
    return os.path.isdir(SYSTEMD_RUNNING)


def found_on_host(module: t.Any, table: str | None, path: str | None, text: str | None = None) -> dict[str, t.Any]:
    """{nft: its path or None, loaded: the table is loaded, file: its rules file exists, unit: its boot unit exists} on
    the module's host; with the planned rules ``text``, also current: the loaded table carries the digest of those
    rules and the file and the boot unit hold them, so deploy has nothing to load or write (a secured cluster's no-op
    run then leaves the firewall role out)."""
    table, path = table or "", path or ""
    nft = module.get_bin_path("nft")
    loaded = False
    listing = ""
    if nft and table:
        rc, listing, _err = commands.run(module, [nft, "list", "table", "inet", table])
        loaded = rc == 0
    unit = boot_unit_path(table) if table else ""
    found: dict[str, t.Any] = {"nft": nft, "loaded": loaded, "file": bool(path) and os.path.exists(path), "unit": bool(unit) and os.path.exists(unit)}
    if text is not None:
        planned = loaded_digest(text)
        holds = _holds(path, text) and nft is not None and _holds(unit, boot_unit(table, path, nft))
        found["current"] = bool(loaded and planned and loaded_digest(listing) == planned and holds)
    return found


def _on_host(path: str) -> str | None:
    """A file's text on the host, None when it is missing or unreadable (written again)."""
    try:
        return read_text(path)
    except (OSError, UnicodeDecodeError):
        return None


def rules_on_host(path: str) -> str:
    """The rules file as it is on the host ("" when it is missing or unreadable), for --diff."""
    return _on_host(path) or ""


def _holds(path: str, text: str) -> bool:
    return _on_host(path) == text


def load(module: t.Any, path: str, text: str, table: str) -> str | None:
    """Writes the host's rules file (0644) and loads it with ``nft -f``, one transaction that replaces the collection's
    table only, then writes its boot unit and enables it where systemd runs (the host_firewall role's apply, and for a
    host where nothing of the cluster runs yet, the call of its first start, before any container of it listens).
    Returns what failed, or None."""
    if not table:
        return "no table named for the rules of %s (the caller's fault: its boot unit is named after it)" % path
    nft = module.get_bin_path("nft")
    if not nft:
        return ("host_firewall_enabled is true but nft is not installed. Fix: install Debian's nftables package "
                "(apt-get install nftables).")
    write_text(path, text)
    module.set_mode_if_different(path, "0644", False)
    rc, _out, err = commands.run(module, [nft, "-f", path])
    if rc != 0:
        return "nft -f %s failed: %s" % (path, err.strip()[-600:])
    return _at_boot(module, table, boot_unit(table, path, nft))


def _at_boot(module: t.Any, table: str, unit_text: str) -> str | None:
    """Writes the table's boot unit when it differs; where systemd runs, reloads it then and enables and starts it (its
    start loads the same file again: nothing changes)."""
    unit = boot_unit_path(table)
    written = not _holds(unit, unit_text)
    if written:
        write_text(unit, unit_text)
        module.set_mode_if_different(unit, "0644", False)
    systemctl = module.get_bin_path("systemctl")
    if not systemd_runs() or not systemctl:
        return None
    steps = ([[systemctl, "daemon-reload"]] if written else []) + [[systemctl, "enable", "--now", os.path.basename(unit)]]
    for argv in steps:
        rc, _out, err = commands.run(module, argv)
        if rc != 0:
            return "%s failed: %s" % (" ".join(argv[1:]), err.strip()[-600:])
    return None


def remove(module: t.Any, table: str, path: str) -> tuple[bool, str | None]:
    """Deletes the collection's table, its rules file and its boot unit (disabled first where systemd runs; stopping it
    changes no rule), whichever is there. (whether anything was removed, what failed or None)."""
    removed = False
    nft = module.get_bin_path("nft")
    if nft and commands.run(module, [nft, "list", "table", "inet", table])[0] == 0:
        rc, _out, err = commands.run(module, [nft, "delete", "table", "inet", table])
        # two inventory hosts on one machine (instances) may race: the loser finds it gone
        if rc != 0 and commands.run(module, [nft, "list", "table", "inet", table])[0] == 0:
            return removed, "nft delete table inet %s failed: %s" % (table, err.strip()[-600:])
        removed = removed or rc == 0
    unit = boot_unit_path(table)
    systemctl = module.get_bin_path("systemctl") if systemd_runs() else None
    if os.path.exists(unit) and systemctl:
        rc, _out, err = commands.run(module, [systemctl, "disable", "--now", os.path.basename(unit)])
        if rc != 0:
            return removed, "systemctl disable --now %s failed: %s" % (os.path.basename(unit), err.strip()[-600:])
    for gone in (path, unit):
        try:
            os.remove(gone)
            removed = True
        except FileNotFoundError:  # never written, or the machine's other inventory host was first
            pass
    if systemctl and removed:
        commands.run(module, [systemctl, "daemon-reload"])
    return removed, None


def loaded_digest(text: str | None) -> str | None:
    """The digest in a table's comment (``nft list table`` output, or the rules file), else None."""
    match = _DIGEST.search(text or "")
    return match.group(1) if match else None


def rules_file(table: str, directory: str | None = None) -> str:
    """The rules file of a table on each host: <directory>/<table>.nft, the directory host_firewall_rules_dir or
    RULES_DIR (the role's default, held equal to it by a test)."""
    return "%s/%s.nft" % ((directory or RULES_DIR).rstrip("/"), table)


def table_name(cluster: str) -> str:
    return "llmops_" + "".join(c if c.isalnum() else "_" for c in cluster)


def _networks(values: Iterable[object] | None, variable: str, cluster: str) -> list[str]:
    networks = []
    for value in values or []:
        try:
            network = ipaddress.ip_network(str(value), strict=False)
        except ValueError:
            raise ValueError("cluster %s: %s has %r, which is not an address or network (e.g. 198.51.100.0/24). "
                             "Fix: correct it." % (cluster, variable, value)) from None
        if network.version != 4:
            raise ValueError("cluster %s: %s has %s: the firewall handles IPv4 only. Fix: list the IPv4 networks "
                             "(IPv6 traffic to planned ports is refused)." % (cluster, variable, value))
        networks.append(str(network))
    return sorted(set(networks), key=ipaddress.ip_network)


def _ranges(entries: Iterable[Mapping[str, t.Any]]) -> list[str]:
    """nft set elements of (low, high) port ranges, merged."""
    spans = sorted((e["low"], e["high"]) for e in entries)
    merged: list[tuple[int, int]] = []
    for low, high in spans:
        if merged and low <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], high))
        else:
            merged.append((low, high))
    return ["%d" % low if low == high else "%d-%d" % (low, high) for low, high in merged]


def _port_range(value: object, where: str, cluster: str) -> str:
    """A port or "low-high" as nft writes it; ValueError naming ``where`` otherwise."""
    text = str(value)
    parts = text.split("-")
    if len(parts) > 2 or not all(part.isdigit() and 0 < int(part) < 65536 for part in parts) or int(parts[0]) > int(parts[-1]):
        raise ValueError("cluster %s: %s has port %r, which is not a port (1-65535) or a range low-high. Fix: correct it."
                         % (cluster, where, value))
    return text


def _open_ports(entries: Sequence[t.Any] | None, cluster: str) -> list[tuple[str, str, list[str]]]:
    """The operator's own services: [(protocol, port, networks)]."""
    found: list[tuple[str, str, list[str]]] = []
    for index, entry in enumerate(entries or []):
        where = "host_firewall_open_ports[%d]" % index
        if not isinstance(entry, dict) or "port" not in entry or not entry.get("networks"):
            raise ValueError("cluster %s: %s is %r; each entry needs a port and the networks it is open to (e.g. "
                             "{port: 9100, networks: [203.0.113.0/24]}). Fix: correct it." % (cluster, where, entry))
        protocol = entry.get("protocol", "tcp")
        if protocol not in ("tcp", "udp"):
            raise ValueError("cluster %s: %s has protocol %r. Fix: tcp or udp." % (cluster, where, protocol))
        found.append((protocol, _port_range(entry["port"], where, cluster), _networks(entry["networks"], where + ".networks", cluster)))
    return found


def _ssh_ports(settings: Mapping[str, t.Any], cluster: str) -> list[str]:
    """The SSH ports every host answers on; ValueError when Ansible reaches a host on a port that is not one of them
    (the firewall would lock Ansible out of it)."""
    ports = [_port_range(port, "host_firewall_ssh_ports", cluster) for port in settings.get("ssh_ports", [22])]
    spans = [tuple(int(part) for part in port.split("-")) for port in ports]
    for host, port in sorted((settings.get("ansible_ports") or {}).items()):
        if port is not None and not any(span[0] <= int(port) <= span[-1] for span in spans):
            raise ValueError("host %s: ansible_port is %s, which host_firewall_ssh_ports (%s) does not open, so the firewall "
                             "would lock Ansible out of the host. Fix: add %s to host_firewall_ssh_ports."
                             % (host, port, ", ".join(ports) or "none", port))
    return ports


def check_settings(settings: Mapping[str, t.Any], has_front_door: bool, cluster: str) -> tuple[list[str], list[str], list[str]]:
    """The settings' networks; ValueError naming the variable when they would not work."""
    clients = _networks(settings.get("client_networks"), "host_firewall_client_networks", cluster)
    monitoring = _networks(settings.get("monitoring_networks"), "host_firewall_monitoring_networks", cluster)
    extra = _networks(settings.get("cluster_networks"), "host_firewall_cluster_networks", cluster)
    if has_front_door and not clients:
        raise ValueError("cluster %s: host_firewall_enabled is true (the default) and the cluster has a front door (the "
                         "PD proxy), but host_firewall_client_networks is empty, so no client could reach it. Fix: list "
                         "the networks your clients come from (e.g. [198.51.100.0/24]), or set host_firewall_enabled: "
                         "false to leave the hosts' ports open on purpose." % cluster)
    return clients, monitoring, extra


def _kept_to(ports: Sequence[str], set_name: str) -> list[str]:
    """Rules that give ``ports`` to ``set_name`` only: accepted from it, reset for anyone else (before the cluster's
    hosts are accepted on every port)."""
    if not ports:
        return []
    listed = ", ".join(ports)
    return ["    tcp dport { %s } ip saddr @%s accept" % (listed, set_name), "    tcp dport { %s } reject with tcp reset" % listed]


def _chain(front: Sequence[str], metrics: Sequence[str], ssh: Sequence[str], operators: Iterable[tuple[str, str, list[str]]],
           kept: Iterable[str] = ()) -> list[str]:
    """The input chain's rules, in the order they are matched."""
    rules = ['    iif "lo" accept',
             "    ct state established,related accept",  # replies to what the host asked (DNS, image pulls, apt)
             "    meta l4proto { icmp, ipv6-icmp } accept",  # path MTU discovery; IPv6 neighbour discovery needs ICMPv6
             "    udp dport { 68, 546 } accept",  # DHCP (v4, v6) client leases of hosts that are given their address
             "    tcp dport { %s } accept" % ", ".join(ssh)]
    if front:
        rules.append("    tcp dport { %s } ip saddr @client_networks accept" % ", ".join(front))
    if metrics:
        rules.append("    tcp dport { %s } ip saddr @monitoring_networks accept" % ", ".join(metrics))
    rules += list(kept)
    # every other port from the cluster's hosts: the planned ones and those vLLM picks at run time
    rules.append("    ip saddr @cluster_hosts accept")
    rules += ["    %s dport %s ip saddr { %s } accept" % (protocol, port, ", ".join(networks)) for protocol, port, networks in operators]
    rules += ["    meta l4proto tcp counter reject with tcp reset", "    counter reject with icmpx type admin-prohibited"]
    return ["  chain input {", "    type filter hook input priority filter - 1; policy accept;"] + rules + ["  }"]


def _machines(plan: Mapping[str, t.Any]) -> dict[str, str]:
    """{inventory host: address} of every host of the plan (inventory hosts sharing a machine share its address)."""
    return dict(plan.get("machines") or {}, **{p["host"]: p["address"] for p in plan["processes"]})


class _Whole:
    """What every host's table reads of the whole plan, found once per plan for speed (found again for each host, the
    rendering grew with the square of the hosts)."""

    def __init__(self, plan: Mapping[str, t.Any]) -> None:
        self.machines = _machines(plan)
        # machine: the host-space port entries of every inventory host on it (one table serves them)
        self.entries: dict[str, list[Mapping[str, t.Any]]] = {}
        self.reaching: dict[str, set[str]] = {}  # reach: the inventory hosts with a port of it
        for host, ports in sorted((plan.get("ports") or {}).items()):
            self.entries.setdefault(self.machines.get(host, host), []).extend(e for e in ports if e["space"] == "host")
            for entry in ports:
                self.reaching.setdefault(entry["reach"], set()).add(host)
        groups: dict[str, set[str]] = {}  # DP group: its inventory hosts
        for process in plan["processes"]:
            groups.setdefault(process["instance"], set()).add(process["host"])
        self.group_addresses = {group: _addresses(self.machines, hosts) for group, hosts in groups.items()}
        self.nodes = _addresses(self.machines, self.machines)
        self.engine_hosts = _addresses(self.machines, {p["host"] for p in plan["processes"]})

    def on_machine(self, host: str) -> list[Mapping[str, t.Any]]:
        """The host-space port entries of every inventory host on ``host``'s machine."""
        return self.entries.get(self.machines.get(host, host), [])

    def hosts_with(self, reach: str) -> set[str]:
        return self.reaching.get(reach, set())


def _address_set(name: str, addresses: Sequence[str]) -> str:
    elements = " elements = { %s }" % ", ".join(addresses) if addresses else ""
    return "  set %s { type ipv4_addr; flags interval;%s }" % (name, elements)


def _reaching(entries: Iterable[Mapping[str, t.Any]], *reaches: str) -> list[str]:
    return _ranges([e for e in entries if e["reach"] in reaches])


def _addresses(machines: Mapping[str, str], hosts: Iterable[str]) -> list[str]:
    return sorted({str(ipaddress.ip_address(machines[h])) for h in hosts if h in machines}, key=ipaddress.ip_address)


def _set_name(group: str) -> str:
    """An nft set name for a DP group's hosts (letters, digits and underscores)."""
    return "group_" + re.sub(r"[^A-Za-z0-9_]", "_", group)


def _kept(whole: _Whole, entries: Sequence[Mapping[str, t.Any]], settings: Mapping[str, t.Any], extra: Sequence[str], front_hosts: set[str]
          ) -> list[tuple[str, list[str], list[str]]]:
    """[(set name, its addresses, ports)] of the ports kept to some of the cluster's hosts (``front_hosts``: the front
    door's), in the order they are matched: etcd's peer port to its members, the pool services to the nodes, engine APIs to the front door's hosts,
    the metrics relay's and those verify runs from (and the extra cluster networks) when the cluster has a front door, each DP group's ports to
    its hosts, the KV side channels to the engines' hosts."""
    kept = [("etcd_members", _addresses(whole.machines, whole.hosts_with("etcd_peers")), _reaching(entries, "etcd_peers")),
            ("cluster_nodes", whole.nodes, _reaching(entries, "pool"))]
    if front_hosts:
        users = front_hosts | whole.hosts_with("monitoring") | set(settings.get("verify_hosts") or ())
        api_clients = _addresses(whole.machines, users) + list(extra)
        kept.append(("api_clients", sorted(set(api_clients), key=ipaddress.ip_network), _reaching(entries, "api")))
    for group in sorted({e["group"] for e in entries if e["reach"] == "group"}):
        kept.append((_set_name(group), whole.group_addresses.get(group, []), _ranges([e for e in entries if e["group"] == group])))
    kept.append(("engine_hosts", whole.engine_hosts, _reaching(entries, "engines")))
    return [(name, addresses, ports) for name, addresses, ports in kept if ports]


def ruleset(plan: Mapping[str, t.Any], host: str, settings: Mapping[str, t.Any], whole: _Whole | None = None) -> dict[str, t.Any]:
    """{"table", "digest", "text", "ports", ...} of one host's nftables table (``nft -f`` input); ``whole``: what
    rulesets() found of the plan once for every host."""
    cluster = plan["cluster"]
    whole = whole or _Whole(plan)
    machines = whole.machines
    entries = whole.on_machine(host)
    front_hosts = whole.hosts_with("clients")
    clients, monitoring, extra = check_settings(settings, bool(front_hosts), cluster)
    ssh = _ssh_ports(settings, cluster)
    operators = _open_ports(settings.get("open_ports"), cluster)
    members = sorted(set(whole.nodes) | set(extra), key=ipaddress.ip_network)
    front = _reaching(entries, "clients")
    metrics = _reaching(entries, "monitoring")
    kept = _kept(whole, entries, settings, extra, front_hosts)
    body = [_address_set("cluster_hosts", members)] + [_address_set(name, addresses) for name, addresses, _ports in kept]
    body += [_address_set("client_networks", clients), _address_set("monitoring_networks", monitoring)]
    rules = [rule for name, _addresses_, ports in kept for rule in _kept_to(ports, name)]
    inner = "\n".join(body + _chain(front, metrics, ssh, operators, rules))
    digest = hashlib.sha256(inner.encode()).hexdigest()[:16]
    name = table_name(cluster)
    text = "\n".join([
        # named by the machine: inventory hosts sharing one (two instances on a server) write the same table
        "# llmops.inference host_firewall: cluster %s on %s, rendered from the plan; other tables are left alone."
        % (cluster, machines.get(host, host)),
        "table inet %s" % name, "delete table inet %s" % name,
        "table inet %s {" % name, "  " + DIGEST_COMMENT % digest, inner, "}", ""])
    kept_ports = {set_name: ports for set_name, _addresses_, ports in kept}
    return {"table": name, "digest": digest, "text": text, "ports": _ranges(entries), "front_door": front, "metrics": metrics,
            "cluster_hosts": members, "ssh": ssh, "pool_services": kept_ports.get("cluster_nodes", []),
            "etcd_peers": kept_ports.get("etcd_members", []), "kept": kept_ports}


def rulesets(plan: Mapping[str, t.Any], settings: Mapping[str, t.Any]) -> dict[str, dict[str, t.Any]]:
    """{host: ruleset} of every host of the plan."""
    whole = _Whole(plan)
    return {host: ruleset(plan, host, settings, whole) for host in sorted({p["host"] for p in plan["processes"]})}


def problems(listings: Mapping[str, t.Any] | None, rules: Mapping[str, Mapping[str, t.Any]] | None) -> list[str]:
    """What status reports of the hosts' tables: ``listings`` by host (``nft list table`` results: rc, stdout),
    ``rules`` by host (rulesets()); a host without a listing (unreachable) is reported by the container look."""
    found: list[str] = []
    for host, ruleset_ in sorted((rules or {}).items()):
        listing = (listings or {}).get(host) or {}
        if "rc" not in listing:
            continue
        if listing["rc"] != 0:
            found.append("the firewall table inet %s on %s is not loaded (deploy loads it)" % (ruleset_["table"], host))
        elif DIGEST_COMMENT % ruleset_["digest"] not in listing.get("stdout", ""):
            found.append("the firewall table inet %s on %s differs from the plan (changed since deploy; deploy loads it "
                         "again)" % (ruleset_["table"], host))
    return found
