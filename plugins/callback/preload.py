# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
name: preload
type: aggregate
short_description: Import the collection's plugins once, in the controller's main process
version_added: 0.1.0
description:
  - Ansible runs every task of every host in a worker forked from C(ansible-playbook)'s main process. A plugin the
    main process has not imported is imported again by each worker that uses it, and this collection's filters
    pull in most of its module_utils (the planner, the rollout, the preflight rules).
  - When the playbook starts, this callback imports the collection's filter and action plugins, and the core action
    plugins its tasks use, in the main process; every worker forked after that inherits them. It prints nothing and
    changes no result.
  - It loads the connection plugins a cluster is reached with (C(ssh), C(local), and C(community.docker.docker) when
    that collection is installed) and the C(sh) shell the same way. A worker that gets a task's connection otherwise
    reads the plugin's documentation to learn its settings, about 30 ms of YAML for every task of every host.
  - Enable it next to the output callback, as the collection's C(ansible.cfg) does
    (C(callbacks_enabled = llmops.inference.preload)). Without it, playbooks work the same, only slower
    (a pd_a2 plan about 1.3 s of the controller's CPU).
requirements:
  - Enabled in C(callbacks_enabled).
"""

import importlib
import pkgutil

from ansible.plugins.callback import CallbackBase
from ansible.errors import AnsibleError
from ansible.plugins.loader import action_loader, connection_loader, filter_loader, lookup_loader, shell_loader, test_loader

COLLECTION = "llmops.inference"
# What the collection's tasks use besides its own plugins (one filter of a file loads the whole file; the core
# filters are in several), and the env lookup inventories read connection settings with (the harness's key path is
# templated with it for every task of every host).
CORE_ACTIONS = ("assert", "command", "debug", "fail", "normal", "set_fact", "validate_argument_spec")
CORE_FILTERS = ("combine", "flatten", "regex_replace", "to_json", "b64encode")
CORE_LOOKUPS = ("file", "vars", "env")
# how the collection's hosts are reached: SSH, the controller itself, and docker exec (the test harness's nodes)
CONNECTIONS = ("ansible.builtin.ssh", "ansible.builtin.local", "community.docker.docker")


def collection_plugins(kind):
    """The collection's plugin files of a kind (filter, action), by name."""
    package = importlib.import_module("ansible_collections.%s.plugins.%s" % (COLLECTION, kind))
    return [found.name for found in pkgutil.iter_modules(package.__path__)]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "llmops.inference.preload"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_start(self, playbook):
        for name in collection_plugins("filter"):
            # the filter loader finds a collection's filter file by this same module name in sys.modules
            importlib.import_module("ansible_collections.%s.plugins.filter.%s" % (COLLECTION, name))
        for name in collection_plugins("action"):
            action_loader.get("%s.%s" % (COLLECTION, name), class_only=True)
        for name in CORE_ACTIONS:
            action_loader.get("ansible.builtin." + name, class_only=True)
        for name in CORE_FILTERS:
            filter_loader.get("ansible.builtin." + name)
        # a test Jinja does not know (none, truthy, version, ...) makes a worker load every core test file
        test_loader.get("ansible.builtin.truthy")
        for kind in ("filter", "test"):
            importlib.import_module("ansible_collections.ansible.builtin.plugins." + kind)
        for name in CORE_LOOKUPS:
            lookup_loader.get("ansible.builtin." + name, class_only=True)
        # loading a connection or shell plugin once reads its settings into the configuration, which workers inherit
        for name in CONNECTIONS:
            try:
                connection_loader.get(name, class_only=True)
            except AnsibleError:  # a collection that is not installed: its hosts are not reached that way here
                pass
        shell_loader.get("ansible.builtin.sh", class_only=True)
