# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The front door's members: which engine endpoints the PD proxy lists, and the admin calls that change them.

vllm-ascend's proxy lists each prefill API and each decode rank as "host:port" (a member). Its admin API
(POST /instances/add and /instances/remove, {"type": "prefill" | "decode", "instances": [...]}) answers with the
lists it holds ("current_prefill_instances", "current_decode_instances"); an add of no instance is how its
lists are read, as it has no endpoint that only reads them. A removed member is tainted while any request is in
flight (no new request goes to it) and dropped when none is; an added one waits until its /v1/models answers
(upstream's --waiting-retry-interval, 10 s by default, at most --max-waiting-retries times).

Deploy takes the members of an instance out before it restarts, and puts them back once it is ready; it takes out
the members the plan no longer has (a removed instance) before their containers go, and adds the new ones.
"""

from __future__ import annotations

import http.client
import json
import re
import typing as t
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence

from ansible_collections.llmops.inference.plugins.module_utils._http import http_get
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_types import LaunchSpec
from ansible_collections.llmops.inference.plugins.module_utils.plan._spec_meta import api_url, front_door, kind
from ansible_collections.llmops.inference.plugins.module_utils.plan._spec_meta import ca as ca_file

ROLES = ("prefill", "decode")
LISTS = {"prefill": "current_prefill_instances", "decode": "current_decode_instances"}


def planned(specs: Sequence[LaunchSpec]) -> dict[str, list[str]]:
    """{role: [member, ...]} the plan's engines give the proxy, in spec order."""
    found: dict[str, list[str]] = {role: [] for role in ROLES}
    for spec in specs:
        member = front_door(spec)
        if member and member[1] not in found[member[0]]:
            found[member[0]].append(member[1])
    return found


def proxy_of(specs: Sequence[LaunchSpec]) -> LaunchSpec | None:
    """The proxy's spec among a cluster's specs, else None."""
    return next((spec for spec in specs if kind(spec) == "proxy"), None)


def door_of(specs: Sequence[LaunchSpec]) -> dict[str, t.Any] | None:
    """{"host", "url", "ca", "secret_env", "members"} of the plan's front door (its proxy, the plan's members), else
    None."""
    proxy = proxy_of(specs)
    if proxy is None:
        return None
    return {"host": proxy["host"], "url": api_url(proxy), "ca": ca_file(proxy) or "",
            "secret_env": proxy.get("secret_env"), "members": planned(specs)}


def of_specs(specs: Sequence[LaunchSpec]) -> list[dict[str, str]]:
    """[{"role", "member"}] of the given engine specs (an instance's, for a roll)."""
    return [{"role": m[0], "member": m[1]} for m in (front_door(s) for s in specs) if m]


def by_role(items: Iterable[Mapping[str, str]]) -> dict[str, list[str]]:
    """{role: [member, ...]} of [{"role", "member"}] items."""
    found: dict[str, list[str]] = {role: [] for role in ROLES}
    for item in items:
        if item["member"] not in found[item["role"]]:
            found[item["role"]].append(item["member"])
    return found


def listed(answer: Mapping[str, t.Any]) -> dict[str, list[str]]:
    """{role: [member, ...]} the proxy holds, from the answer of an admin call."""
    return {role: [str(m) for m in answer.get(LISTS[role]) or ()] for role in ROLES}


def unplanned(current: Mapping[str, Sequence[str]], plan: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """{role: [member]} the proxy lists that the plan does not have (a removed instance's)."""
    return {role: [m for m in current[role] if m not in plan[role]] for role in ROLES}


def unreached(members: Mapping[str, Sequence[str]], machines: Iterable[str]) -> dict[str, list[str]]:
    """{role: [member]} of members on no machine of the inventory (``machines``: addresses): a host removed from the
    inventory before it was retired, whose containers deploy cannot reach."""
    known = set(machines)
    return {role: [m for m in members.get(role) or () if m.rpartition(":")[0] not in known] for role in ROLES}


def missing(current: Mapping[str, Sequence[str]], plan: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """{role: [member]} the plan has that the proxy does not list (a new instance's)."""
    return {role: [m for m in plan[role] if m not in current[role]] for role in ROLES}


# A member's state on the front door's /metrics (roles/pd_proxy/files/front_door_health.py writes it), 1 for the current
DOOR_STATE = re.compile(r'^llmops_front_door_member_state\{role="(\w+)",member="([^"]+)",state="(\w+)"\} 1$', re.MULTILINE)


def door_states(metrics_text: str | None) -> dict[str, str]:
    """{member: state} as the front door sees its members (serving, ejected, probation), from its /metrics."""
    return {member: state for _role, member, state in DOOR_STATE.findall(metrics_text or "")}


def first_key(text: str | None) -> str | None:
    """The admin key the collection's calls use: the first non-empty line of the keys text, else None."""
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), None)


def compared(url: str, key: str | None, ca: str | None, wanted: Mapping[str, t.Any]) -> dict[str, t.Any]:
    """What the running front door lists against the plan's members ({role: [member]}): {"missing", "unplanned"} by
    role, or {"error"} when its admin API does not answer (deploy then asks again, in the task that acts on it)."""
    plan = {role: [str(m) for m in wanted.get(role) or ()] for role in ROLES}
    try:
        current = AdminApi(url, key=key, ca=ca).lists()
    except (OSError, ValueError) as err:
        return {"error": "the front door's admin API at %s: %s" % (url, err)}
    return {"missing": missing(current, plan), "unplanned": unplanned(current, plan)}


def count(members: Mapping[str, Sequence[str]]) -> int:
    return sum(len(v) for v in members.values())


def text(members: Mapping[str, Sequence[str]]) -> str:
    return ", ".join("%s %s" % (role, " ".join(members[role])) for role in ROLES if members.get(role)) or "none"


def metrics_urls(members: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """{member: its /metrics URL}: where a member's in-flight requests are read before its container stops."""
    return {m: "http://%s/metrics" % m for role in ROLES for m in members.get(role) or ()}


class AdminApi:
    """The proxy's admin API at url, with an admin key (or none: the proxy's own host) and a CA for HTTPS."""

    def __init__(self, url: str, key: str | None = None, ca: str | None = None, timeout: float = 10) -> None:
        parts = urllib.parse.urlsplit(url)
        self.origin = "%s://%s" % (parts.scheme, parts.netloc)
        self.key, self.ca, self.timeout = key, ca, timeout

    def call(self, path: str, role: str, members: Iterable[str]) -> dict[str, t.Any]:
        """The answer of POST path for role's members (a list); raises OSError or ValueError naming what failed."""
        headers = {"Content-Type": "application/json"}
        if self.key:
            headers["Authorization"] = "Bearer " + self.key
        request = json.dumps({"type": role, "instances": list(members)}).encode()
        try:
            status, raw = http_get(self.origin + path, headers, self.timeout, ca_path=self.ca, body=request)
        except http.client.HTTPException as err:
            raise OSError("%s: %s" % (path, err)) from None
        body = raw.decode(errors="replace")
        if status != 200:
            raise ValueError("%s answered %d: %s" % (path, status, body[:300]))
        answer: dict[str, t.Any] = json.loads(body)
        if "error" in answer:
            raise ValueError("%s: %s" % (path, answer["error"]))
        return answer

    def lists(self) -> dict[str, list[str]]:
        """{role: [member]} the proxy holds."""
        return listed(self.call("/instances/add", "prefill", []))

    def remove(self, members: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        """Take members out; returns the lists after (a member still in flight stays listed, tainted)."""
        return self._each("/instances/remove", members)

    def add(self, members: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        """Put members in (or back); returns the lists after (a new member waits until its /v1/models answers)."""
        return self._each("/instances/add", members)

    def _each(self, path: str, members: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
        """POST path for each role with members; the lists after the last call (read anew when there was none)."""
        answer = None
        for role in ROLES:
            if members.get(role):
                answer = self.call(path, role, members[role])
        return listed(answer) if answer else self.lists()
