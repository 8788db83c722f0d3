# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the mooncake_master role in HA mode (_pool_ha): the layout, refused with every problem, and the
launch spec fields of the etcd members and the masters."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import PlanError
from ansible_collections.llmops.inference.plugins.module_utils.services import _pool_ha as pool_ha


def mooncake_ha(ha, cluster, settings):
    try:
        return pool_ha.layout(cluster, ha, settings)
    except PlanError as err:
        raise AnsibleFilterError(str(err)) from None


def mooncake_ha_specs(layout, settings):
    return pool_ha.launch_fields(layout, settings)


class FilterModule:
    def filters(self):
        return {"mooncake_ha": mooncake_ha, "mooncake_ha_specs": mooncake_ha_specs}
