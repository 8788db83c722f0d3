#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: container_state
short_description: Compare a host's cluster containers with their launch specs, in one look
version_added: 0.1.0
description:
  - Lists the host's containers labelled with the cluster (one C(docker ps)) and compares each
    launch spec's hash with the C(llmops.spec-hash) label of its container.
  - Deploy mode starts only what this reports as not C(ok), so a run with nothing changed makes
    one call per host instead of one per container.
  - Reads only; uses the docker CLI of the host. Deploy's one look at a host before preflight also says which
    config files would change and whether the host firewall's table is loaded, so a run that starts nothing
    makes one call per host.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Reads only, in both modes.
  diff_mode:
    support: full
    details: Shows, per changed container, the settings it runs with against those the plan wants (image, flags,
      env, mounts, devices, config files).
options:
  cluster:
    description: Cluster name (the C(llmops.cluster) label).
    type: str
    required: true
  specs:
    description: This host's launch specs.
    type: list
    elements: dict
    required: true
  changed_files:
    description: Config files just rewritten; a container that mounts one of them is restarted.
    type: list
    elements: str
    default: []
  files:
    description:
      - The host's config files as deploy writes them (path to content). Those whose content on the host differs are
        returned in RV(changed_files) and count as rewritten (see O(changed_files)); nothing is written.
    type: dict
    default: {}
  firewall_table:
    description: The collection's nftables table (family C(inet)); when given, RV(firewall) says whether it is loaded.
    type: str
  firewall_file:
    description: That table's rules file (RV(firewall)).
    type: str
  firewall_text:
    description: The rules the plan writes to that file; RV(firewall) then also says whether the loaded table and the
      file are those (C(current)), so that deploy leaves a current firewall alone.
    type: str
  front_door:
    description:
      - On the host of the PD proxy, its front door - when the proxy runs with its planned spec, its admin API is asked
        which members it lists (RV(front_door)), so a run with nothing to add or take out asks it nothing more.
    type: dict
    suboptions:
      url:
        description: The front door's URL (the proxy spec's C(meta.api_url)).
        type: str
        required: true
      ca:
        description: The CA file to check an HTTPS front door's certificate with.
        type: str
        default: ""
      admin_key:
        description: An admin key (the first line is used); empty when the front door has none. Never shown.
        type: str
        default: ""
      members:
        description: "The plan's members by role: C({prefill: [host:port], decode: [...]})."
        type: dict
        required: true
  neighbours:
    description:
      - Names of the containers other inventory hosts on this machine plan (two instances on one server), which are
        not counted in RV(extra).
    type: list
    elements: str
    default: []
  details:
    description:
      - Also return each container's state, status, start time, restart count and image, and whether its readiness
        probe passes now (one round, for status reports).
    type: bool
    default: false
  preflight:
    description:
      - The options of M(llmops.inference.node_facts) (C(gather) and what it takes). When this host has a container to
        start (RV(start) is not empty), those facts are gathered in this same call and returned in RV(preflight), so
        that preflight, which runs next, does not ask the host again. A host with nothing to start gathers nothing.
    type: dict
"""

EXAMPLES = r"""
- name: Compare the running containers with the plan
  llmops.inference.container_state:
    cluster: pd_a2
    specs: "{{ _llmops_cluster_specs | selectattr('host', 'eq', inventory_hostname) }}"
  register: state
"""

RETURN = r"""
status:
  description: By container name - C(ok), C(changed), C(stopped) or C(missing).
  returned: success
  type: dict
start:
  description: Containers to create or start (every status but C(ok)).
  returned: success
  type: list
  elements: str
restart:
  description: Containers whose spec is unchanged but a mounted config file was rewritten.
  returned: success
  type: list
  elements: str
running:
  description: Containers of the specs that are up.
  returned: success
  type: list
  elements: str
extra:
  description: Containers of the cluster on this host that no spec names (left by an older plan).
  returned: success
  type: list
  elements: str
changes:
  description: By name of each C(changed) container, what differs from the spec it was started with (image, each
    flag, env var, mount, device, config file), one line each.
  returned: success
  type: dict
policies:
  description: By restart policy (C(unless-stopped) or C(no)), the containers up with their spec that run with another
    one; deploy sets it with C(docker update), restarting nothing.
  returned: success
  type: dict
