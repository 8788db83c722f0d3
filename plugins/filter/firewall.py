# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the host_firewall role: the nftables tables the plan gives each host."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall


def firewall_rulesets(plan, settings):
    """{host: {table, digest, text, ports, front_door, metrics, cluster_hosts}} of every host of the plan."""
    try:
        return firewall.rulesets(plan, settings or {})
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def firewall_table(cluster):
    """The name of the collection's nftables table of a cluster."""
    return firewall.table_name(cluster)


def firewall_problems(listings, rules):
    """Status problems: hosts whose table is missing or not the plan's (listings and rules by host)."""
    return firewall.problems(listings, rules)


class FilterModule:
    def filters(self):
        return {"firewall_rulesets": firewall_rulesets, "firewall_table": firewall_table, "firewall_problems": firewall_problems}
