# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of a deploy: the containers' labels and run specs, their live secrets, the rollout and the front door."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.module_utils.operations import _container_state as container_state
from ansible_collections.llmops.inference.plugins.module_utils.operations import _rollout as rollout
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members


def launch_labels(spec, cluster):
    """The labels deploy mode puts on a container: cluster, wave, spec hash and the spec record."""
    return {
        container_state.CLUSTER_LABEL: cluster,
        "llmops.wave": str(spec["wave"]),
        container_state.HASH_LABEL: launch.spec_hash(spec),
        rollout.RECORD_LABEL: rollout.encode_record(spec),
    }


def launch_run_specs(specs, cluster, sources):
    """The specs containers_started starts: each with its labels, its env with the secret values put in and the
    content of its secret files (deploy only)."""
    try:
        return [_run_spec(spec, cluster, sources) for spec in specs]
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def _run_spec(spec, cluster, sources):
    env, files = secret_files.split(spec.get("secret_env"), launch.secret_values(spec.get("secret_env"), sources))
    return dict(spec, labels=launch_labels(spec, cluster), env=dict(spec["env"], **env), secret_files=files)


def launch_live_secrets(specs, sources):
    """{host path: content} of the specs' key files that their running processes read again (deploy only)."""
    try:
        found = {}
        for spec in specs:
            if (spec.get("secret_env") or {}).get("digests"):
                found.update(secret_files.live_contents(spec["secret_env"], launch.secret_values(spec["secret_env"], sources)))
        return found
    except ValueError as err:
        raise AnsibleFilterError(str(err)) from None


def launch_rollout(states_by_host, specs, waves, machines=None):
    """The steps of a deploy run and why each container (re)starts (container_state results by host)."""
    return rollout.launch_steps(states_by_host, specs, waves, machines)


def launch_front_door(specs):
    """{host, url, ca, secret_env, members} of the cluster's front door (its PD proxy), else None."""
    return members.door_of(specs)


class FilterModule:
    def filters(self):
        return {
            "launch_labels": launch_labels,
            "launch_run_specs": launch_run_specs,
            "launch_live_secrets": launch_live_secrets,
            "launch_rollout": launch_rollout,
            "launch_front_door": launch_front_door,
        }
