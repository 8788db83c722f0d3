#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: log_collect
short_description: Collect a host's share of a cluster's log bundle, in one pass
version_added: 0.1.0
description:
  - For every container of the cluster on the host (planned or left by an older plan) - its log (stdout and stderr
    merged in time order) and its C(docker inspect) with the values of secret-looking env vars masked.
  - Host snapshots where the tools exist - C(npu-smi info), C(hccn_tool -i N) link, ip, net_health and tls of each
    planned NPU, C(docker version).
  - Every secret value is replaced in everything returned, since an engine may print its environment or command line.
  - Reads only; the controller writes the bundle (log_bundle).
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  cluster:
    description: Cluster name (the C(llmops.cluster) label).
    type: str
    required: true
  specs:
    description: This host's launch specs (the planned NPUs come from them).
    type: list
    elements: dict
    required: true
  secrets:
    description: The cluster's secret values (the secret_strings filter), replaced wherever they appear.
    type: list
    elements: str
    default: []
  lines:
    description: Last lines of each container log; 0 for the whole log.
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: Collect this host's logs
  llmops.inference.log_collect:
    cluster: pd_a2
    specs: "{{ _llmops_cluster_specs | selectattr('host', 'eq', inventory_hostname) }}"
  register: logs
"""

RETURN = r"""
entries:
  description: Bundle path (relative to the host's directory) to text.
  returned: success
  type: dict
problems:
  description: What could not be collected, and why.
  returned: success
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils.operations import _bundle as bundle
from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import ps_command
from ansible_collections.llmops.inference.plugins.module_utils.preflight._npu import TOOL_PATHS, visible_devices


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            specs=dict(type="list", elements="dict", required=True),
            secrets=dict(type="list", elements="str", default=[], no_log=True),
            lines=dict(type="int", default=0),
        ),
        supports_check_mode=True,
    )
    secrets = module.params["secrets"]
    entries, problems = {}, []
    docker = module.get_bin_path("docker")
    if docker is None:
        module.exit_json(changed=False, entries={}, problems=["docker is not installed"])
    rc, out, err = commands.run(module, ps_command(docker, module.params["cluster"], "{{.Names}}"))
    if rc != 0:
        problems.append("docker ps failed: %s" % err.strip())
    names = sorted(set(out.split()))
    planned = {spec["name"] for spec in module.params["specs"]}
    problems += ["%s: planned but no such container" % name for name in sorted(planned - set(names))]
    tail = ["--tail", str(module.params["lines"])] if module.params["lines"] > 0 else []
    for name in names:
        rc, out, err = commands.run(module, [docker, "logs", "--timestamps"] + tail + [name])
        entries["containers/%s.log" % bundle.safe_name(name)] = bundle.merged_log(out, err) if rc == 0 else "docker logs failed: %s\n" % err
        rc, out, err = commands.run(module, [docker, "inspect", name])
        entries["containers/%s.inspect.json" % bundle.safe_name(name)] = bundle.mask_inspect(out) if rc == 0 else err
    rc, out, err = commands.run(module, [docker, "version"])
    entries["host/docker-version.txt"] = out + err
    npu_smi = module.get_bin_path("npu-smi", opt_dirs=TOOL_PATHS)
    if npu_smi:
        for filename, argv in bundle.NPU_SNAPSHOTS:
            rc, out, err = commands.run(module, [npu_smi] + argv[1:])
            entries["host/" + filename] = out + err
    hccn_tool = module.get_bin_path("hccn_tool", opt_dirs=TOOL_PATHS)
    if hccn_tool:
        for device in visible_devices(module.params["specs"]):
            text = []
            for _what, argv in bundle.HCCN_SNAPSHOTS:
                rc, out, err = commands.run(module, [hccn_tool, "-i", str(device)] + argv)
                text.append("$ hccn_tool -i %d %s\n%s%s" % (device, " ".join(argv), out, err))
            entries["host/hccn_tool-npu%d.txt" % device] = "".join(text)
    if os.path.exists("/etc/hccn.conf"):
        with open("/etc/hccn.conf", encoding="utf-8", errors="replace") as handle:
            entries["host/hccn.conf"] = handle.read()
    entries = {path: bundle.redact(text, secrets) for path, text in entries.items()}
    module.exit_json(changed=False, entries=entries, problems=problems)


if __name__ == "__main__":
    main()
