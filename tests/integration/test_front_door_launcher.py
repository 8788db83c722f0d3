# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's launcher around the real vllm-ascend proxy, in the harness's engine image with no network
but its loopback: TLS with a certificate made here, two workers, the manager's authkey file its owner's alone
(tests/harness/front_door_launcher_check.py runs inside). Needs Docker and the harness images."""

from __future__ import annotations

import json
import subprocess

from conftest import ROOT
from harness import make_certificate

UPSTREAM = ROOT / ".build" / "harness" / "engine-context" / "load_balance_proxy_server_example.py"


def test_tls_workers_the_manager_file_and_the_members(tmp_path):
    make_certificate(tmp_path, "127.0.0.1")
    run = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", "%s:/door:ro" % (ROOT / "roles" / "pd_proxy" / "files"),
         "-v", "%s:/up:ro" % UPSTREAM.parent, "-v", "%s:/harness:ro" % (ROOT / "tests" / "harness"), "-v", "%s:/tls:ro" % tmp_path,
         "--entrypoint", "python3", "llmops-engine:test", "/harness/front_door_launcher_check.py", "/door/front_door.py",
         "/up/" + UPSTREAM.name, "/tls/tls.crt", "/tls/tls.key", "/tls/ca.crt", "/harness/instant_engine.py"],
        capture_output=True, text=True, timeout=240, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = json.loads(run.stdout)
    print(json.dumps(seen, indent=1))
    assert seen["healthcheck over https"] == 200
    assert seen["completion over https with the key"] == 200
    assert seen["completion over https without a key"] == 401
    assert str(seen["healthcheck over plain http"]).startswith("no answer")  # HTTPS only
    assert str(seen["https checked against the system's store only"]).startswith("no answer")  # our CA, not a public one
    assert seen["manager file mode"] == "0o600"  # the upstream writes its authkey there with default permissions
    assert seen["decode members at start"] == ["127.0.0.1:18200", "127.0.0.1:18201"]  # the members file's, not the argv's
    assert seen["remove while in flight"] == "Instances ['127.0.0.1:18201'] are isolated and waiting to be removed."
    # put back by the launcher: upstream's add skips a listed member, and its listener would then drop the tainted one
    assert seen["listed after"] == ["127.0.0.1:18200", "127.0.0.1:18201"]
