#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: engine_plan
short_description: Compute the per-DP-rank plan of an inference cluster
version_added: 0.1.0
description:
  - Turns one cluster description (DP groups, their nodes and devices, port bases, connector
    choice) into the plan of every rank and every C(vllm serve) process, the way the vendor
    guides compute it by hand with C(launch_online_dp.py).
  - Checks every rule the guides state (rank coverage, device fit, DP master, unique ports
    per host, unique engine ids and lookup ports, kv roles, declared Mooncake topology,
    KV pool and UCM settings) and fails listing each broken rule with its host, rank,
    variable and fix.
  - Pure computation on the controller; it reads and changes nothing.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
  - llmops.inference.attributes.action
attributes:
  action:
    support: full
    details: An action plugin of the same name runs the planner inside the controller's worker; the module is the same code.
  check_mode:
    support: full
    details: Nothing is changed in either mode; the plan is returned in check mode too.
  diff_mode:
    support: none
    details: There is nothing to diff.
options:
  cluster:
    description:
      - The cluster description. Keys C(name), C(hardware) (a2, a3, a5, h100, cpu), C(connector)
        (none, ucm, mooncake, nixl), C(groups) (per role prefill, decode or colocated - dp_size, tp_size,
        launch, dp_rpc_port, dp_address, api_port, kv_port, kv_role, engine_id_template, set_visible_devices,
        lookup_rpc_port_base, hccl_port_range, memcache_dp_init_barrier, consumer_is_to_load,
        consumer_is_to_put), C(nodes) (host, address, nic, role, instance, local_ranks, rank_start, api_port,
        headless, api_server_count, device_offset, pythonhashseed, tenant_id), and optional
        C(devices_per_node), C(network_env), C(mooncake_extra_config), C(nixl_extra_config), C(ucm), C(pool),
        C(services).
      - C(instances) (optional, per role a mapping of instance name to overrides - dp_size, tp_size, dp_rpc_port,
        dp_address, api_port, kv_port, engine_id_template, lookup_rpc_port_base, hccl_port_range, image) adds DP groups
        of a role beyond its first; a node's C(instance) names the one it runs ranks of.
      - What C(vllm serve) gets besides the plan's own flags, checked too - C(model), C(model_from_hub),
        C(mounts) (the engines' volumes, src:dst[:mode]), C(args) and C(role_args) (vllm_engine_args and
        vllm_engine_role_args). Refused are flags the plan renders, flags vLLM lacks, values its parser rejects, settings
        prefill and decode must share that differ, and a model vLLM would take for a hub id.
      - See roles/vllm_engine/meta/argument_specs.yml for the inventory variables each key comes from.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Plan the four-node A2 PD cluster
  llmops.inference.engine_plan:
    cluster:
      name: pd_a2
      hardware: a2
      connector: mooncake
      groups:
        prefill: {dp_size: 2, tp_size: 8, dp_rpc_port: 12321, kv_port: 30000, api_port: 9081}
        decode: {dp_size: 8, tp_size: 2, kv_port: 30100, api_port: 9900}
      nodes:
        - {host: p0, address: 192.0.2.11, role: prefill, local_ranks: 1, rank_start: 0}
        - {host: p1, address: 192.0.2.12, role: prefill, local_ranks: 1, rank_start: 1, api_port: 9082, headless: true}
        - {host: d0, address: 192.0.2.13, role: decode, local_ranks: 4, rank_start: 0}
        - {host: d1, address: 192.0.2.14, role: decode, local_ranks: 4, rank_start: 4}
  delegate_to: localhost
  run_once: true
  register: plan
"""

RETURN = r"""
plan:
  description: The plan. C(ranks) has one entry per DP rank, C(processes) one per C(vllm serve).
  returned: success
  type: dict
  contains:
    cluster:
      description: Cluster name.
      type: str
      returned: success
    kv_pool:
      description: The KV pool backend (mooncake, memcache), or null without a pool.
      type: str
      returned: success
    kv_pool_store:
      description: What the collection deploys for the pool service's state (C(etcd) of HA Mooncake masters); absent
        without one.
      type: str
      returned: when the KV pool has a store
    start_waves:
      description:
        - Engine roles grouped by start wave. Prefill and decode start together (004 5.3); with a KV
          pool decode is ready before prefill starts (004 5.4).
      type: list
      elements: list
      returned: success
    ranks:
      description:
        - Host, role, instance (its DP group - the role for the role's first instance, else <role>-<name>), dp_rank,
          local_index, devices, port, api, dp_address, engine_id, lookup_rpc_port, HCCL ranges, Mooncake ports.
      type: list
      elements: dict
      returned: success
    processes:
      description: One per engine process, with its topology flags (args), env and kv_transfer_config JSON.
      type: list
      elements: dict
      returned: success
    ports:
      description: Every port (range) each host binds, with its owner.
      type: dict
      returned: success
    proxy:
      description: The prefill API endpoints and every decode rank endpoint the PD proxy must list.
      type: dict
      returned: success
problems:
  description: Each broken rule, when the plan fails.
  returned: failure
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_result


def main():
    module = AnsibleModule(argument_spec=dict(cluster=dict(type="dict", required=True)), supports_check_mode=True)
    result = plan_result(module.params["cluster"])
    if result.get("failed"):
        module.fail_json(**{k: v for k, v in result.items() if k != "failed"})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
