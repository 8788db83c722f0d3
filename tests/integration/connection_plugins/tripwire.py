# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only connection plugin: any attempt to reach a host fails loudly, naming the host.

The tests point the lab hosts at it to prove that plan mode and inventory validation never
touch a cluster host (tasks delegated to localhost keep the local connection).
"""

from __future__ import annotations

DOCUMENTATION = r"""
name: tripwire
short_description: Fails on any use, for tests that must not reach a host
description: Fails on connect, exec, put and fetch.
author: llmops.inference contributors (@llmops)
options: {}
"""

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.connection import ConnectionBase


class Connection(ConnectionBase):
    transport = "tripwire"
    has_pipelining = False

    def _fail(self):
        raise AnsibleConnectionFailure("TRIPWIRE: the play tried to reach host %s" % self._play_context.remote_addr)

    def _connect(self):
        self._fail()

    def exec_command(self, cmd, in_data=None, sudoable=True):
        self._fail()

    def put_file(self, in_path, out_path):
        self._fail()

    def fetch_file(self, in_path, out_path):
        self._fail()

    def close(self):
        self._connected = False