ha_roles:
  description: By name of each running service in HA (Mooncake masters, etcd members), its role now - leader, warmup,
    standby, follower or down. Deploy rolls the leader last.
  returned: success
  type: dict
changed_files:
  description: Those of O(files) whose content on the host differs (or that are missing), and the key files that a
    spec's process reads again when they change (its C(secret_env) C(digests)) whose value on the host differs.
  returned: success
  type: list
  elements: str
firewall:
  description: With O(firewall_table) - C(nft) (its path or null), C(loaded) (the table is loaded) and C(file) (its
    rules file exists), as M(llmops.inference.node_facts) gathers them; with O(firewall_text) also C(current) (the loaded
    table carries the digest of those rules and the file holds them).
  returned: success and firewall_table given
  type: dict
preflight:
  description: With O(preflight) and a container to start - the facts M(llmops.inference.node_facts) returns (its
    RV(llmops.inference.node_facts#module:facts)).
  returned: success, preflight given and RV(start) not empty
  type: dict
front_door:
  description: With O(front_door), when the proxy runs with its planned spec - the plan's members the proxy does not
    list (C(missing)) and those it lists that the plan does not have (C(unplanned)), by role; or C(error) when its
    admin API did not answer.
  returned: success, front_door given and the proxy up with its spec
  type: dict
containers:
  description: With O(details), by container name (specs' and extra ones) - state, status, started_at, restart_count,
    image, ready (the readiness probe passes now), ha_role for a service in HA, and for a ready PD proxy with failover
    front_door - each member's state as it sees it (serving, ejected, probation), by C(host:port).
  returned: success and details
  type: dict
"""

import http.client

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils._files import differing
from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils.operations._container_state import (
    INSPECT_FORMAT,
    POLICY_FORMAT,
    cluster_containers,
    compare,
    parse_inspect,
    parse_policies,
)
from ansible_collections.llmops.inference.plugins.module_utils.operations._readiness import Docker, ha_role, probe
from ansible_collections.llmops.inference.plugins.module_utils.operations._rollout import RECORD_LABEL, decode_record, record_lines, spec_changes, spec_record
from ansible_collections.llmops.inference.plugins.module_utils.plan import _restart_policy as restart_policy
from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import spec_hash
from ansible_collections.llmops.inference.plugins.module_utils.preflight._node_gather import ARGUMENT_SPEC, gathered
from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members
from ansible_collections.llmops.inference.plugins.module_utils.services._firewall import found_on_host


def main():
    module = AnsibleModule(
        argument_spec=dict(
            cluster=dict(type="str", required=True),
            specs=dict(type="list", elements="dict", required=True),
            changed_files=dict(type="list", elements="str", default=[]),
            neighbours=dict(type="list", elements="str", default=[]),
            details=dict(type="bool", default=False),
            preflight=dict(type="dict"),
            files=dict(type="dict", default={}),
            firewall_table=dict(type="str"),
            firewall_file=dict(type="str"),
            firewall_text=dict(type="str"),
            front_door=dict(type="dict", options=dict(
                url=dict(type="str", required=True),
                ca=dict(type="str", default=""),
                admin_key=dict(type="str", default="", no_log=True),
                members=dict(type="dict", required=True),
            )),
        ),
        supports_check_mode=True,
    )
    docker = module.get_bin_path("docker", required=True)
    running = cluster_containers(module, docker, module.params["cluster"])
    specs = module.params["specs"]
    hashes = {spec["name"]: spec_hash(spec) for spec in specs}
    # what config_files would write: config files, and the key files a running process reads again (by their digests)
    rewritten = [path for path, _before, _content in differing(module.params["files"])]
    rewritten += secret_files.differing(secret_files.live_digests(specs))
    result = compare(specs, hashes, running, list(module.params["changed_files"]) + rewritten, module.params["neighbours"])
    result["changed_files"] = rewritten
    if module.params["firewall_table"]:
        result["firewall"] = found_on_host(module, module.params["firewall_table"], module.params["firewall_file"],
                                           module.params["firewall_text"])
    door, proxy = module.params["front_door"], members.proxy_of(specs)
    if door and proxy is not None and result["status"].get(proxy["name"]) == "ok":
        result["front_door"] = members.compared(door["url"], members.first_key(door["admin_key"]), door["ca"] or None, door["members"])
    result["changes"], diff = changes(module, docker, specs, result)
    result["policies"] = policies(module, docker, specs, result["status"])
    if module.params["preflight"] and result["start"]:
        result["preflight"] = preflight_facts(module, module.params["preflight"], {c["id"]: name for name, c in running.items() if c["id"]})
    # the running services in HA that lead now: deploy rolls them last (one failover)
    result["ha_roles"] = {name: role for name, role in ((s["name"], ha_role(s)) for s in specs if s["name"] in result["running"]) if role}
    if module.params["details"]:
        result["containers"] = details(module, docker, specs, running, result["running"], result["ha_roles"])
    # "changed" when a container runs with other settings than planned, so --diff shows them
    module.exit_json(changed=bool(diff), diff=diff, **result)


def policies(module, docker, specs, status):
    """{policy: [container]} of the host's containers up with their spec but another restart policy (docker update
    sets it in place): one docker inspect of them (a label could not say it: docker update changes no label)."""
    up = [spec for spec in specs if status.get(spec["name"]) == "ok"]
    if not up:
        return {}
    # a container gone since the look's docker ps is left out of the answer (inspect still prints the others)
    _rc, out, _err = commands.run(module, [docker, "inspect", "-f", POLICY_FORMAT] + [spec["name"] for spec in up])
    return restart_policy.to_update(up, parse_policies(out))


def preflight_facts(module, options, containers):
    """node_facts's facts, its options checked as node_facts checks them; the cluster's containers ({id: name}) as the
    look just listed them."""
    found = ArgumentSpecValidator(ARGUMENT_SPEC).validate(options)
    if found.error_messages:
        module.fail_json(msg="preflight: %s" % "; ".join(found.error_messages))
    return gathered(module, set(found.validated_parameters["gather"]), found.validated_parameters, containers)


def changes(module, docker, specs, result):
    """What changed in each changed container, from the spec record its label keeps; and the --diff view."""
    names = [name for name, value in result["status"].items() if value == "changed" and name not in result["restart"]]
    found, lines, diff = {}, {}, []
    if names:
        _rc, out, _err = commands.run(module, [docker, "inspect", "-f", '{{.Name}}\t{{index .Config.Labels "%s"}}' % RECORD_LABEL] + names)
        for line in out.splitlines():
            name, _sep, text = line.strip().lstrip("/").partition("\t")
            found[name] = decode_record(text) if text and text != "<no value>" else None
    for spec in specs:
        name = spec["name"]
        if name in result["restart"]:
            lines[name] = ["a config file it mounts was rewritten"]
        elif name in names:
            old, new = found.get(name), spec_record(spec)
            lines[name] = spec_changes(old, new)
            diff.append({"before_header": "%s (running)" % name, "after_header": "%s (plan)" % name,
                         "before": "\n".join(record_lines(old) if old else ["(no record of its spec)"]) + "\n",
                         "after": "\n".join(record_lines(new)) + "\n"})
    return lines, diff


def details(module, docker, specs, running, up, ha_roles):
    """State, uptime, restarts, image and readiness now of every container of the cluster on the host."""
    found = {}
    if running:
        _rc, out, _err = commands.run(module, [docker, "inspect", "-f", INSPECT_FORMAT] + sorted(running))
        found = parse_inspect(out)
    by_name = {spec["name"]: spec for spec in specs}
    probes = Docker(module)
    containers = {}
    for name, seen in running.items():
        entry = dict(found.get(name, {}), state=seen["state"], status=seen["status"])
        entry["ready"] = bool(name in up and name in by_name and probe(probes, by_name[name]))
        if name in ha_roles:
            entry["ha_role"] = ha_roles[name]
        if entry["ready"] and spec_meta.kind(by_name[name]) == "proxy" and spec_meta.of(by_name[name]).get("failover"):
            entry["front_door"] = door_view(by_name[name])
        containers[name] = entry
    return containers


def door_view(spec):
    """{member: state} as the running front door sees its members (its /metrics, open like /healthcheck), None when
    it does not answer."""
    try:
        status, body = http_get(spec_meta.api_url(spec) + "/metrics", ca_path=spec_meta.ca(spec))
    except (OSError, http.client.HTTPException):
        return None
    return members.door_states(body.decode(errors="replace")) if status == 200 else None


if __name__ == "__main__":
    main()
