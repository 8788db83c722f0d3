# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that reveal secret values to the tasks that write them, and nowhere else."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.module_utils.operations import _bundle as bundle
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch


def secret_values(record, sources):
    """{name: value} of a spec's secret environment, from the host's variables (deploy mode only)."""
    try:
        return launch.secret_values(record, sources)
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def secret_strings(sources):
    """Every secret value of the cluster (for logs.yml to redact), from the host's variables."""
    return bundle.secret_strings(sources)


class FilterModule:
    def filters(self):
        return {
            "secret_values": secret_values,
            "secret_strings": secret_strings,
        }
