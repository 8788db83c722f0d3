# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A test CA and a front-door certificate it signed, made with trustme: what an operator hands pd_proxy_tls_*.

Used by the tests and the benchmarks that turn the front door's TLS on (the pd_a2 scenario, the launcher test,
benchmarks/front_door.py and benchmarks/time_to_serving.py --secure); install_on_node also puts it on a harness node."""

from __future__ import annotations

import pathlib
import ssl
import subprocess

import trustme


def make_certificate(directory, address):
    """Write ca.crt, tls.crt and tls.key into directory, the certificate valid for the IP address. The files are
    world-readable: a container's user reads them through a mount."""
    directory = pathlib.Path(directory)
    ca = trustme.CA(organization_name="llmops test CA")
    issued = ca.issue_cert(address, common_name="front-door")
    made = {"ca.crt": directory / "ca.crt", "tls.crt": directory / "tls.crt", "tls.key": directory / "tls.key"}
    ca.cert_pem.write_to_path(str(made["ca.crt"]))
    (made["tls.crt"]).write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
    issued.private_key_pem.write_to_path(str(made["tls.key"]))
    for path in made.values():
        path.chmod(0o644)
    return made


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
