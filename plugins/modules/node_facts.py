#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: node_facts
short_description: What a cluster host has that a plan depends on, in one pass
version_added: 0.1.0
description:
  - Returns structured facts; the comparison with the plan happens on the controller (filters of the collection).
  - C(npu) - the C(npu-smi) found (on the PATH or where the Ascend driver installs it), its version, each NPU's name
    and health, and every process using an NPU (C(npu-smi info)).
  - Reads only.
author:
  - llmops.inference contributors (@llmops)
attributes:
  check_mode:
    support: full
    description: Reads only, in both modes.
  diff_mode:
    support: none
    description: Reads only.
options:
  gather:
    description: Which facts to gather.
    type: list
    elements: str
    choices: [npu]
    default: [npu]
"""

EXAMPLES = r"""
- name: Look at the NPUs
  llmops.inference.node_facts:
    gather: [npu]
  register: node
"""

RETURN = r"""
facts:
  description: By kind - C(npu) with tool (path or null), version, devices (by NPU id - name, health) and processes
    (npu, pid, name, memory_mb).
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils._npu import TOOL_PATHS, parse_npu_smi_info


def npu_facts(module):
    tool = module.get_bin_path("npu-smi", opt_dirs=TOOL_PATHS)
    if tool is None:
        return {"tool": None}
    rc, out, err = module.run_command([tool, "info"])
    if rc != 0:
        return {"tool": tool, "error": (err or out).strip()[:500]}
    return dict(parse_npu_smi_info(out), tool=tool)


def main():
    module = AnsibleModule(
        argument_spec=dict(gather=dict(type="list", elements="str", choices=["npu"], default=["npu"])),
        supports_check_mode=True,
    )
    facts = {}
    if "npu" in module.params["gather"]:
        facts["npu"] = npu_facts(module)
    module.exit_json(changed=False, facts=facts)


if __name__ == "__main__":
    main()
