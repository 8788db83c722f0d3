# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several front doors behind one address: the checks of its settings, keepalived's configuration, VRRP's rules."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.services import _front_door_vip as vip

DOORS = ["pd_a2_p0", "pd_a2_p1"]
ADDRESSES = {"pd_a2_p0": "10.213.7.41", "pd_a2_p1": "10.213.7.42", "pd_a2_d0": "10.213.7.43"}
SETTINGS: vip.VipSettings = {"address": "10.213.7.40", "interface": "eth0", "router_id": 51, "advert_interval": 0.5}


def test_good_settings_have_no_problem():
    assert vip.problems(SETTINGS, DOORS, ADDRESSES, "pd_a2") == []


def test_each_bad_setting_is_named_with_its_fix():
    def found(doors: tuple[str, ...] = tuple(DOORS), **changed):
        return " ".join(vip.problems({**SETTINGS, **changed}, list(doors), ADDRESSES, "pd_a2"))
    assert "pd_proxy_vip 'ten' is no IP address" in found(address="ten")
    assert "needs two or more front doors, pd_proxy_hosts lists 1" in found(doors=("pd_a2_p0",))
    assert "lists a host twice (pd_a2_p0)" in found(doors=("pd_a2_p0", "pd_a2_p0"))
    assert "pd_proxy_vip 10.213.7.42 is the address of pd_a2_p1" in found(address="10.213.7.42")
    assert "pd_proxy_vip_interface 'eth0; rm' is no network interface name" in found(interface="eth0; rm")
    assert "pd_proxy_vip_router_id 256 is no VRRP router id" in found(router_id=256)
    assert "pd_proxy_vip_router_id True" in found(router_id=True)
    assert "pd_proxy_vip_advert_interval 0 is out of VRRP 3's range" in found(advert_interval=0)
    assert all(text.startswith("cluster pd_a2: ") and "Fix: " in text
               for text in vip.problems({**SETTINGS, "router_id": 0, "interface": ""}, ["pd_a2_p0"], ADDRESSES, "pd_a2"))


def test_each_door_advertises_to_the_others_by_unicast_and_tracks_its_own_health():
    url = "https://10.213.7.42:8081/healthcheck"  # the door's readiness probe (its spec's ready["http"])
    text = vip.keepalived_conf("pd-a2", "pd_a2_p1", DOORS, ADDRESSES, SETTINGS, url)
    lines = [line.strip() for line in text.splitlines()]
    assert "vrrp_version 3" in lines and "nopreempt" in lines and "state BACKUP" in lines
    assert "unicast_src_ip 10.213.7.42" in lines
    assert lines[lines.index("unicast_peer {") + 1:lines.index("unicast_peer {") + 3] == ["10.213.7.41", "}"]
    assert "10.213.7.40/32 dev eth0" in lines and "virtual_router_id 51" in lines and "advert_int 0.5" in lines
    assert "vrrp_instance llmops_pd_a2 {" in lines and "router_id llmops_pd_a2_pd_a2_p1" in lines
    assert '"/usr/bin/curl --silent --fail --insecure --max-time 1 --output /dev/null %s"' % url in text
    # the first door holds the address while all are healthy
    assert vip.priority(DOORS, "pd_a2_p0") > vip.priority(DOORS, "pd_a2_p1")


def test_vrrp_reaches_a_door_from_the_other_doors_only():
    assert vip.firewall_rules("pd_a2_p0", DOORS, ADDRESSES) == ["    meta l4proto 112 ip saddr { 10.213.7.42 } accept",
                                                                "    meta l4proto 112 counter drop"]
    assert vip.firewall_rules("pd_a2_d0", DOORS, ADDRESSES) == []
