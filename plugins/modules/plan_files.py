#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: plan_files
short_description: Write a cluster's launch specs as plan files, in one pass
version_added: 0.1.0
description:
  - Writes every launch spec of a cluster to C(<dest>/<host>/<name>.json), the plan-mode
    contract of the collection, creating the host directories it needs.
  - One call for the whole cluster, run once on the controller; a file whose content is
    unchanged is not rewritten.
  - A plan directory, host directory or plan file that is a symlink another user owns (someone else's, in a shared
    directory such as C(/tmp)) fails the module before anything is written.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files would be written and writes nothing.
  diff_mode:
    support: none
    details: The plan files are the diff; compare two plan directories.
options:
  dest:
    description: The plan directory (C(llmops_plan_dir)).
    type: path
    required: true
  specs:
    description: Launch specs; C(host) and C(name) place each one.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Write the plan
  llmops.inference.plan_files:
    dest: /tmp/plan
    specs: "{{ _llmops_cluster_specs }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
written:
  description: Files written (or that would be, in check mode).
  returned: success
  type: list
  elements: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils._files import read_text, write_text


def spec_path(dest, spec):
    for key in ("host", "name"):
        value = spec.get(key)
        if not value or os.sep in value or value in (".", ".."):
            raise ValueError("launch spec %r has no usable %s" % (spec.get("name"), key))
    return os.path.join(dest, spec["host"], spec["name"] + ".json")


def foreign_link(paths):
    """The first of ``paths`` that is a symlink another user owns (in a shared directory such as /tmp, someone could
    point the plan's files at theirs, or at files of ours to overwrite), else None."""
    for path in paths:
        if os.path.islink(path) and os.lstat(path).st_uid != os.geteuid():
            return path
    return None


def spec_text(spec):
    return json.dumps(spec, indent=2, ensure_ascii=False) + "\n"


def main():
    module = AnsibleModule(
        argument_spec=dict(dest=dict(type="path", required=True), specs=dict(type="list", elements="dict", required=True)),
        supports_check_mode=True,
    )
    dest = module.params["dest"]
    written = []
    try:
        planned = [(spec_path(dest, spec), spec_text(spec)) for spec in module.params["specs"]]
    except ValueError as err:
        module.fail_json(msg=str(err))
    dirs = sorted({os.path.dirname(path) for path, _text in planned})
    planted = foreign_link([dest.rstrip(os.sep) or os.sep] + dirs + [path for path, _text in planned])
    if planted:
        module.fail_json(msg="the plan directory %s holds %s, a symlink another user owns: nothing was written. Fix: give "
                             "llmops_plan_dir a directory of your own." % (dest, planted))
    for path, text in planned:
        if read_text(path) == text:
            continue
        written.append(path)
        if not module.check_mode:
            write_text(path, text)
    module.exit_json(changed=bool(written), written=written)


if __name__ == "__main__":
    main()
