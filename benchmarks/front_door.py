# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the PD proxy's front door costs: latency through the real vllm-ascend proxy, alone and behind the
launcher with client keys (roles/pd_proxy/files/front_door.py): with its failover request path and member probes on
(the default: front_door_router.py serves the completions, /health of each member every second) and off (the
upstream's own request path behind the key check), and with failover over HTTPS, at a fixed concurrency.

Everything runs in one container of the harness's engine image (the proxy's Python, fastapi, httpx and
uvicorn) with no network but its loopback: a prefill and a decode that answer at once
(tests/harness/instant_engine.py, so the proxy is what is measured), the upstream proxy started as the
seed starts it, the same proxy through the launcher with two client keys, and that launcher serving HTTPS
(pd_proxy_tls_*, a certificate openssl makes here; the client opens a new TLS connection per request, as
urllib does, so the handshake is in every figure). Rounds alternate between the variants, each a bounded
number of completions at the concurrency. Prints p50 and p99 per variant and their ratio to the upstream
proxy alone; asserts nothing. Needs Docker, openssl and the harness images (tests/harness/images.sh).
Run after `. scripts/env.sh`:

    python benchmarks/front_door.py [--requests 300] [--concurrency 8] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
UPSTREAM = ROOT / ".build" / "harness" / "engine-context" / "load_balance_proxy_server_example.py"
IMAGE = "llmops-engine:test"
KEYS = ["bench-client-key-1", "bench-client-key-2"]


def outside(args):
    if not UPSTREAM.is_file():
        sys.exit("front_door: %s is missing. Fix: bash tests/harness/images.sh (it fetches the proxy)" % UPSTREAM)
    sys.path.insert(0, str(ROOT / "tests" / "harness"))  # here, not in the container, which runs this file too
    from certificates import make_certificate  # pylint: disable=import-outside-toplevel
    from front_door_files import copy_launcher  # pylint: disable=import-outside-toplevel
    with tempfile.TemporaryDirectory(prefix="llmops-front-door-") as tls:
        make_certificate(tls, "127.0.0.1")
        run_inside(args, tls, copy_launcher(pathlib.Path(tls) / "door"))


