# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a host's tools from a module with every byte of their output read.

AnsibleModule.run_command polls the command's pipes with a one-second timeout and stops reading when a poll times
out and the command has exited by then: a command that runs over a second and writes its output just before it exits,
between the two, loses that output (ansible/ansible#51393; the loop is the same in ansible-core 2.19). The output then
reads as empty with exit code 0. A deploy's look runs some forty commands side by side on a host; in a CI run on a
busy machine `npu-smi info` came back so (exit code 0, no output) and preflight found no NPU on a healthy host. A lost
`docker ps` or `docker inspect` would read as containers gone. subprocess.run reads both pipes to their end.
"""

from __future__ import annotations

import os
import subprocess
import typing as t
from collections.abc import Mapping, Sequence


def environment(update: Mapping[str, object] | None = None) -> dict[str, str]:
    """The module's environment with ``update``, less the module's own payload on PYTHONPATH (as run_command does)."""
    env = dict(os.environ)
    env.update({name: str(value) for name, value in (update or {}).items()})
    if "PYTHONPATH" in env:
        kept = [path for path in env["PYTHONPATH"].split(":")
                if path and not path.endswith(("/ansible_modlib.zip", "_payload.zip", "/debug_dir"))]
        if kept:
            env["PYTHONPATH"] = ":".join(kept)
        else:
            del env["PYTHONPATH"]
    return env


def run(module: t.Any, argv: Sequence[str], environ_update: Mapping[str, object] | None = None) -> tuple[int, str, str]:
    """(rc, stdout, stderr) of ``argv`` as text, like module.run_command, both pipes read to their end. A command that
    cannot be executed fails the module, as run_command does."""
    try:
        # pylint: disable-next=ansible-bad-function  # run_command loses a late output (see above); this reads it all
        done = subprocess.run(argv, capture_output=True, env=environment(environ_update), check=False)
    except OSError as err:
        module.fail_json(msg="%s: %s" % (argv[0], err), rc=err.errno, cmd=" ".join(str(arg) for arg in argv))
    return (done.returncode, done.stdout.decode("utf-8", "surrogateescape"),
            done.stderr.decode("utf-8", "surrogateescape"))
