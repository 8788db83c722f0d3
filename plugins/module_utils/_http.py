# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one HTTP request the modules make of the cluster's endpoints: readiness probes, metrics, the front door's
admin API, etcd's health."""

from __future__ import annotations

import http.client
import ssl
import urllib.parse
from collections.abc import Mapping


def http_get(url: str, headers: Mapping[str, str] | None = None, timeout: float = 3, ca_path: str | None = None,
             body: bytes | None = None) -> tuple[int, bytes]:
    """(status, body) of a GET (a POST with ``body``). A plain HTTP/1.1 request without "Connection: close": Memcache's
    metrics server (memcache-hybrid 1.3.0) answers such a request without its body. HTTPS checks the
    certificate against ca_path (else the system's trust store). Raises OSError or http.client.HTTPException when
    nothing answered."""
    parts = urllib.parse.urlsplit(url)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        context = ssl.create_default_context(cafile=ca_path or None)
        connection = http.client.HTTPSConnection(parts.hostname or "", parts.port, timeout=timeout, context=context)
    else:
        connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=timeout)
    try:
        connection.request("GET" if body is None else "POST", parts.path or "/", body=body, headers=dict(headers or {}))
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()
