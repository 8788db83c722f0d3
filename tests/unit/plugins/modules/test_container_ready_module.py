# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""container_ready's wait: ports probed every interval, the docker CLI asked every 0.5 s at most, a log probe reading the
log docker streams (models_server: an HTTP server on the loopback, from test_readiness)."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.llmops.inference.plugins.modules import container_ready

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from test_readiness import models_server  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import  # a fixture


@pytest.fixture
def docker(tmp_path, monkeypatch):
    """A docker that says every container runs (or the state written to state.txt), logging each call."""
    calls, state = tmp_path / "calls.log", tmp_path / "state.txt"
    state.write_text("running 0")
    tool = tmp_path / "bin" / "docker"
    tool.parent.mkdir()
    # `logs --follow`: a headless rank that loads for 1.2 s, then logs its ready line and runs on
    tool.write_text('#!/bin/sh\necho "$1 $2" >> %s\nif [ "$1" = inspect ]; then shift 3; for n; do echo "/$n $(cat %s)"; done; fi\n'
                    'if [ "$1 $2" = "logs --follow" ]; then echo loading; sleep 1.2; echo "rank 1 ready"; exec sleep 30; fi\n'
                    'if [ "$1" = logs ]; then echo "its last words"; fi\nexit 0\n' % (calls, state))
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:/usr/bin:/bin" % tool.parent)
    return calls, state


def wait(capsys, **args):
    with patch_module_args(args), pytest.raises(SystemExit) as exit_info:
        container_ready.main()
    return exit_info.value.code, json.loads(capsys.readouterr().out)


def test_a_port_is_probed_each_interval_and_docker_asked_every_half_second(capsys, docker, models_server):  # noqa: F811  the fixture imported above
    calls, _state = docker
    seen, base = models_server
    seen["status"] = 503  # until 2.2 s from now
    threading.Timer(2.2, seen.update, kwargs={"status": 200}).start()
    started = time.monotonic()
    code, result = wait(capsys, containers=[{"name": "proxy", "ready": {"http": base + "/healthcheck"}}], interval=0.1)
    took = time.monotonic() - started
    assert code == 0 and result["pending"] == [] and "proxy" in result["ready"]
    inspects = calls.read_text().split().count("inspect")
    assert "logs" not in calls.read_text()  # an HTTP probe reads no log
    # about every 0.1 s for 2.2 s (22 on an idle machine): more often than docker's every 0.5 s (4 or 5), also when a
    # busy machine slows each round down
    assert seen["gets"] >= 8 and seen["gets"] > inspects
    assert 3 <= inspects <= int(took / container_ready.DOCKER_EVERY) + 1  # every 0.5 s, not each round


def test_a_container_that_exits_still_fails_the_wait_with_its_log(capsys, docker, models_server):  # noqa: F811  the fixture imported above
    _calls, state = docker
    seen, base = models_server
    seen["status"] = 503
    state.write_text("exited 1")
    code, result = wait(capsys, containers=[{"name": "proxy", "ready": {"http": base + "/healthcheck"}}], interval=0.1, timeout=30)
    assert code == 1 and "container proxy is exited 1 before it was ready" in result["msg"] and "its last words" in result["msg"]


def test_a_headless_rank_is_ready_once_its_line_is_logged_and_its_log_is_read_once(capsys, docker):
    calls, _state = docker
    started = time.monotonic()
    code, result = wait(capsys, containers=[{"name": "rank1", "ready": {"log": "rank 1 ready"}}], interval=0.1, timeout=8)
    took = time.monotonic() - started
    assert code == 0 and result["pending"] == [] and "rank1" in result["ready"]
    assert 1.2 <= took < 10  # not before the line was logged
    # seen in the stream: the whole log was not read again with a docker call
    asked = calls.read_text().splitlines()
    assert asked.count("logs --follow") == 1 and [line for line in asked if line.startswith("logs") and "--follow" not in line] == []
