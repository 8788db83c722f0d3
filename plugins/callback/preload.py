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
  - It then builds, in a process of its own beside the main one, the AnsiballZ payloads of the modules a deploy runs
    on its hosts into the run's module cache, where the first worker of each would otherwise build it while the
    other hosts' workers wait (0.13-0.2 s of each first look, preflight ping, start and wait round). Plan mode
    (C(llmops_plan_dir) set) runs none of them and builds nothing.
  - Each payload it builds also holds the bytecode of its Python files (unchecked hash-based C(.pyc), PEP 552). A host
    imports the payload from a zip file, where Python neither finds nor keeps bytecode, so every module run compiled
    the module_utils again (about 0.065 s of the host's CPU per run). A host whose Python reads another bytecode
    format compiles the source as before.
  - Before each task it moves what the main process holds into the garbage collector's permanent generation
    (C(gc.freeze)), so neither the main process nor the workers forked from it scan those objects again (about 0.25 s of
    a pd_a2 plan). Every 100 tasks it collects once, so cyclic garbage frozen in between is freed.
  - It reaches into ansible-core's internals (the AnsiballZ cache's format and lock), so it acts only on the cores it
    was tested on (2.19, 2.20 and 2.21). On any other it stands aside, saying so in one line at the start of the run,
    and the playbooks run as without it.
  - Enable it next to the output callback, as the collection's C(ansible.cfg) does
    (C(callbacks_enabled = llmops.inference.preload)). Without it, playbooks work the same, only slower
    (a pd_a2 plan about 1.3 s of the controller's CPU).
requirements:
  - Enabled in C(callbacks_enabled).
"""

import base64
import dataclasses
import gc
import importlib
import importlib.util
import io
import marshal
import multiprocessing
import os
import pathlib
import pkgutil
import zipfile

from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.callback import CallbackBase
from ansible.plugins.loader import action_loader, connection_loader, filter_loader, lookup_loader, module_loader, shell_loader, test_loader
from ansible.release import __version__ as CORE_VERSION
from ansible.template import Templar

# The cores whose internals this was tested on (the AnsiballZ cache's _CachedModule and its named_mutex lock): the
# tests run it on each (scripts/test.sh's core lanes). Another core may have moved them, so it stands aside there.
KNOWN_CORES = ("2.19", "2.20", "2.21")
try:
    from ansible._internal import _locking
    from ansible.executor import module_common
except ImportError:  # a core that moved them: known_core() is False there too
    _locking = module_common = None

COLLECTION = "llmops.inference"
# What the collection's tasks use besides its own plugins (one filter of a file loads the whole file; the core
# filters are in several), and the env lookup inventories read connection settings with (the harness's key path is
# templated with it for every task of every host).
CORE_ACTIONS = ("assert", "command", "debug", "fail", "normal", "set_fact", "validate_argument_spec")
CORE_FILTERS = ("combine", "flatten", "regex_replace", "to_json", "b64encode")
CORE_LOOKUPS = ("file", "vars", "env")
# how the collection's hosts are reached: SSH, the controller itself, and docker exec (the test harness's nodes)
CONNECTIONS = ("ansible.builtin.ssh", "ansible.builtin.local", "community.docker.docker")
# The modules a deploy runs on its hosts, those of a first start first: the look, preflight's ping, the start and wait
# of a wave; then the config files, the front door's members and the drain of a roll.
DEPLOY_MODULES = ("container_state", "node_facts", "containers_started", "container_ready", "config_files",
                  "front_door_members", "engine_drain")
# tasks between two full collections of what the main process froze (its cyclic garbage included)
COLLECT_EVERY = 100


def known_core(version=CORE_VERSION):
    """Whether ansible-core ``version`` (2.19.14, 2.21.0rc1) is one of KNOWN_CORES, with the internals this uses."""
    return ".".join(version.split(".")[:2]) in KNOWN_CORES and module_common is not None


def build_payloads(names):
    """Builds each module's AnsiballZ payload into this run's cache (C.DEFAULT_LOCAL_TMP/ansiballz_cache), under the
    lock and in the file a worker would; a worker finding the file there uses it. Anything that fails here is left to
    the worker that needs the module, as without this."""
    # beside the plan's composition, on a core the main process leaves idle: it yields to it
    os.nice(10)
    templar = Templar(loader=None)
    compression = C.config.get_config_value("DEFAULT_MODULE_COMPRESSION")
    compiled = {}
    for name in names:
        try:
            found = module_loader.find_plugin_with_context("%s.%s" % (COLLECTION, name))
            # the interpreter only shapes the wrapper returned here, not the payload cached
            module_common.modify_module(module_name=found.resolved_fqcn, module_path=found.plugin_resolved_path, module_args={},
                                        templar=templar, task_vars={"ansible_python_interpreter": "python3"},
                                        module_compression=compression)
            for path in cached_payloads(name):
                add_bytecode(path, compiled)
        except Exception:  # pylint: disable=broad-exception-caught
            return


def cached_payloads(name):
    """The run cache's payload files of one of the collection's modules (one per compression and extension set)."""
    cache = pathlib.Path(C.DEFAULT_LOCAL_TMP) / "ansiballz_cache"
    return [path for path in cache.glob("ansible_collections.%s.plugins.modules.%s-*" % (COLLECTION, name))
            if not path.name.endswith((".lock", "-part"))]


def add_bytecode(path, compiled):
    """Adds to a cached payload, beside each Python file, its bytecode (an unchecked hash-based .pyc, the form a zip
    import reads without the source's time): a host imports a payload from a zip, where Python can neither find nor
    write bytecode, so each module run compiled AnsiballZ's module_utils and the collection's again (about 0.065 s of
    a host's CPU per run; four hosts on two CPUs made that most of a round's gap). A host whose Python reads other
    bytecode (another magic number) skips the .pyc and compiles the source, as without this. compiled: what earlier
    payloads compiled, by file and source hash."""
    with _locking.named_mutex(str(path) + ".lock"):
        cached = module_common._CachedModule.load(str(path))  # pylint: disable=protected-access
        source = zipfile.ZipFile(io.BytesIO(base64.b64decode(cached.zip_data)))
        names = set(source.namelist())
        if any(name.endswith(".pyc") for name in names):
            return
        payload = io.BytesIO()
        with zipfile.ZipFile(payload, mode="w") as built:
            for info in source.infolist():
                text = source.read(info)
                built.writestr(info, text)
                if info.filename.endswith(".py"):
                    digest = importlib.util.source_hash(text)
                    key = (info.filename, digest)
                    if key not in compiled:
                        code = compile(text, info.filename, "exec", dont_inherit=True)
                        # PEP 552: magic, flags 0b01 (hash-based, source not checked), the source's hash, the code
                        compiled[key] = importlib.util.MAGIC_NUMBER + (1).to_bytes(4, "little") + digest + marshal.dumps(code)
                    bytecode = zipfile.ZipInfo(info.filename + "c", info.date_time)
                    bytecode.compress_type = info.compress_type
                    built.writestr(bytecode, compiled[key])
        dataclasses.replace(cached, zip_data=base64.b64encode(payload.getvalue())).dump(str(path))


def collection_plugins(kind):
    """The collection's plugin files of a kind (filter, action), by name."""
    package = importlib.import_module("ansible_collections.%s.plugins.%s" % (COLLECTION, kind))
    return [found.name for found in pkgutil.iter_modules(package.__path__)]


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "llmops.inference.preload"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._tasks = 0
        self._building = False
        self._builder = None
        self._active = known_core()

    def v2_playbook_on_start(self, playbook):
        if not self._active:
            self._display.display("llmops.inference.preload: ansible-core %s is not one it was tested on (%s), so it stands "
                                  "aside; the playbooks run the same, without its speed-ups" % (CORE_VERSION, ", ".join(KNOWN_CORES)))
            return
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
        gc.freeze()

    def v2_playbook_on_play_start(self, play):
        # the first play knows the run's extra variables; the builder is forked after the imports above
        if self._building or not self._active:
            return
        self._building = True
        if "llmops_plan_dir" not in play.get_variable_manager().extra_vars:
            self._builder = multiprocessing.get_context("fork").Process(target=build_payloads, args=(DEPLOY_MODULES,), daemon=True)
            self._builder.start()

    def v2_playbook_on_task_start(self, task, is_conditional):
        # the workers of this task are forked next
        if not self._active:
            return
        self._tasks += 1
        if self._tasks % COLLECT_EVERY == 0:
            gc.unfreeze()
            gc.collect()
        gc.freeze()

    def v2_playbook_on_stats(self, stats):
        # a run that ended within a second of its first play (a play that failed at once) may still be building: stop it
        # before ansible-playbook removes its temporary directory, which the builder would otherwise make again
        if self._builder is not None and self._builder.is_alive():
            self._builder.terminate()
            self._builder.join(5)
