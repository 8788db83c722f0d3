#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: config_files
short_description: Write the rendered config files of a host's containers, in one pass
version_added: 0.1.0
description:
  - Writes each file of a host's launch specs (C(files) - host path to content) whose content
    differs, creating its directory. One call per host instead of a copy per file.
  - Returns the paths it changed, so the containers that mount them can be restarted.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: Reports which files would change and writes nothing.
  diff_mode:
    support: full
    details: Shows the old and new content of each changed file.
options:
  files:
    description: Host path to file content.
    type: dict
    required: true
  mode:
    description: Mode of the files written.
    type: raw
    default: "0644"
  secret_files:
    description:
      - Key files to write too (host path to content), those whose content differs only, mode C(0400) in C(0700)
        directories, replaced at once; never shown in a diff. Deploy hands it the key files a running process reads
        again when they change (the front door's), so that a changed key needs no restart.
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Write this host's config files
  llmops.inference.config_files:
    files: "{{ _llmops_cluster_specs | selectattr('host', 'eq', inventory_hostname) | map(attribute='files') | combine }}"
"""

RETURN = r"""
changed_files:
  description: Paths written (or that would be, in check mode).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils._files import write_changed, write_secrets


def main():
    module = AnsibleModule(
        argument_spec=dict(files=dict(type="dict", required=True), mode=dict(type="raw", default="0644"),
                           secret_files=dict(type="dict", default={}, no_log=True)),
        supports_check_mode=True,
    )
    changed, diffs = write_changed(module, module.params["files"], module.params["mode"])
    changed += write_secrets(module, module.params["secret_files"])
    module.exit_json(changed=bool(changed), changed_files=changed, diff=diffs)


if __name__ == "__main__":
    main()
