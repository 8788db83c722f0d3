# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preload callback imports, in the process it runs in, every plugin file a worker would otherwise import."""

from __future__ import annotations

import json
import os
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


# The payloads the callback builds beside the main process, in a fresh interpreter whose run cache is a directory of
# the test's; then what a worker builds for the same module, with the cache file removed.
BUILD_PROBE = textwrap.dedent("""
    import json, multiprocessing, os, pathlib, sys
    from ansible.plugins.loader import init_plugin_loader, module_loader
    init_plugin_loader()
    from ansible import constants
    from ansible.executor import module_common
    from ansible.template import Templar
    from ansible_collections.llmops.inference.plugins.callback import preload
    class Play:
        def get_variable_manager(self):
            return type("Variables", (), {"extra_vars": json.loads(sys.argv[1])})()
    callback = preload.CallbackModule()
    callback.v2_playbook_on_start(None)
    callback.v2_playbook_on_play_start(Play())
    children = multiprocessing.active_children()
    if not children:
        print(json.dumps({"built": []}))
        sys.exit(0)
    for child in children:
        child.join(60)
    cache = pathlib.Path(constants.DEFAULT_LOCAL_TMP) / "ansiballz_cache"
    built = {path.name: module_common._CachedModule.load(str(path)) for path in cache.iterdir()
             if not path.name.endswith((".lock", "-part"))}
    name = "ansible_collections.llmops.inference.plugins.modules.container_state-ZIP_DEFLATED-none"
    ours = built[name]
    (cache / name).unlink()
    found = module_loader.find_plugin_with_context("llmops.inference.container_state")
    module_common.modify_module(module_name="llmops.inference.container_state", module_path=found.plugin_resolved_path,
                                module_args={}, templar=Templar(loader=None), task_vars={"ansible_python_interpreter": "python3"},
                                module_compression="ZIP_DEFLATED")
    worker = module_common._CachedModule.load(str(cache / name))
    import base64, io, zipfile, zipimport
    names = lambda module: sorted(zipfile.ZipFile(io.BytesIO(base64.b64decode(module.zip_data))).namelist())
    # a host imports the payload from a zip file: what it finds for basic.py, as built, then with other bytecode
    payload = pathlib.Path(sys.argv[2]) / "payload.zip"
    payload.write_bytes(base64.b64decode(ours.zip_data))
    def code_file():
        return zipimport.zipimporter(str(payload) + "/ansible/module_utils/").get_code("basic").co_filename
    as_built = code_file()
    with zipfile.ZipFile(payload) as source:
        entries = {info.filename: source.read(info) for info in source.infolist()}
    entries["ansible/module_utils/basic.pyc"] = b"\\0\\0\\r\\n" + entries["ansible/module_utils/basic.pyc"][4:]
    payload.unlink()
    with zipfile.ZipFile(payload, "w") as changed:
        for name, data in entries.items():
            changed.writestr(name, data)
    zipimport._zip_directory_cache.clear()
    print(json.dumps({"built": sorted(built), "worker": names(worker), "ours": names(ours), "as_built": as_built,
                      "other_magic": code_file()}))
""")


def _build(tmp_path, extra_vars):
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", BUILD_PROBE, json.dumps(extra_vars), str(tmp_path)], capture_output=True, text=True,
                          check=True, env=env)
    return json.loads(done.stdout.splitlines()[-1])


def test_the_deploy_modules_payloads_are_built_into_the_runs_cache_as_a_worker_builds_them(tmp_path):
    found = _build(tmp_path, {"llmops_cluster": "pd_a2"})
    from ansible_collections.llmops.inference.plugins.callback.preload import DEPLOY_MODULES
    assert found["built"] == sorted("ansible_collections.llmops.inference.plugins.modules.%s-ZIP_DEFLATED-none" % name
                                    for name in DEPLOY_MODULES)
    # the module and every module_util it imports, as the worker's own build holds them, each with its bytecode
    sources = [name for name in found["worker"] if name.endswith(".py")]
    assert len(sources) > 10 and not [name for name in found["worker"] if name.endswith(".pyc")]
    assert found["ours"] == sorted(found["worker"] + [name + "c" for name in sources])
    # read from the bytecode, compiled with its name in the payload; bytecode of another Python: compiled from the source
    assert found["as_built"] == "ansible/module_utils/basic.py"
    assert found["other_magic"].endswith("payload.zip/ansible/module_utils/basic.py")


