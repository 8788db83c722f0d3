# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test CA and a front-door certificate it signed, made with openssl: what an operator hands pd_proxy_tls_*.

Used by the tests and the benchmarks that turn the front door's TLS on (the pd_a2 scenario, the launcher test,
benchmarks/front_door.py and benchmarks/time_to_serving.py --secure); install_on_node also puts it on a harness node."""

from __future__ import annotations

import pathlib
import ssl
import subprocess


def make_certificate(directory, address):
    """Write ca.crt, tls.crt and tls.key into directory, the certificate valid for the IP address, for one day.
    The files are world-readable: a container's user reads them through a mount."""
    directory = pathlib.Path(directory)
    request = ["openssl", "req", "-nodes", "-newkey", "rsa:2048", "-subj"]
    (directory / "san.cnf").write_text("subjectAltName=IP:%s\n" % address)
    for step in (request + ["/CN=llmops test CA", "-x509", "-days", "1", "-keyout", "ca.key", "-out", "ca.crt"],
                 request + ["/CN=front-door", "-keyout", "tls.key", "-out", "tls.csr"],
                 ["openssl", "x509", "-req", "-in", "tls.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-days", "1",
                  "-extfile", "san.cnf", "-out", "tls.crt"]):
        subprocess.run(step, cwd=directory, check=True, capture_output=True)
    for name in ("ca.crt", "tls.crt", "tls.key"):
        (directory / name).chmod(0o644)
    return {name: directory / name for name in ("ca.crt", "tls.crt", "tls.key")}


def install_on_node(directory, address, node, node_dir):
    """make_certificate in directory, the three files copied to node_dir on a harness node (a container): returns the
    pd_proxy_tls_* variables that name them there, and an SSL context that trusts the CA."""
    made = make_certificate(directory, address)
    subprocess.run(["docker", "exec", node, "mkdir", "-p", node_dir], check=True)
    for name, path in made.items():
        subprocess.run(["docker", "cp", str(path), "%s:%s/%s" % (node, node_dir, name)], check=True)
    subprocess.run(["docker", "exec", node, "chmod", "0644", node_dir + "/tls.key"], check=True)  # the proxy's user reads it
    tls = {"pd_proxy_tls_cert": node_dir + "/tls.crt", "pd_proxy_tls_key": node_dir + "/tls.key", "pd_proxy_tls_ca": node_dir + "/ca.crt"}
    return tls, ssl.create_default_context(cafile=str(made["ca.crt"]))
