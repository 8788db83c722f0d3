# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several front doors behind one address: the checks of its settings, keepalived's configuration, the firewall's
rules for VRRP.

Clients reach one virtual address (``pd_proxy_vip``). Each front door host runs Debian's keepalived, which speaks
VRRP to the other door hosts by unicast (``unicast_peer``: no multicast needed on the network) and holds the address
while its own front door answers ``/healthcheck``: when the door's process dies, its check fails within a second and
the instance goes to FAULT (it stops advertising), and when the host dies its adverts stop; either way the healthy
door with the highest priority takes the address over after about three advert intervals and announces it
(gratuitous ARP). VRRP version 3 allows intervals below a second, which keeps that under the three seconds a client's
retry tolerates. ``nopreempt``: a door that comes back does not take the address back (each move costs the
requests in flight on the door that loses it).
"""

from __future__ import annotations

import ipaddress
import re
import typing as t
from collections.abc import Mapping, Sequence

VRRP = 112  # IP protocol number (RFC 5798); named in the firewall by number, /etc/protocols may lack it
INTERFACE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")  # Linux interface names: at most 15 bytes
DEFAULT_ROUTER_ID = 51  # keepalived's and kolla-ansible's example; unique per network segment
DEFAULT_ADVERT = 0.5  # seconds; a dead host's address moves after about 3.3 of them


class VipSettings(t.TypedDict):
    address: str  # pd_proxy_vip
    interface: str  # pd_proxy_vip_interface
    router_id: int  # pd_proxy_vip_router_id
    advert_interval: float  # pd_proxy_vip_advert_interval


def problems(settings: Mapping[str, t.Any], doors: Sequence[str], addresses: Mapping[str, str], cluster: str) -> list[str]:
    """What keeps the address from working, each naming the variable and the fix; [] when it works.

    ``doors``: the inventory hosts that run a front door, in order; ``addresses``: {host: its plan address}."""
    found: list[str] = []
    vip = str(settings.get("address") or "")
    try:
        address = ipaddress.ip_address(vip)
    except ValueError:
        return ["cluster %s: pd_proxy_vip %r is no IP address. Fix: give the address clients use, free on the door "
                "hosts' network (e.g. 10.0.0.100), or leave it empty for a single front door." % (cluster, vip)]
    if len(doors) < 2:
        found.append("cluster %s: pd_proxy_vip needs two or more front doors, pd_proxy_hosts lists %d. Fix: list the "
                     "hosts that run one (e.g. [p0, p1]), or leave pd_proxy_vip empty." % (cluster, len(doors)))
    if len(set(doors)) != len(doors):
        found.append("cluster %s: pd_proxy_hosts lists a host twice (%s). Fix: each once."
                     % (cluster, ", ".join(sorted({d for d in doors if list(doors).count(d) > 1}))))
    taken = sorted(host for host in doors if addresses.get(host) and ipaddress.ip_address(addresses[host]) == address)
    if taken:
        found.append("cluster %s: pd_proxy_vip %s is the address of %s. Fix: give an address no host has."
                     % (cluster, vip, ", ".join(taken)))
    if not INTERFACE.match(str(settings.get("interface") or "")):
        found.append("cluster %s: pd_proxy_vip_interface %r is no network interface name. Fix: name the interface of "
                     "the door hosts that carries their cluster address (ip -br addr shows it, e.g. eth0 or bond0)."
                     % (cluster, settings.get("interface")))
    router_id = settings.get("router_id")
    if not isinstance(router_id, int) or isinstance(router_id, bool) or not 1 <= router_id <= 255:
        found.append("cluster %s: pd_proxy_vip_router_id %r is no VRRP router id. Fix: a number from 1 to 255, unique "
                     "among the VRRP routers of the network." % (cluster, router_id))
    advert = settings.get("advert_interval")
    if not isinstance(advert, (int, float)) or isinstance(advert, bool) or not 0.01 <= float(advert) <= 40.95:
        found.append("cluster %s: pd_proxy_vip_advert_interval %r is out of VRRP 3's range. Fix: seconds from 0.01 to "
                     "40.95 (0.5: a dead host's address moves within about 1.7 s)." % (cluster, advert))
    return found


def priority(doors: Sequence[str], host: str) -> int:
    """The first door the highest: it holds the address when all are healthy."""
    return 200 - 10 * list(doors).index(host)


def keepalived_conf(cluster: str, host: str, doors: Sequence[str], addresses: Mapping[str, str], settings: VipSettings,
                    check_url: str) -> str:
    """keepalived.conf for one door host: one VRRP instance, unicast to the other doors, tracking the door's health.

    ``check_url``: the door's own readiness probe, its launch spec's ``ready["http"]`` (_front_door: /healthcheck on the
    host's address, over HTTPS with TLS), so the plan says once where a door answers."""
    mine = addresses[host]
    peers = [addresses[door] for door in doors if door != host]
    vip = ipaddress.ip_address(settings["address"])
    instance = "llmops_" + re.sub(r"[^A-Za-z0-9_]", "_", cluster)
    return "\n".join([
        "# llmops.inference pd_proxy: the front doors' shared address of cluster %s, on %s (rendered from the plan)" % (cluster, host),
        "global_defs {",
        "  router_id %s_%s" % (instance, re.sub(r"[^A-Za-z0-9_]", "_", host)),
        "  vrrp_version 3",
        "  script_user root",
        "  enable_script_security",
        "}",
        "vrrp_script front_door {",
        # --insecure: the door's certificate names the clients' address, not necessarily the host's
        '  script "/usr/bin/curl --silent --fail --insecure --max-time 1 --output /dev/null %s"' % check_url,
        "  interval 1",
        "  timeout 1",
        "  fall 1",
        "  rise 2",
        "}",
        "vrrp_instance %s {" % instance,
        "  state BACKUP",
        "  nopreempt",
        "  interface %s" % settings["interface"],
        "  virtual_router_id %d" % settings["router_id"],
        "  priority %d" % priority(doors, host),
        "  advert_int %s" % format(float(settings["advert_interval"]), "g"),
        "  unicast_src_ip %s" % mine,
        "  unicast_peer {",
        *["    %s" % peer for peer in peers],
        "  }",
        "  virtual_ipaddress {",
        "    %s/%d dev %s" % (vip, vip.max_prefixlen, settings["interface"]),
        "  }",
        "  track_script {",
        "    front_door",
        "  }",
        "}",
        ""])


def firewall_rules(host: str, doors: Sequence[str], addresses: Mapping[str, str]) -> list[str]:
    """The input chain's VRRP rules of a door host, before the rule that accepts the cluster's hosts: adverts from the
    other doors only (a host of the cluster that runs no door has none to send)."""
    if host not in doors:
        return []
    peers = sorted({str(ipaddress.ip_address(addresses[door])) for door in doors if door != host}, key=ipaddress.ip_address)
    return ["    meta l4proto %d ip saddr { %s } accept" % (VRRP, ", ".join(peers)),
            "    meta l4proto %d counter drop" % VRRP]
