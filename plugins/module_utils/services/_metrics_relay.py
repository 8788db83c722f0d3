# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The metrics relay: the monitoring networks' only way into a cluster whose host firewall is on.

Every port that serves /metrics serves more (an engine's API port its completions and /tokenize, the Mooncake
master's metrics port its key queries, etcd's client port the store), and a host firewall sees ports, not requests.
So, when the operator names monitoring networks, the cluster gets one relay (host_firewall's files/metrics_relay.py)
on the front door's host (or, without a front door, the first node): it answers ``GET /metrics/<host>/<container>``
for each planned /metrics endpoint and nothing else, and the firewall gives the monitoring networks its port alone,
keeping the services' ports to the cluster's hosts. Prometheus scrapes through it (monitoring.yml's targets carry
``__metrics_path__``). One relay rather than one per host: the front door's host is the one outsiders already reach,
Prometheus gets one address, and each host runs nothing more; the relay reaches the services over the cluster network.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from typing import Any

from ansible_collections.llmops.inference.plugins.module_utils.plan import _spec_meta as spec_meta
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec

SERVICE = "metrics_relay"  # the planner's service name (host_firewall's declare): the firewall's "monitoring" reach
KIND = "metrics_relay"  # its launch spec's meta kind
SCRIPT = "metrics_relay.py"
ROUTES = "routes.json"
PREFIX = "/metrics/"


def route(spec: LaunchSpec) -> str:
    """The relay's path of a spec's /metrics: /metrics/<inventory host>/<container>."""
    return "%s%s/%s" % (PREFIX, spec["host"], spec["name"])


def routes(specs: list[LaunchSpec]) -> dict[str, str]:
    """{relay path: upstream /metrics URL} of every spec with a /metrics endpoint."""
    return {route(spec): url for spec in specs if (url := spec_meta.metrics_url(spec))}


def spec_fields(settings: dict[str, Any], specs: list[LaunchSpec]) -> LaunchSpec:
    """The relay's launch spec fields from ``settings`` (name, host, address, image, port, bind, config_dir, script: the
    relay's text) and the cluster's other specs, whose /metrics it serves. Its routes file is live: a cluster that grows
    or shrinks gets it rewritten in place and the relay reads it again, restarting nothing. It starts in the last wave
    (it needs nothing running: an upstream not up yet answers 502)."""
    config_dir = settings["config_dir"].rstrip("/")
    script, listed = config_dir + "/" + SCRIPT, config_dir + "/" + ROUTES
    url = "http://%s:%s" % (settings["address"], settings["port"])
    return {
        "name": settings["name"], "host": settings["host"], "image": settings["image"],
        "command": ["python3", script, "--host", str(settings["bind"]), "--port", str(settings["port"]), "--routes", listed],
        "volumes": ["%s:%s:ro" % (config_dir, config_dir)],
        "files": {script: settings["script"], listed: json.dumps(routes(specs), indent=2, sort_keys=True) + "\n"},
        "wave": max((spec["wave"] for spec in specs), default=0),
        "ready": {"http": url + "/health"},
        "meta": {"kind": KIND, "port": int(settings["port"]), "relay_url": url, "live": {"flags": [], "files": [listed]}},
    }


def relay_of(specs: Sequence[LaunchSpec]) -> LaunchSpec | None:
    return next((spec for spec in specs if spec_meta.kind(spec) == KIND), None)


def scrape_target(spec: LaunchSpec, relay: LaunchSpec | None) -> tuple[str, dict[str, str]]:
    """(address Prometheus scrapes, labels that say how) of a spec's /metrics: the relay's address with the spec's path
    when the cluster has a relay, else the endpoint itself. ``instance`` stays the endpoint's host:port either way."""
    endpoint = urllib.parse.urlsplit(spec_meta.metrics_url(spec) or "").netloc
    if relay is None:
        return endpoint, {}
    relay_url = spec_meta.of(relay).get("relay_url") or ""
    return urllib.parse.urlsplit(relay_url).netloc, {"__metrics_path__": route(spec), "instance": endpoint}
