#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: front_door_members
short_description: Take engines out of the PD proxy's front door, put them back, or bring its lists to the plan's
version_added: 0.1.0
description:
  - Talks to the admin API of the running PD proxy (vllm-ascend's load-balance proxy behind the front door
    launcher), which lists each prefill API and each decode rank as C(host:port), a member.
  - C(state=out) takes members out (only those the proxy lists); a member still serving a request stays listed
    but gets no new one.
  - C(state=in) adds members and waits until the proxy lists each (a new member is listed once its
    C(/v1/models) answers, which upstream checks every C(--waiting-retry-interval), 10 s by default).
  - C(state=planned) takes out the members the proxy lists that O(members) does not have (a removed instance's)
    and returns the ones it lacks as RV(missing), which deploy adds once their engines are ready.
  - Run it on the proxy's host, which without admin keys is the only one the front door answers its admin API.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: full
    details: In check mode it only reads the proxy's lists.
  diff_mode:
    support: none
options:
  url:
    description: The front door's URL (the proxy spec's C(meta.api_url)).
    type: str
    required: true
  admin_key:
    description: An admin key (the first line is used); empty when the front door has none.
    type: str
    default: ""
  ca:
    description: The CA file to check an HTTPS front door's certificate with.
    type: str
    default: ""
  members:
    description: "Members by role: C({prefill: [host:port], decode: [...]})."
    type: dict
    required: true
  state:
    description: What to do with O(members).
    type: str
    choices: [out, in, planned]
    required: true
  machines:
    description:
      - With C(state=planned), the addresses of the inventory's machines. A member taken out on none of them belongs
        to a host removed from the inventory before it was retired (C(vllm_engine_retired)). Its containers are out
        of reach, so they keep running, and the module warns, naming the members.
    type: list
    elements: str
    default: []
  timeout:
    description: Seconds C(state=in) waits for the proxy to list every member.
    type: int
    default: 120
"""

EXAMPLES = r"""
- name: Take decode-b out of the front door before it restarts
  llmops.inference.front_door_members:
    url: http://192.0.2.41:8081
    members: {decode: ["192.0.2.44:9900", "192.0.2.44:9901"]}
    state: out
"""

RETURN = r"""
before:
  description: The proxy's lists when the module started, by role.
  returned: always
  type: dict
after:
  description: The proxy's lists when it ended, by role.
  returned: always
  type: dict
removed:
  description: Members taken out, by role.
  returned: always
  type: dict
drain:
  description: The C(/metrics) URL of each member taken out, by member (what deploy waits on before it stops them).
  returned: always
  type: dict
missing:
  description: With C(state=planned), the members of O(members) the proxy does not list, by role.
  returned: always
  type: dict
unreached:
  description: With C(state=planned), the members taken out that are on no machine of O(machines), by role.
  returned: always
  type: dict
waited:
  description: Seconds C(state=in) waited for the proxy to list the members.
  returned: always
  type: float
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.services import _members as members

INTERVAL = 0.5


def main():
    module = AnsibleModule(
        argument_spec=dict(
            url=dict(type="str", required=True),
            admin_key=dict(type="str", default="", no_log=True),
            ca=dict(type="str", default=""),
            members=dict(type="dict", required=True),
            state=dict(type="str", choices=["out", "in", "planned"], required=True),
            timeout=dict(type="int", default=120),
            machines=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    params = module.params
    key = members.first_key(params["admin_key"])
    api = members.AdminApi(params["url"], key=key, ca=params["ca"] or None)
    wanted = {role: [str(m) for m in params["members"].get(role) or ()] for role in members.ROLES}
    none = {role: [] for role in members.ROLES}
    try:
        before = api.lists()
        result = dict(before=before, after=before, removed=none, missing=none, waited=0.0, drain={}, unreached=none)
        if params["state"] == "planned":
            result["missing"] = members.missing(before, wanted)
            drop = members.unplanned(before, wanted)
            result["unreached"] = members.unreached(drop, params["machines"])
            if members.count(result["unreached"]):
                module.warn("the front door listed %s, on no host of the inventory: taken out of it, but their containers "
                            "keep running. Fix: put their host back in the cluster with vllm_engine_retired: true and run "
                            "the deploy again (it removes them), then take it out of the inventory"
                            % members.text(result["unreached"]))
        elif params["state"] == "out":
            drop = {role: [m for m in wanted[role] if m in before[role]] for role in members.ROLES}
        else:
            drop = none
        if module.check_mode:
            result["removed"] = drop
            module.exit_json(changed=members.count(drop) > 0, **result)
        if members.count(drop):
            result["after"] = api.remove(drop)
            result["removed"], result["drain"] = drop, members.metrics_urls(drop)
        if params["state"] == "in" and members.count(wanted):
            start = time.monotonic()
            result["after"] = after = api.add(wanted)
            while members.count(members.missing(after, wanted)):
                if time.monotonic() - start > params["timeout"]:
                    module.fail_json(msg="the front door at %s did not list %s within %d s: the proxy adds a member once its "
                                         "/v1/models answers with the engines' key (look at the proxy's log), and drops it "
                                         "after --max-waiting-retries checks" % (
                                             params["url"], members.text(members.missing(after, wanted)), params["timeout"]),
                                     **result)
                time.sleep(INTERVAL)
                after = api.add(wanted)
            result["after"], result["waited"] = after, round(time.monotonic() - start, 1)
    except (OSError, ValueError) as err:
        module.fail_json(msg="the front door's admin API at %s: %s" % (params["url"], err))
    changed = members.count(result["removed"]) > 0 or (params["state"] == "in" and members.count(members.missing(before, wanted)) > 0)
    module.exit_json(changed=changed, **result)


if __name__ == "__main__":
    main()
