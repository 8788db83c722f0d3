# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Readiness of a launch spec's container (its ``ready`` probe) and the host's docker CLI.

Shared by container_ready (waits) and container_state (status now).
"""

from __future__ import annotations

import atexit
import http.client
import json
import re
import socket
import subprocess
import threading
import typing as t
from collections.abc import Iterable

from ansible_collections.llmops.inference.plugins.module_utils import _commands as commands
from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.services import _pool_ha as pool_ha


class LogFollower:
    """`docker logs --follow` of one container, read by a thread as the lines come: a headless rank's ready line is
    seen once logged, where reading the whole log again was a docker CLI call each time (every 0.5 s, so a ready rank
    waited 0.25 s on average). Stopped when the module exits."""

    def __init__(self, argv: list[str]) -> None:
        self.lines: list[str] = []
        self.lock = threading.Lock()
        # pylint: disable-next=ansible-bad-function  # a log followed line by line while it grows: run_command waits for the end
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,  # noqa: SIM115
                                        stderr=subprocess.STDOUT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        atexit.register(self.stop)

    def _read(self) -> None:
        if self.process.stdout is None:  # stdout=PIPE: never
            return
        for line in iter(self.process.stdout.readline, b""):
            with self.lock:
                self.lines.append(line.decode("utf-8", "replace"))

    def text(self) -> str:
        with self.lock:
            return "".join(self.lines)

    def following(self) -> bool:
        """Whether the log is still read as it comes (docker logs ends when the container stops, or could not start)."""
        return self.process.poll() is None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


class Docker:
    def __init__(self, module: t.Any) -> None:
        self.module = module
        self.binary: str = module.get_bin_path("docker", required=True)
        self.followed: dict[str, LogFollower] = {}

    def states(self, names: Iterable[str]) -> dict[str, str]:
        """{name: "running 0" | "exited 1" | ... | "missing"}, in one docker call."""
        _rc, out, _err = commands.run(
            self.module, [self.binary, "inspect", "-f", "{{.Name}} {{.State.Status}} {{.State.ExitCode}}"] + sorted(set(names)))
        found = dict.fromkeys(names, "missing")
        for line in out.splitlines():
            name, _sep, state = line.strip().lstrip("/").partition(" ")
            if name in found:
                found[name] = state
        return found

    def follow(self, name: str) -> None:
        """Reads the container's whole log from now on as it comes (logs(name) then answers from it)."""
        self.followed[name] = LogFollower([self.binary, "logs", "--follow", name])

    def following(self, name: str) -> bool:
        return name in self.followed and self.followed[name].following()

    def logs(self, name: str, lines: int | None = None) -> str:
        if not lines and self.following(name):
            return self.followed[name].text()
        args = [self.binary, "logs"] + (["--tail", str(lines)] if lines else []) + [name]
        _rc, out, err = commands.run(self.module, args)
        return str(out + err)


def json_or_none(url: str, body: bytes | None = None) -> t.Any:
    """A JSON answer, None when there is no 200 with JSON (down, starting)."""
    try:
        status, answer = http_get(url, body=body)
        return json.loads(answer) if status == 200 else None
    except (OSError, http.client.HTTPException, ValueError):
        return None


def ha_role(spec: LaunchSpec) -> str | None:
    """A service in HA, now: a Mooncake master's leader / warmup / standby, an etcd member's leader / follower
    (etcd's /v3/maintenance/status: the leader's id against its own), "down" when it does not answer; None for the
    rest."""
    ha = spec_meta.ha(spec) or {}
    if ha.get("service") == "mooncake_master":
        return pool_ha.master_role(json_or_none(ha["health_url"])) or "down"
    if ha.get("service") == "etcd":
        status = json_or_none(ha["client_url"] + "/v3/maintenance/status", body=b"{}")
        if not status:
            return "down"
        return "leader" if str(status.get("leader")) == str((status.get("header") or {}).get("member_id")) else "follower"
    return None


def reads_logs(spec: LaunchSpec) -> bool:
    """Whether the spec's readiness probe reads the container's log (from docker, not a look at a port)."""
    ready = spec.get("ready") or {}
    return "http" not in ready and "log" in ready


def probe(docker: Docker, spec: LaunchSpec) -> bool:
    ready = spec.get("ready") or {}
    if "http" in ready:
        try:
            status, body = http_get(ready["http"], ca_path=ready.get("ca"))
        except (OSError, http.client.HTTPException):  # refused, reset, timed out: not yet
            return False
        if status != 200:
            return False
        if ready.get("ha") == "mooncake_master":  # /health is 200 on a standby and on a leader still warming up
            try:
                return pool_ha.master_ready(json.loads(body), [json_or_none(url) for url in ready.get("peers") or []])
            except ValueError:
                return False
        if ready["http"].rstrip("/").endswith("/v1/models"):
            model = spec_meta.served_model(spec)  # --served-model-name, else the model (the plan's meta)
            try:
                ids = [entry.get("id") for entry in json.loads(body).get("data", [])]
            except ValueError:
                return False
            return model is None or model in ids
        return True
    if "log" in ready:
        return re.search(ready["log"], docker.logs(spec["name"])) is not None
    if "tcp" in ready:
        host, port = ready["tcp"].rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
            return True
        except OSError:
            return False
    return True  # nothing to probe: running is ready
