# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A SIMULATED `npu-smi` for harness nodes. Not part of the product, never shipped.

`npu-smi info` prints the table the real tool prints (Atlas A2 layout) for the fields the
collection reads: each NPU's id, name and health, and the processes using each NPU. Processes are
found for real: every process on the node holding /dev/davinciN open (the simulated engine holds
its visible devices, as the real one does). Health and the version come from a state file the
tests may change (/var/lib/llmops-sim/npu.json: {"version": "...", "health": {"3": "Critical"}}).
"""

import json
import os
import re
import sys

STATE = os.environ.get("LLMOPS_SIM_NPU_STATE", "/var/lib/llmops-sim/npu.json")
RULE = "+---------------------------+---------------+----------------------------------------------------+"
DOUBLE = "+===========================+===============+====================================================+"


def state():
    try:
        with open(STATE, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return {}


def npus():
    return sorted(int(m.group(1)) for m in (re.fullmatch(r"davinci(\d+)", n) for n in os.listdir("/dev")) if m)


def holders():
    """{npu: [(pid, name)]}: processes with /dev/davinciN open."""
    found = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir("/proc/%s/fd" % pid)
            with open("/proc/%s/comm" % pid, encoding="utf-8") as handle:
                name = handle.read().strip()
        except OSError:
            continue
        devices = set()
        for fd in fds:
            try:
                match = re.fullmatch(r"/dev/davinci(\d+)", os.readlink("/proc/%s/fd/%s" % (pid, fd)))
            except OSError:
                continue
            if match:
                devices.add(int(match.group(1)))
        for device in devices:
            found.setdefault(device, []).append((int(pid), name))
    return found


def info():
    config = state()
    version = config.get("version", "23.0.6")
    health = config.get("health") or {}
    print("+" + "-" * 96 + "+")
    print("| %-96s|" % ("npu-smi %s                   Version: %s" % (version, version)))
    print(RULE)
    print("| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|")
    print("| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |")
    print(DOUBLE)
    for npu in npus():
        print("| %-25s | %-13s | %-51s|" % ("%-5d 910B3" % npu, health.get(str(npu), "OK"), "93.1        36                0    / 0"))
        print("| %-25s | %-13s | %-51s|" % ("0", "0000:%02X:00.0" % (0xC1 + npu), "0           0    / 0          3161 / 65536"))
        print(DOUBLE)
    print(RULE)
    print("| NPU     Chip              | Process id    | Process name             | Process memory(MB)      |")
    print(DOUBLE)
    using = holders()
    for npu in npus():
        if not using.get(npu):
            print("| %-95s|" % ("No running processes found in NPU %d" % npu))
        for pid, name in using.get(npu, []):
            print("| %-25s | %-13d | %-24s | %-24s|" % ("%-7d 0" % npu, pid, name, 58000))
        print(DOUBLE)


def main(argv):
    if argv[:1] == ["info"] and len(argv) == 1:
        info()
        return 0
    sys.stderr.write("npu-smi (simulated): only `npu-smi info` is simulated, not %s\n" % " ".join(argv))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
