# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A SIMULATED `hccn_tool` for harness nodes. Not part of the product, never shipped.

Answers the queries the collection's preflight makes, for each /dev/davinciN of the node, in the
shape of the real tool's output: `-i N -link -g` ("link status: UP"), `-net_health -g` ("net
health status: Success"), `-ip -g` ("ipaddr:... / netmask:..."), `-tls -g` ("... tls switch[0]
..."), `-ping -g address IP` (packets transmitted / received). NPU N of a node whose address ends
in .X has 192.168.X.(10+N). Faults come from a state file the tests write
(/var/lib/llmops-sim/hccn.json: {"link": {"3": "DOWN"}, "health": {"3": "Init"}, "tls": {"0": 1},
"unreachable": ["192.168.44.10"]}); a ping reaches every other simulated NPU address.
"""

import json
import os
import re
import socket
import sys

STATE = os.environ.get("LLMOPS_SIM_HCCN_STATE", "/var/lib/llmops-sim/hccn.json")


def state():
    try:
        with open(STATE, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def node_octet():
    """The last octet of the node's harness address (eth0; the node's own Docker bridge is not it)."""
    for line in os.popen("ip -4 -o addr show dev eth0").read().splitlines():
        match = re.search(r"inet (\d+)\.(\d+)\.(\d+)\.(\d+)/", line)
        if match:
            return int(match.group(4))
    return int(socket.gethostbyname(socket.gethostname()).rsplit(".", 1)[1])


def main(argv):
    if len(argv) < 4 or argv[0] != "-i" or not argv[1].isdigit():
        sys.stderr.write("hccn_tool (simulated): usage hccn_tool -i N -link|-net_health|-ip|-tls -g | -ping -g address IP\n")
        return 2
    npu, query = argv[1], argv[2:]
    if not os.path.exists("/dev/davinci%s" % npu):
        sys.stderr.write("device %s does not exist\n" % npu)
        return 1
    config = state()
    if query == ["-link", "-g"]:
        print("link status: %s" % config.get("link", {}).get(npu, "UP"))
    elif query == ["-net_health", "-g"]:
        print("net health status: %s" % config.get("health", {}).get(npu, "Success"))
    elif query == ["-ip", "-g"]:
        print("ipaddr:192.168.%d.%d\nnetmask:255.255.255.0" % (node_octet(), 10 + int(npu)))
    elif query == ["-tls", "-g"]:
        switch = config.get("tls", {}).get(npu, 0)
        print("dev_id:%s, tls switch[%d](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), "
              "tls alarm time threshold[60]days" % (npu, switch))
    elif query[:3] == ["-ping", "-g", "address"] and len(query) == 4:
        address = query[3]
        reached = re.fullmatch(r"192\.168\.\d+\.\d+", address) and address not in config.get("unreachable", [])
        print("device %s PING %s" % (npu, address))
        print("3 packets transmitted, %d received, %s packet loss" % ((3, "0.00%") if reached else (0, "100.00%")))
    else:
        sys.stderr.write("hccn_tool (simulated): %s is not simulated\n" % " ".join(query))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
