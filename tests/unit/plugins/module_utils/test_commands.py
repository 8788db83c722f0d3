# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules run the host's tools through _commands.run: all of the output, as run_command returns it."""

from __future__ import annotations

import sys

import pytest

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands


class _Failed(Exception):
    pass


class _Module:
    """An AnsibleModule stand-in: fail_json ends the module."""

    @staticmethod
    def fail_json(**result):
        raise _Failed(result)


def test_output_written_as_a_slow_command_exits_is_all_read():
    # run_command stops reading when a one-second poll times out and the command has exited meanwhile
    # (ansible/ansible#51393): a command like this one, slower than the poll, could come back empty
    script = "import sys, time; time.sleep(1.2); sys.stdout.write('x' * 200000); sys.stderr.write('done')"
    rc, out, err = commands.run(_Module(), [sys.executable, "-c", script])
    assert (rc, len(out), err) == (0, 200000, "done")


def test_exit_code_text_and_environment_are_as_run_command_gives_them(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/tmp/ansible_x_payload_1/ansible_x_payload.zip:/opt/kept")
    script = "import os, sys; print(os.environ['PYTHONPATH'], os.environ['LLMOPS_T']); print('\\u00e9'); sys.exit(3)"
    rc, out, _err = commands.run(_Module(), [sys.executable, "-c", script], environ_update={"LLMOPS_T": 7})
    assert rc == 3 and out.splitlines() == ["/opt/kept 7", "\u00e9"]


def test_a_command_that_cannot_run_fails_the_module(tmp_path):
    with pytest.raises(_Failed, match="llmops-missing"):
        commands.run(_Module(), [str(tmp_path / "llmops-missing")])
