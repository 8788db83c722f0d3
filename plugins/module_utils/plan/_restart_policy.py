# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which containers Docker brings back by itself when they die or their host's Docker engine restarts (a reboot).

A container that can restart alone safely carries Docker's ``unless-stopped`` policy, as kolla-ansible's services
do: the front door (it starts with the members file deploy keeps current), an etcd member (it rejoins from its data
directory), a Mooncake master in HA (a standby leads meanwhile; it comes back as one), the metrics relay, and an
engine that is a DP group by itself. Left down for a deploy, which restarts them in the seed's order: the ranks of a
DP group that spans several containers (they start together, the DP master first, 004 5.3), and a pool service
without HA (a restarted master has lost what the engines registered, so they restart after it, Mooncake #2246).
A container stopped on purpose (stop.yml, docker stop or docker kill) stays stopped: that is ``unless-stopped``.

The policy is no part of a spec's hash (_launch_spec.identity): a running container gets a changed policy through
``docker update`` without a restart.
"""

from __future__ import annotations

import typing as t
from collections import Counter
from collections.abc import Sequence

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

ALONE = "unless-stopped"
NEVER = "no"


def restarts_alone(spec: LaunchSpec, group_sizes: Counter[str]) -> bool:
    """Whether a container can restart by itself: a service but a pool service without HA, and an engine whose DP
    group is no other container's."""
    if spec_meta.is_engine(spec):
        return group_sizes[spec_meta.dp_group(spec)] == 1
    return spec_meta.kind(spec) != "pool_service" or spec_meta.ha(spec) is not None


def with_policies(specs: Sequence[LaunchSpec], enabled: bool) -> list[LaunchSpec]:
    """The cluster's specs, each with its ``restart`` policy (every one NEVER when ``enabled`` is false)."""
    sizes = Counter(spec_meta.dp_group(spec) for spec in specs)
    return [t.cast(LaunchSpec, {**spec, "restart": ALONE if enabled and restarts_alone(spec, sizes) else NEVER})
            for spec in specs]


def of(spec: LaunchSpec) -> str:
    """A spec's policy (NEVER for a spec composed before policies existed)."""
    return spec.get("restart") or NEVER


def to_update(specs: Sequence[LaunchSpec], seen: dict[str, str]) -> dict[str, list[str]]:
    """{policy: [container]} of running containers whose policy (``seen``: name -> Docker's RestartPolicy.Name, "" for
    none) is not their spec's: ``docker update --restart`` sets it, restarting nothing."""
    found: dict[str, list[str]] = {}
    for spec in specs:
        if spec["name"] in seen and (seen[spec["name"]] or NEVER) != of(spec):
            found.setdefault(of(spec), []).append(spec["name"])
    return found
