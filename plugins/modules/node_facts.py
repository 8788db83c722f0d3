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
    and health, and every process using an NPU (C(npu-smi info)). C(gpu) - the GPUs C(nvidia-smi) lists and the
    processes using them.
  - C(docker) - the engine's server version, whether it answers, its runtimes (nvidia for GPUs), and whether the
    Python C(requests) library community.docker needs on the host imports.
  - C(listeners) - every listening TCP port with the process and, for the cluster's containers, the container holding
    it; and C(port_ranges), the ephemeral port range and the reserved ports. C(devices) - every process holding a C(/dev/davinciN) open, with its container.
  - C(paths), C(nic), C(images) - the given host paths, network interface and images.
  - C(memory) - total and available memory, C(/dev/shm) size. C(versions) - Ascend driver, firmware and CANN
    toolkit versions from their info files.
  - C(fabric) - per NPU of O(npus), what C(hccn_tool) says of its link, network health, IP and TLS switch.
    C(ping) - whether each ping of O(ping) got every packet back.
  - C(firewall) - C(nft) (its path or null), whether the table O(firewall_table) is loaded, and whether the file
    O(firewall_file) and the table's boot unit exist. With the host firewall off, deploy removes the collection's
    table, file and unit only where one of them is there.
  - C(etcd) - for each endpoint of O(etcd), whether this host reaches it and whether its C(/health) says healthy.
  - Reads only.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.read_only
options:
  gather:
    description: Which facts to gather.
    type: list
    elements: str
    choices: [npu, gpu, docker, listeners, devices, paths, nic, images, memory, versions, fabric, ping, firewall, etcd]
    default: [npu]
  npus:
    description: The NPUs whose fabric to look at (C(fabric)) - C(hccn_tool -i N) link, net_health, ip and tls.
    type: list
    elements: int
    default: []
  ping:
    description: Pings to send (C(ping)) - each C(npu) pings C(address) with C(hccn_tool -i npu -ping -g address).
    type: list
    elements: dict
    default: []
  cluster:
    description: Cluster name; processes in its containers (C(llmops.cluster) label) are named by container.
    type: str
  paths:
    description: Host paths to look at (C(paths)) - whether each exists, its kind, a model directory's config.json and
      safetensors files, and the free space of its file system.
    type: list
    elements: str
    default: []
  nic:
    description: The network interface to look at (C(nic)) - exists, state, IPv4 addresses.
    type: str
  images:
    description: Images whose presence to check (C(images)).
    type: list
    elements: str
    default: []
  firewall_table:
    description: The collection's nftables table (C(firewall)), in family C(inet).
    type: str
    default: ""
  firewall_file:
    description: The rules file of that table (C(firewall)).
    type: str
    default: ""
  etcd:
    description: host:port client endpoints of the etcd of HA Mooncake masters (C(etcd)).
    type: list
    elements: str
    default: []
"""

EXAMPLES = r"""
- name: Look at the NPUs
  llmops.inference.node_facts:
    gather: [npu]
  register: node
"""

RETURN = r"""
facts:
  description: By kind gathered - C(npu) with tool (path or null), version, devices (by NPU id - name, health) and
    processes (npu, pid, name, memory_mb); C(docker), C(listeners), C(devices), C(paths), C(nic), C(images),
    C(memory), C(versions), C(firewall), C(etcd) as described above.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.preflight._node_gather import ARGUMENT_SPEC, gathered


def main():
    module = AnsibleModule(
        argument_spec=ARGUMENT_SPEC,
        supports_check_mode=True,
    )
    module.exit_json(changed=False, facts=gathered(module, set(module.params["gather"]), module.params))


if __name__ == "__main__":
    main()
