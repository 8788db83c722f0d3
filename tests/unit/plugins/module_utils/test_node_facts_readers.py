# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""node_facts' readers of /proc, meminfo and the version files, on files made here."""

from __future__ import annotations

import os

from ansible_collections.llmops.inference.plugins.module_utils.preflight import _node_facts as node_facts


def test_proc_is_read_for_listeners_device_holders_and_their_containers(tmp_path):
    container = "a" * 64
    (tmp_path / "net").mkdir()
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    (tmp_path / "net" / "tcp").write_text(header + "   0: 00000000:2383 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 4242 1\n"
                                          "   1: 0100007F:0016 0100007F:9999 01 00000000:00000000 00:00000000 00000000 0 0 4243 1\n")
    proc = tmp_path / "100"
    (proc / "fd").mkdir(parents=True)
    (proc / "comm").write_text("python3\n")
    (proc / "cgroup").write_text("0::/system.slice/docker-%s.scope\n" % container)
    os.symlink("socket:[4242]", proc / "fd" / "3")
    os.symlink("/dev/davinci2", proc / "fd" / "4")
    procs = node_facts.processes(str(tmp_path))
    assert node_facts.listening_ports(str(tmp_path)) == {9091: "4242"}
    assert node_facts.port_holders({9091: "4242"}, procs, {container: "vllm-prefill-dp0"}) == [
        {"port": 9091, "pid": 100, "process": "python3", "container": "vllm-prefill-dp0"}]
    assert node_facts.device_holders(procs, {}) == [{"npu": 2, "pid": 100, "process": "python3", "container": None}]


def test_meminfo_and_version_files_are_read():
    assert node_facts.meminfo("MemTotal:  2048 kB\nMemFree: 1 kB\nMemAvailable:  1024 kB\n") == {"total": 2097152, "available": 1048576}
    assert node_facts.version_value("Version=24.1.rc2\nai_cpu_version=1\n") == "24.1.rc2"
    assert node_facts.version_value("package_name=x\nversion=8.3.RC1\n") == "8.3.RC1"
    assert node_facts.version_value("") is None


class _NoDocker:
    """An AnsibleModule stand-in on a host without the docker CLI."""

    @staticmethod
    def get_bin_path(_name, *_args, **_kwargs):
        return None


def test_python_requests_is_looked_for_without_being_imported(tmp_path, monkeypatch):
    # community.docker needs it importable; importing it in every look cost a host 80 ms of CPU
    import sys  # pylint: disable=import-outside-toplevel

    from ansible_collections.llmops.inference.plugins.module_utils.preflight import _node_gather as node_gather  # pylint: disable=import-outside-toplevel

    monkeypatch.syspath_prepend(str(tmp_path))
    package = tmp_path / "requests"
    package.mkdir()
    (package / "__init__.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.delitem(sys.modules, "requests", raising=False)
    assert node_gather.docker_facts(_NoDocker())["requests"] is True
    assert "requests" not in sys.modules
    monkeypatch.setattr(node_gather.importlib.util, "find_spec", lambda name, *args: None)
    assert node_gather.docker_facts(_NoDocker())["requests"] is False


class _Docker:
    """An AnsibleModule stand-in on a host with the docker CLI."""

    @staticmethod
    def get_bin_path(name, *_args, **_kwargs):
        return "/usr/bin/" + name


def test_the_look_gives_the_gather_the_containers_it_listed_and_docker_ps_runs_once(monkeypatch):
    # deploy's look lists the cluster's containers first; its gather named their holders with a second `docker ps`
    from ansible_collections.llmops.inference.plugins.module_utils.preflight import _node_gather as node_gather  # pylint: disable=import-outside-toplevel

    calls = []

    def run(_module, argv, environ_update=None):
        calls.append(argv)
        return 0, "%s vllm-decode-dp0\n" % ("b" * 64), ""

    monkeypatch.setattr(node_gather.commands, "run", run)
    monkeypatch.setattr(node_gather._node, "processes", lambda: {})
    listed = {"a" * 64: "vllm-prefill-dp0"}
    seen = {}

    def device_holders(_procs, containers):
        seen["containers"] = containers
        return []

    monkeypatch.setattr(node_gather._node, "device_holders", device_holders)
    node_gather.gathered(_Docker(), {"devices"}, {"cluster": "pd_a2"}, listed)
    assert seen["containers"] == listed and calls == []
    seen.clear()
    node_gather.gathered(_Docker(), {"devices"}, {"cluster": "pd_a2"})  # node_facts: it lists them itself
    assert seen["containers"] == {"b" * 64: "vllm-decode-dp0"} and calls[0][:3] == ["/usr/bin/docker", "ps", "-a"]
