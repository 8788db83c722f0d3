# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's launcher with the real upstream proxy, in the proxy's image, on loopback (tests only).

    python3 front_door_launcher_check.py LAUNCHER UPSTREAM CERT KEY CA INSTANT_ENGINE

Starts two instant engines, then the launcher with TLS, two workers (the upstream's cross-worker manager)
and a client key, and prints one JSON object of what it saw: the answers over HTTPS checked against CA,
what plain HTTP to the same port got, and the mode of the manager's authkey file. Bounded: every
request has a timeout, the wait for the proxy 60 s.
"""

from __future__ import annotations

import json
import os
import ssl
import stat
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

PORT = 18443
KEY = "launcher-check-key"


def status(url, context, body=None, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
    except (OSError, ssl.SSLError) as err:
        return "no answer: %s" % type(err).__name__


def main():
    launcher, upstream, cert, key, ca, engine = sys.argv[1:7]
    procs = [subprocess.Popen([sys.executable, engine, port]) for port in ("18100", "18200")]
    env = dict(os.environ, LLMOPS_FRONT_DOOR_UPSTREAM=upstream, LLMOPS_FRONT_DOOR_KEYS=KEY,
               LLMOPS_FRONT_DOOR_TLS_CERT=cert, LLMOPS_FRONT_DOOR_TLS_KEY=key)
    procs.append(subprocess.Popen([sys.executable, launcher, "--host", "127.0.0.1", "--port", str(PORT), "--workers", "2",
                                   "--prefiller-hosts", "127.0.0.1", "--prefiller-ports", "18100", "--decoder-hosts",
                                   "127.0.0.1", "--decoder-ports", "18200"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    verified = ssl.create_default_context(cafile=ca)
    base = "https://127.0.0.1:%d" % PORT
    seen = {}
    try:
        deadline = time.monotonic() + 60
        while status(base + "/healthcheck", verified) != 200:
            if time.monotonic() > deadline:
                sys.exit("the launcher never answered on %s" % base)
            time.sleep(0.2)
        completion = {"model": "bench", "prompt": "tls", "max_tokens": 1}
        seen["healthcheck over https"] = status(base + "/healthcheck", verified)
        seen["completion over https with the key"] = status(base + "/v1/completions", verified, completion, KEY)
        seen["completion over https without a key"] = status(base + "/v1/completions", verified, completion)
        seen["healthcheck over plain http"] = status("http://127.0.0.1:%d/healthcheck" % PORT, None)
        seen["https checked against the system's store only"] = status(base + "/healthcheck", ssl.create_default_context())
        manager = os.path.join(tempfile.gettempdir(), "vllm_lb_proxy_manager_%d.json" % PORT)
        seen["manager file mode"] = oct(stat.S_IMODE(os.stat(manager).st_mode)) if os.path.exists(manager) else None
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=20)
    print(json.dumps(seen))


if __name__ == "__main__":
    main()