def run_inside(args, tls, door):
    command = ["docker", "run", "--rm", "--network", "none", "-v", "%s:/bench/front_door.py:ro" % pathlib.Path(__file__).resolve(),
               "-v", "%s:/bench/door:ro" % door, "-v", "%s:/bench/up:ro" % UPSTREAM.parent,
               "-v", "%s:/bench/harness:ro" % (ROOT / "tests" / "harness"), "-v", "%s:/bench/tls:ro" % tls,
               "--entrypoint", "python3", IMAGE, "/bench/front_door.py", "--inside", "--requests", str(args.requests),
               "--concurrency", str(args.concurrency), "--rounds", str(args.rounds)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    if result.returncode != 0:
        sys.exit("front_door: the run in %s failed:\n%s%s" % (IMAGE, result.stdout[-2000:], result.stderr[-3000:]))
    print(result.stdout, end="")


# --- inside the container -------------------------------------------------------------------------

def inside(args):
    import concurrent.futures  # pylint: disable=import-outside-toplevel
    import ssl  # pylint: disable=import-outside-toplevel
    import statistics  # pylint: disable=import-outside-toplevel
    import time  # pylint: disable=import-outside-toplevel
    import urllib.request  # pylint: disable=import-outside-toplevel

    context = ssl.create_default_context(cafile="/bench/tls/ca.crt")

    def wait(url, headers=None):
        for _attempt in range(300):
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=2, context=context):
                    return
            except OSError:
                time.sleep(0.1)
        sys.exit("front_door: %s never answered" % url)

    flags = ["--prefiller-hosts", "127.0.0.1", "--prefiller-ports", "18100", "--decoder-hosts", "127.0.0.1",
             "--decoder-ports", "18200", "--log-level", "WARNING"]
    procs = [subprocess.Popen([sys.executable, "/bench/harness/instant_engine.py", port]) for port in ("18100", "18200")]
    sys.path.insert(0, "/bench/harness")
    import secret_files  # pylint: disable=import-outside-toplevel
    secret_files.write("LLMOPS_FRONT_DOOR_KEYS", "\n".join(KEYS))  # the client keys, as deploy writes them
    env = dict(os.environ, LLMOPS_FRONT_DOOR_UPSTREAM="/bench/up/load_balance_proxy_server_example.py")
    procs.append(subprocess.Popen([sys.executable, "/bench/up/load_balance_proxy_server_example.py", "--host", "127.0.0.1",
                                   "--port", "18081"] + flags, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    procs.append(subprocess.Popen([sys.executable, "/bench/door/front_door.py", "--host", "127.0.0.1", "--port", "18082"] + flags,
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    procs.append(subprocess.Popen([sys.executable, "/bench/door/front_door.py", "--host", "127.0.0.1", "--port", "18084"] + flags,
                                  env=dict(env, LLMOPS_FRONT_DOOR_FAILOVER="0"), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL))
    procs.append(subprocess.Popen([sys.executable, "/bench/door/front_door.py", "--host", "127.0.0.1", "--port", "18083"] + flags,
                                  env=dict(env, LLMOPS_FRONT_DOOR_TLS_CERT="/bench/tls/tls.crt",
                                           LLMOPS_FRONT_DOOR_TLS_KEY="/bench/tls/tls.key"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    try:
        for url in ("http://127.0.0.1:18100/v1/models", "http://127.0.0.1:18081/healthcheck", "http://127.0.0.1:18082/healthcheck",
                    "http://127.0.0.1:18084/healthcheck", "https://127.0.0.1:18083/healthcheck"):
            wait(url)
        body = json.dumps({"model": "bench", "prompt": "front door", "max_tokens": 1}).encode()
        key = {"Authorization": "Bearer " + KEYS[1]}
        variants = {"upstream proxy alone": ("http://127.0.0.1:18081", {}),
                    "front door, failover on (2 client keys)": ("http://127.0.0.1:18082", key),
                    "front door, failover off (2 client keys)": ("http://127.0.0.1:18084", key),
                    "front door over HTTPS, failover on": ("https://127.0.0.1:18083", key)}

        def one(url, headers):
            request = urllib.request.Request(url + "/v1/completions", data=body,
                                             headers=dict({"Content-Type": "application/json"}, **headers))
            start = time.perf_counter()
            with urllib.request.urlopen(request, timeout=30, context=context) as answer:
                answer.read()
                if answer.status != 200:
                    raise RuntimeError("HTTP %d" % answer.status)
            return time.perf_counter() - start

        samples = {name: [] for name in variants}
        for url, headers in variants.values():  # warm both up
            for _warm in range(20):
                one(url, headers)
        for _round in range(args.rounds):
            for name, (url, headers) in variants.items():
                with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                    samples[name] += list(pool.map(lambda _i, u=url, h=headers: one(u, h), range(args.requests)))
        print("front door latency: %d completions per variant at concurrency %d, in %d alternating rounds" % (
            args.requests * args.rounds, args.concurrency, args.rounds))
        figures = {}
        for name, values in samples.items():
            values.sort()
            figures[name] = (statistics.median(values), values[int(0.99 * (len(values) - 1))])
            print("  %-42s p50 %6.2f ms  p99 %6.2f ms" % (name, figures[name][0] * 1000, figures[name][1] * 1000))
        base50, base99 = figures["upstream proxy alone"]
        for name in list(variants)[1:]:
            door50, door99 = figures[name]
            print("  added %s: p50 %+.2f ms (%.2f x), p99 %+.2f ms (%.2f x)" % (
                name, (door50 - base50) * 1000, door50 / base50, (door99 - base99) * 1000, door99 / base99))
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=300, help="completions per variant and round")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--inside", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    (inside if args.inside else outside)(args)


if __name__ == "__main__":
    main()
