# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The attempts on a cluster's front door, made from wherever this runs (tests only; standard library).

    python3 front_door_attempts.py [--proxy URL --engine URL --bait-host ADDR --bait-port N
        [--model NAME] [--client-key K] [--old-key K] [--admin-key K] [--wait 3] [--variants] [--guess N]]
        [--tcp ADDR:PORT ...] [--relay URL --relay-route PATH]

With --proxy: runs a bait HTTP server on --bait-port first (what a host an attacker registers would be),
then every attempt once, each bounded by a 10 s timeout. With --relay: the attempts on the metrics relay (a route
it serves given by --relay-route). With --tcp: one TCP connection to each address (what a firewall lets through).
Prints one JSON object: "attempts" (name, HTTP status or 0 when nothing answered), "bait" (every request the bait
received, with its Authorization header) and "tcp" (address: connected, refused or timeout). Only the addresses
given are asked: the test passes the harness's own.
"""

from __future__ import annotations

import argparse
import http.server
import json
import socket
import threading
import time
import urllib.error
import urllib.request

RECEIVED = []


class Bait(http.server.BaseHTTPRequestHandler):
    def _record(self):
        RECEIVED.append({"method": self.command, "path": self.path, "authorization": self.headers.get("Authorization")})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"object": "list", "data": [{"id": "glm"}]}')

    do_GET = do_POST = _record

    def log_message(self, *_args):
        pass


def status(url, body=None, key=None, method=None, headers=None):
    headers = dict({"Content-Type": "application/json"}, **(headers or {}))
    if key:
        headers["Authorization"] = "Bearer " + key
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers=headers, method=method or ("GET" if body is None else "POST"))
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as err:
        return err.code
    except OSError:
        return 0


def connect(address):
    host, _sep, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return "connected"
    except ConnectionRefusedError:
        return "refused"
    except OSError as err:
        return "timeout" if isinstance(err, socket.timeout) else type(err).__name__


def variants(args, proxy, completion):
    """Routes vLLM's own key check leaves open, the same path written otherwise, another method, the key elsewhere than
    a Bearer header, the proxy's own host claimed in headers, a websocket."""
    return [
        ("an engine's /invocations without a key", status(args.engine + "/invocations", completion)),
        ("an engine's /tokenize without a key", status(args.engine + "/tokenize", {"prompt": "attempt"})),
        ("an engine's /docs without a key", status(args.engine + "/docs")),
        ("completion at //v1/completions", status(proxy + "//v1/completions", completion)),
        ("completion at /v1/completions/", status(proxy + "/v1/completions/", completion)),
        ("completion at /V1/completions", status(proxy + "/V1/completions", completion)),
        ("completion at /v1/./completions", status(proxy + "/v1/./completions", completion)),
        ("completion by PUT", status(proxy + "/v1/completions", completion, method="PUT")),
        ("models by HEAD", status(proxy + "/v1/models", method="HEAD")),
        ("the client key as Basic credentials", status(proxy + "/v1/completions", completion,
                                                       headers={"Authorization": "Basic " + args.client_key})),
        ("the client key in X-API-Key", status(proxy + "/v1/completions", completion, headers={"X-API-Key": args.client_key})),
        ("/instances/remove as if from the proxy's host (X-Forwarded-For, X-Real-IP)", status(
            proxy + "/instances/remove", {"type": "decode", "instances": []},
            headers={"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1", "Forwarded": "for=127.0.0.1"})),
        ("a websocket upgrade without a key", status(proxy + "/v1/realtime", headers={
            "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})),
    ]


def attempts(args):
    proxy, completion = args.proxy, {"model": args.model, "prompt": "attempt", "max_tokens": 1}
    bait = "%s:%d" % (args.bait_host, args.bait_port)
    add_bait = {"type": "decode", "instances": [bait]}
    tried = [
        ("completion without a key", status(proxy + "/v1/completions", completion)),
        ("completion with a wrong key", status(proxy + "/v1/completions", completion, "wrong-key")),
        ("chat completion without a key", status(proxy + "/v1/chat/completions", {"model": args.model, "messages": []})),
        ("key in the query string", status(proxy + "/v1/completions?api_key=%s" % args.client_key, completion)),
        ("the admin key on the API", status(proxy + "/v1/completions", completion, args.admin_key)),
        ("/instances/add of the attacker without a key", status(proxy + "/instances/add", add_bait)),
        ("/instances/add of the attacker with a client key", status(proxy + "/instances/add", add_bait, args.client_key)),
        ("/instances/add of the attacker with the admin key", status(proxy + "/instances/add", add_bait, args.admin_key)),
        ("/instances/remove without a key", status(proxy + "/instances/remove", {"type": "decode", "instances": []})),
        ("/reset_prefix_cache without a key", status(proxy + "/reset_prefix_cache", {})),
        ("/reset_prefix_cache with a client key", status(proxy + "/reset_prefix_cache", {}, args.client_key)),
        ("/members (the front door's view) with a client key", status(proxy + "/members", key=args.client_key)),
        ("the engine API without the engines' key", status(args.engine + "/v1/models")),
        ("the engine API with a client key", status(args.engine + "/v1/models", key=args.client_key)),
        ("healthcheck (open)", status(proxy + "/healthcheck")),
        ("completion with a client key", status(proxy + "/v1/completions", completion, args.client_key)),
    ]
    if args.old_key:
        tried.append(("completion with a rotated-out key", status(proxy + "/v1/completions", completion, args.old_key)))
    if args.variants:  # each one a wrong or missing key: the front door counts them against this address
        tried += variants(args, proxy, completion)
    if args.guess:  # last: the front door then answers this address 429 for a while, whatever its key
        answers = [status(proxy + "/v1/completions", completion, "guess-%d" % number) for number in range(args.guess)]
        tried.append(("%d wrong keys in a row: the last one" % args.guess, answers[-1]))
        tried.append(("the client key right after them", status(proxy + "/v1/completions", completion, args.client_key)))
    return [{"attempt": name, "status": code} for name, code in tried]


def relay_attempts(relay, route):
    """The metrics relay from the monitoring network: its planned route answers GET; every other path, the services'
    own APIs behind it and every other method are refused."""
    tried = [
        ("the relay: GET of a planned route (legitimate)", status(relay + route)),
        ("the relay: POST to a planned route", status(relay + route, {"prompt": "attempt"})),
        ("the relay: DELETE of a planned route", status(relay + route, method="DELETE")),
        ("the relay: PUT to a planned route", status(relay + route, {}, method="PUT")),
        ("the relay: a completion", status(relay + "/v1/completions", {"model": "glm", "prompt": "attempt"})),
        ("the relay: /tokenize", status(relay + "/tokenize", {"prompt": "attempt"})),
        ("the relay: the pool's key listing", status(relay + "/get_all_keys")),
        ("the relay: the pool's key query", status(relay + "/query_key?key=attempt")),
        ("the relay: a key deletion", status(relay + "/remove_all", {})),
        ("the relay: a path escaping the route", status(relay + route + "/../../get_all_keys")),
        ("the relay: the route with a suffix", status(relay + route + "/extra")),
        ("the relay: a route of no planned container", status(relay + "/metrics/attacker/evil")),
        ("the relay: an absolute URL as the path", status(relay + "/http://127.0.0.1:9003/get_all_keys")),
    ]
    return [{"attempt": name, "status": code} for name, code in tried]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proxy")
    parser.add_argument("--engine")
    parser.add_argument("--bait-host")
    parser.add_argument("--bait-port", type=int)
    parser.add_argument("--model", default="glm", help="the served model name, so that a refusal is the guard's, not vLLM's 404")
    parser.add_argument("--client-key", default="")
    parser.add_argument("--old-key", default="")
    parser.add_argument("--admin-key", default="")
    parser.add_argument("--wait", type=float, default=3, help="seconds the bait keeps listening after the attempts")
    parser.add_argument("--variants", action="store_true", help="also the variants of paths, methods and headers")
    parser.add_argument("--guess", type=int, default=0, help="wrong keys to send in a row, last")
    parser.add_argument("--tcp", nargs="*", default=[], help="ADDR:PORT to open a TCP connection to")
    parser.add_argument("--relay", help="the metrics relay's URL: the attempts on it")
    parser.add_argument("--relay-route", default="", help="a route the relay serves (/metrics/<host>/<container>)")
    args = parser.parse_args()
    tried = relay_attempts(args.relay, args.relay_route) if args.relay else []
    if args.proxy:
        server = http.server.ThreadingHTTPServer(("0.0.0.0", args.bait_port), Bait)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        tried += attempts(args)
        time.sleep(args.wait)  # an instance the proxy took would be polled by now (its check runs at once)
        server.shutdown()
    print(json.dumps({"attempts": tried, "bait": RECEIVED, "tcp": {address: connect(address) for address in args.tcp}}))


if __name__ == "__main__":
    main()
