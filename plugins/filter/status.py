# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of status.yml."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.operations import _status as status


def cluster_status(states_by_host, specs):
    """Rows, a table and the problems of a running cluster (container_state results by host)."""
    return status.cluster_status(states_by_host, specs)


class FilterModule:
    def filters(self):
        return {
            "cluster_status": cluster_status,
        }
