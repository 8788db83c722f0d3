#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: host_firewall_table
short_description: Load a host's nftables table from the plan and keep it loaded across reboots, or remove it
version_added: 0.1.0
description:
  - O(state=present) writes the rules file and loads it with C(nft -f), one transaction that replaces the collection's
    table only, unless the loaded table already carries the digest of these rules and the file and the unit hold them.
    It writes the table's systemd unit (C(/etc/systemd/system/llmops-firewall-<table>.service)), which loads the same
    file at boot and again after C(nftables.service) starts, restarts or reloads (Debian's C(/etc/nftables.conf)
    begins with C(flush ruleset)); where systemd runs, it enables and starts the unit.
  - O(state=absent) deletes the table, its rules file and its unit, whichever is there.
  - Other owners' tables are never touched.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Reports whether the table, its file or its unit would change; writes, loads and removes nothing.
  diff_mode:
    support: full
    details: With O(state=present), the rules file as it is on the host against the planned rules, when they differ.
options:
  table:
    description: The collection's table, in family C(inet).
    type: str
    required: true
  file:
    description: The table's rules file (absolute).
    type: path
    required: true
  text:
    description: The rules, as plan mode renders them (O(state=present)).
    type: str
  state:
    description: Whether the table is loaded and kept loaded, or gone.
    type: str
    choices: [present, absent]
    default: present
"""

EXAMPLES = r"""
- name: Load this host's table
  llmops.inference.host_firewall_table:
    table: llmops_pd_a2
    file: /etc/llmops/firewall/llmops_pd_a2.nft
    text: "{{ host_firewall_rules.text }}"

- name: Remove it, the firewall being off
  llmops.inference.host_firewall_table:
    table: llmops_pd_a2
    file: /etc/llmops/firewall/llmops_pd_a2.nft
    state: absent
"""

RETURN = r"""
unit:
  description: The path of the table's systemd unit.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.services import _firewall as firewall


def main():
    module = AnsibleModule(
        argument_spec=dict(table=dict(type="str", required=True), file=dict(type="path", required=True),
                           text=dict(type="str"), state=dict(type="str", choices=["present", "absent"], default="present")),
        required_if=[("state", "present", ["text"])],
        supports_check_mode=True,
    )
    table, path, text = module.params["table"], module.params["file"], module.params["text"]
    unit = firewall.boot_unit_path(table)
    if module.params["state"] == "absent":
        found = firewall.found_on_host(module, table, path)
        there = any(found[k] for k in ("loaded", "file", "unit"))
        if module.check_mode or not there:
            module.exit_json(changed=there, unit=unit)
        removed, failed = firewall.remove(module, table, path)
        if failed:
            module.fail_json(msg=failed, unit=unit)
        module.exit_json(changed=removed, unit=unit)
    if firewall.found_on_host(module, table, path, text).get("current"):
        module.exit_json(changed=False, unit=unit)
    diff = {"before_header": path, "after_header": path, "before": firewall.rules_on_host(path), "after": text}
    if not module.check_mode:
        failed = firewall.load(module, path, text, table)
        if failed:
            module.fail_json(msg=failed, unit=unit)
    module.exit_json(changed=True, unit=unit, diff=diff)


if __name__ == "__main__":
    main()
