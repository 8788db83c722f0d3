#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: log_bundle
short_description: Write a cluster's log bundle and its .tar.gz on the controller
version_added: 0.1.0
description:
  - Writes C(<dest>/<cluster>-<UTC time>/) - per host the entries log_collect returned (container logs, masked
    C(docker inspect), host snapshots), the plan (every launch spec, secrets masked, and each rendered config file),
    and C(manifest.json) (cluster, time, hosts, each container's kind, role, instance and DP ranks, files with sizes,
    what could not be collected) - then a C(.tar.gz) of that directory beside it.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: none
    details: Writes the bundle in every mode (it changes no host of the cluster).
  diff_mode:
    support: none
    details: A new bundle each run.
options:
  dest:
    description: Directory the bundle goes into (C(llmops_logs_dir)); created when missing.
    type: path
    required: true
  cluster:
    description: Cluster name.
    type: str
    required: true
  hosts:
    description: By host, the log_collect result, or an unreachable or failed result.
    type: dict
    required: true
  specs:
    description: Every launch spec of the cluster (the plan part of the bundle).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the bundle
  llmops.inference.log_bundle:
    dest: /var/tmp/llmops-logs
    cluster: pd_a2
    hosts: "{{ logs_by_host }}"
    specs: "{{ _llmops_cluster_specs }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
path:
  description: The bundle directory.
  returned: success
  type: str
archive:
  description: The .tar.gz of it.
  returned: success
  type: str
problems:
  description: What could not be collected (also in the manifest).
  returned: success
  type: list
  elements: str
"""

import os
import tarfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.operations import _bundle as bundle


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            cluster=dict(type="str", required=True),
            hosts=dict(type="dict", required=True),
            specs=dict(type="list", elements="dict", required=True),
        ),
        supports_check_mode=False,
    )
    created = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    name = "%s-%s" % (bundle.safe_name(module.params["cluster"]), created)
    root = os.path.join(module.params["dest"], name)
    entries, problems = bundle.plan_entries(module.params["specs"]), []
    for host, result in sorted(module.params["hosts"].items()):
        result = result or {}
        if result.get("unreachable") or result.get("failed") or "entries" not in result:
            problems.append("%s: nothing collected (%s)" % (host, (result.get("msg") or "no answer").splitlines()[0]))
            continue
        problems += ["%s: %s" % (host, problem) for problem in result.get("problems") or []]
        # the host's own names, kept under its directory whatever they say
        entries.update({"%s/%s" % (bundle.safe_part(host), bundle.bundle_path(path)): text for path, text in result["entries"].items()})
    hosts = sorted(module.params["hosts"])
    entries["manifest.json"] = bundle.manifest(module.params["cluster"], created, hosts, entries, problems, module.params["specs"])
    # logs may hold what masking cannot know is private: the bundle is its owner's alone from the start (0700, its files
    # 0600), and made new by this run (a name that exists already, a symlink planted there, fails the module)
    os.makedirs(module.params["dest"], mode=0o700, exist_ok=True)
    try:
        os.mkdir(root, 0o700)
        for path, text in sorted(entries.items()):
            bundle.write_private(root, path, text)
        archive = root + ".tar.gz"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(archive, flags, 0o600), "wb") as out, tarfile.open(fileobj=out, mode="w:gz") as tar:
            tar.add(root, arcname=name)
    except OSError as err:
        module.fail_json(msg="the log bundle was not written: %s (%s). Fix: give llmops_logs_dir a directory of your own."
                         % (err.strerror, err.filename))
    module.exit_json(changed=True, path=root, archive=archive, problems=problems)


if __name__ == "__main__":
    main()