def test_plan_mode_builds_no_payload(tmp_path):
    # it runs no module on a host: the builder would only take CPU from the plan's composition
    assert _build(tmp_path, {"llmops_plan_dir": str(tmp_path / "plan")}) == {"built": []}


FREEZE_PROBE = textwrap.dedent("""
    import gc, json, weakref
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader()
    from ansible_collections.llmops.inference.plugins.callback.preload import COLLECT_EVERY, CallbackModule
    class Node:
        pass
    callback = CallbackModule()
    callback.v2_playbook_on_start(None)
    frozen_at_start = gc.get_freeze_count()
    # a reference cycle that becomes garbage after a task froze it
    cycle = Node(); cycle.me = cycle; alive = weakref.ref(cycle)
    callback.v2_playbook_on_task_start(None, False)
    del cycle
    gc.collect()
    kept_while_frozen = alive() is not None
    for _task in range(COLLECT_EVERY - 1):
        callback.v2_playbook_on_task_start(None, False)
    print(json.dumps({"frozen_at_start": frozen_at_start, "kept_while_frozen": kept_while_frozen, "freed": alive() is None,
                      "frozen_after": gc.get_freeze_count()}))
""")


def test_what_the_main_process_holds_is_frozen_before_each_task_and_its_garbage_freed_every_hundred_tasks():
    done = subprocess.run([sys.executable, "-c", FREEZE_PROBE], capture_output=True, text=True, check=True)
    found = json.loads(done.stdout.splitlines()[-1])
    # the imports at the playbook's start, then each task's objects: no collection scans them in between
    assert found["frozen_at_start"] > 1000 and found["frozen_after"] > 1000
    assert found["kept_while_frozen"]
    # the hundredth task's full collection frees the cycle frozen before
    assert found["freed"]


STOP_PROBE = textwrap.dedent("""
    import json, multiprocessing
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader()
    from ansible_collections.llmops.inference.plugins.callback.preload import CallbackModule
    class Play:
        def get_variable_manager(self):
            return type("Variables", (), {"extra_vars": {}})()
    callback = CallbackModule()
    callback.v2_playbook_on_start(None)
    callback.v2_playbook_on_play_start(Play())
    building = [child.is_alive() for child in multiprocessing.active_children()]
    callback.v2_playbook_on_stats(None)
    print(json.dumps({"building": building, "left": [child.is_alive() for child in multiprocessing.active_children()]}))
""")


def test_a_run_that_ends_while_the_payloads_build_stops_the_builder_first(tmp_path):
    # else ansible-playbook's removal of its temporary directory races the builder, which makes it again
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", STOP_PROBE], capture_output=True, text=True, check=True, env=env)
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"building": [True], "left": []}


ASIDE_PROBE = textwrap.dedent("""
    import gc, json, sys
    from ansible.plugins.loader import init_plugin_loader
    init_plugin_loader()
    from ansible_collections.llmops.inference.plugins.callback import preload
    preload.KNOWN_CORES = ("2.18",)  # as on a core it was not tested on
    lines = []
    callback = preload.CallbackModule()
    callback._display = type("Display", (), {"display": lambda self, text, **kwargs: lines.append(text)})()
    before = set(sys.modules)
    callback.v2_playbook_on_start(None)
    callback.v2_playbook_on_task_start(None, False)
    print(json.dumps({"lines": lines, "imported": sorted(m for m in set(sys.modules) - before if "llmops" in m),
                      "frozen": gc.get_freeze_count()}))
""")


def test_on_a_core_it_was_not_tested_on_it_stands_aside_and_says_so_in_one_line():
    found = json.loads(subprocess.run([sys.executable, "-c", ASIDE_PROBE], capture_output=True, text=True,
                                      check=True).stdout.splitlines()[-1])
    assert len(found["lines"]) == 1 and "is not one it was tested on (2.18), so it stands aside" in found["lines"][0]
    assert found["imported"] == [] and found["frozen"] == 0


def test_the_cores_it_acts_on_are_those_the_collection_claims():
    from ansible_collections.llmops.inference.plugins.callback import preload

    claimed = (ROOT / "meta" / "runtime.yml").read_text()
    assert 'requires_ansible: ">=2.19.14,<2.22.0"' in claimed and preload.KNOWN_CORES == ("2.19", "2.20", "2.21")
    assert preload.known_core("2.21.0rc1") and preload.known_core("2.19.14") and not preload.known_core("2.22.0")
