# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host firewall table, loaded by real nftables in a network namespace made here, probed over IPv4 and IPv6 from
a second one (tests only; standard library, iproute2 and nft; run as root in a throwaway container with CAP_NET_ADMIN and
CAP_SYS_ADMIN).

    python3 firewall_netns.py RULES --host ADDR --host6 ADDR6 --source ADDR... --listen PORT... \
        --probe SOURCE,PORT... [--outbound SOURCE,PORT] [--restart-nftables UNIT]

Makes the namespaces "fwhost" (the host: ADDR and ADDR6 on a veth) and "fwpeer" (every --source address on the
other end), loads RULES in fwhost with ``nft -f``, listens on every --listen port there (one dual-stack socket each),
then connects from fwpeer, from each probe's source address to the host's address of that family. --outbound: the
host connects to a listener on that peer address (the replies must come back). --restart-nftables: before the
probes, what ``systemctl restart nftables`` does to the host's rules, run in its namespace: the ExecStop and ExecStart
of the image's own nftables.service (Debian's: ``flush ruleset``, then /etc/nftables.conf, which flushes again), then
the ExecStart of UNIT, the collection's boot unit (PartOf that service, ordered after it). Prints one JSON object
{"SOURCE,PORT": connected / refused / timeout, "outbound": ..., "flushed": whether the restart had removed the
collection's table before UNIT ran}. Only the namespaces it made are asked.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import shlex
import socket
import subprocess
import sys
import time

HOST, PEER = "fwhost", "fwpeer"
TIMEOUT = 2.0


def sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


def in_ns(namespace: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", namespace, *argv]


def address_cidr(address: str) -> str:
    return address + ("/24" if ipaddress.ip_address(address).version == 4 else "/64")


def make_namespaces(host: str, host6: str, sources: list[str]) -> None:
    for namespace in (HOST, PEER):
        sh("ip", "netns", "add", namespace)
        sh(*in_ns(namespace, "ip", "link", "set", "lo", "up"))
    sh("ip", "link", "add", "fw-h", "netns", HOST, "type", "veth", "peer", "name", "fw-p", "netns", PEER)
    for namespace, device, addresses in ((HOST, "fw-h", [host, host6]), (PEER, "fw-p", sources)):
        for address in addresses:
            sh(*in_ns(namespace, "ip", "addr", "add", address_cidr(address), "dev", device, "nodad"))
        sh(*in_ns(namespace, "ip", "link", "set", device, "up"))


DISTRIBUTION_UNIT = "/lib/systemd/system/nftables.service"


def exec_lines(unit: str) -> dict[str, list[str]]:
    """{ExecStart: argv, ...} of a systemd unit file."""
    with open(unit, encoding="utf-8") as text:
        return {key: shlex.split(value) for key, _eq, value in (line.strip().partition("=") for line in text)
                if key.startswith("Exec")}


def restart_nftables(unit: str) -> bool:
    """``systemctl restart nftables`` in the host namespace, then the collection's unit; whether the collection's
    table was gone in between."""
    distribution = exec_lines(DISTRIBUTION_UNIT)
    for step in ("ExecStop", "ExecStart"):
        sh(*in_ns(HOST, *distribution[step]))
    listing = subprocess.run(in_ns(HOST, "nft", "list", "ruleset"), check=True, capture_output=True, text=True).stdout
    sh(*in_ns(HOST, *exec_lines(unit)["ExecStart"]))
    return 'comment "llmops ' not in listing


def listen(ports: list[int]) -> None:
    """Accepts on every port until killed (run inside a namespace)."""
    sockets = []
    for port in ports:
        server = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("::", port))
        server.listen(16)
        server.setblocking(False)
        sockets.append(server)
    print("listening", flush=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for server in sockets:
            try:
                server.accept()[0].close()
            except BlockingIOError:
                pass
        time.sleep(0.01)


def connect(source: str, target: str, port: int) -> str:
    family = socket.AF_INET if ipaddress.ip_address(source).version == 4 else socket.AF_INET6
    with socket.socket(family, socket.SOCK_STREAM) as client:
        client.settimeout(TIMEOUT)
        client.bind((source, 0))
        try:
            client.connect((target, port))
            return "connected"
        except ConnectionRefusedError:
            return "refused"
        except OSError as err:  # ICMP administratively prohibited, unreachable
            return "timeout" if isinstance(err, TimeoutError) else "refused (%s)" % (err.strerror or err)


def probe(pairs: list[str], host: str, host6: str) -> dict[str, str]:
    """{SOURCE,PORT: answer} (run inside the peer namespace)."""
    answers = {}
    for pair in pairs:
        source, port = pair.rsplit(",", 1)
        target = host if ipaddress.ip_address(source).version == 4 else host6
        answers[pair] = connect(source, target, int(port))
    return answers


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("rules", nargs="?")
    parser.add_argument("--host", required=True)
    parser.add_argument("--host6", required=True)
    parser.add_argument("--source", nargs="*", default=[])
    parser.add_argument("--listen", nargs="*", type=int, default=[])
    parser.add_argument("--probe", nargs="*", default=[])
    parser.add_argument("--outbound")
    parser.add_argument("--restart-nftables", metavar="UNIT")
    parser.add_argument("--role", choices=["listen", "probe"])
    args = parser.parse_args()
    if args.role == "listen":
        listen(args.listen)
        return 0
    if args.role == "probe":
        print(json.dumps(probe(args.probe, args.host, args.host6)))
        return 0
    make_namespaces(args.host, args.host6, args.source)
    sh(*in_ns(HOST, "nft", "-f", args.rules))
    flushed = restart_nftables(args.restart_nftables) if args.restart_nftables else None
    me = [sys.executable, __file__, "--host", args.host, "--host6", args.host6]
    listener = subprocess.Popen(in_ns(HOST, *me, "--role", "listen", "--listen", *map(str, args.listen)), stdout=subprocess.PIPE, text=True)
    outbound = None
    if args.outbound:
        source, port = args.outbound.rsplit(",", 1)
        outbound = subprocess.Popen(in_ns(PEER, *me, "--role", "listen", "--listen", port), stdout=subprocess.PIPE, text=True)
    try:
        for server in filter(None, (listener, outbound)):
            assert server.stdout.readline().strip() == "listening"
        answers = json.loads(subprocess.run(in_ns(PEER, *me, "--role", "probe", "--probe", *args.probe), check=True,
                                            capture_output=True, text=True, timeout=120).stdout)
        if args.outbound:
            source, port = args.outbound.rsplit(",", 1)
            reach = "import socket; s = socket.create_connection((%r, %s), 2); print('connected')" % (source, port)
            run = subprocess.run(in_ns(HOST, sys.executable, "-c", reach), capture_output=True, text=True, timeout=30, check=False)
            answers["outbound"] = run.stdout.strip() or run.stderr.strip()[-200:]
    finally:
        for server in filter(None, (listener, outbound)):
            server.kill()
        for namespace in (HOST, PEER):
            subprocess.run(["ip", "netns", "del", namespace], check=False)
    if flushed is not None:
        answers["flushed"] = flushed
    print(json.dumps(answers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
