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

UPSTREAM = ROOT / ".build" / "harness" / "engine-context" / "load_balance_proxy_server_example.py"


def test_tls_workers_and_the_manager_file(tmp_path):
    ca_key, ca, key, csr, cert = (tmp_path / n for n in ("ca.key", "ca.crt", "tls.key", "tls.csr", "tls.crt"))
    openssl = ["openssl", "req", "-nodes", "-newkey", "rsa:2048", "-subj"]
    subprocess.run(openssl + ["/CN=llmops test CA", "-x509", "-days", "1", "-keyout", str(ca_key), "-out", str(ca)],
                   check=True, capture_output=True)
    subprocess.run(openssl + ["/CN=front-door", "-keyout", str(key), "-out", str(csr)], check=True, capture_output=True)
    (tmp_path / "san.cnf").write_text("subjectAltName=IP:127.0.0.1\n")
    subprocess.run(["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
                    "-days", "1", "-extfile", str(tmp_path / "san.cnf"), "-out", str(cert)], check=True, capture_output=True)
    for path in tmp_path.iterdir():
        path.chmod(0o644)  # the container's user reads them through the mount
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
