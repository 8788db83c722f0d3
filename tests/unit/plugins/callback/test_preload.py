# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preload callback imports, in the process it runs in, every plugin file a worker would otherwise import."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[4]

# Run in a fresh interpreter: this test process has imported the collection's plugins already.
PROBE = textwrap.dedent("""
    import json, sys
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader()
    from ansible_collections.llmops.inference.plugins.callback.preload import CallbackModule
    from ansible import constants
    before = set(sys.modules)
    known = lambda: [[kind, name] for kind, name in [["connection", "ssh"], ["connection", "local"], ["shell", "sh"]]
                     if constants.config.has_configuration_definition(
                         kind, "ansible_collections.ansible.builtin.plugins.%s.%s" % (kind, name))]
    known_before = known()
    CallbackModule().v2_playbook_on_start(None)
    print(json.dumps({"imported": sorted(set(sys.modules) - before), "configured": [k for k in known() if k not in known_before]}))
""")


def _run_the_callback():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def _imported_by_the_callback():
    return set(_run_the_callback()["imported"])


def test_every_filter_and_action_file_of_the_collection_is_imported_under_the_name_the_loader_looks_up():
    imported = _imported_by_the_callback()
    for kind in ("filter", "action"):
        for path in sorted((ROOT / "plugins" / kind).glob("*.py")):
            if path.stem != "__init__":
                assert "ansible_collections.llmops.inference.plugins.%s.%s" % (kind, path.stem) in imported, path


def test_the_core_plugins_the_tasks_use_are_imported_as_the_builtin_collection_loads_them():
    imported = _imported_by_the_callback()
    for name in ("action.set_fact", "action.validate_argument_spec", "action.assert", "lookup.vars"):
        assert "ansible_collections.ansible.builtin.plugins." + name in imported
    # the core tests and filters: every file of each, not one
    assert len([name for name in imported if name.startswith("ansible.plugins.test.")]) >= 3
    assert len([name for name in imported if name.startswith("ansible.plugins.filter.")]) >= 3


def test_the_connection_and_shell_plugins_settings_are_read_once_for_the_workers():
    # a worker that finds them defined does not parse the plugins' documentation again, task after task
    assert sorted(_run_the_callback()["configured"]) == [["connection", "local"], ["connection", "ssh"], ["shell", "sh"]]
