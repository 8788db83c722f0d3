# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Start a daemon detached from the script that starts it, with the file descriptors it needs only.

    python3 tests/harness/daemon.py LOG COMMAND [ARG...]    # prints the daemon's pid

The daemon gets its own session, stdin from /dev/null, stdout and stderr appended to LOG, and no other
descriptor of its caller: not a lock (dockerd once inherited the apt lock's fd 9 from
docker_engine.sh and held it for as long as it ran), not a pipe whose reader waits for its end (a test
capturing an installer's output). `nohup CMD &` from a shell gives it all of the shell's descriptors.
"""

import subprocess
import sys


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: daemon.py LOG COMMAND [ARG...]")
    log, command = sys.argv[1], sys.argv[2:]
    with open(log, "ab") as out:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                   close_fds=True, start_new_session=True)
    print(process.pid)


if __name__ == "__main__":
    main()
