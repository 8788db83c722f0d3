# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of roles/heal_rulebook: the controller's collections the healing service is given."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.module_utils.services import _heal_service as heal_service


def collection_paths(found, names):
    try:
        return heal_service.collection_paths(found, names)
    except heal_service.MissingCollection as err:
        raise AnsibleFilterError(str(err)) from None


def inventory_copies(sources):
    try:
        return heal_service.inventory_copies(sources)
    except heal_service.NotAnInventory as err:
        raise AnsibleFilterError(str(err)) from None


class FilterModule:
    def filters(self):
        return {
            "collection_paths": collection_paths,
            "inventory_copies": inventory_copies,
        }
