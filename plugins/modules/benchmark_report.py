#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: benchmark_report
short_description: Write a benchmark run's report on the controller and compare it with a baseline
version_added: 0.1.0
description:
  - Writes C(<dest>/<cluster>-<UTC time>/) - C(points/) (the raw C(vllm bench serve) JSON of each sweep point),
    C(counters.json) (every engine's and pool service's counters before and after each point), C(plan.json) (the
    cluster's plan digest, images and shape), C(summary.json) (one row of figures per point, read back as a baseline),
    C(report.txt) (the table and the comparison) and C(sweep.svg) (latency against output throughput, one line per
    figure).
  - With O(baseline), each figure's change against the same point of that earlier run; a change for the worse beyond
    O(threshold) is a regression.
author:
  - llmops.inference contributors (@llmops)
extends_documentation_fragment:
  - llmops.inference.attributes
attributes:
  check_mode:
    support: none
    details: Writes the report in every mode (it changes no host of the cluster).
  diff_mode:
    support: none
    details: A new report each run.
options:
  dest:
    description: Directory the run directory goes into (C(llmops_benchmark_dir)); created when missing.
    type: path
    required: true
  cluster:
    description: Cluster name.
    type: str
    required: true
  points:
    description: The points run, in order (benchmark_points).
    type: list
    elements: dict
    required: true
  runs:
    description: The cluster_benchmark result of each point, in the same order.
    type: list
    elements: dict
    required: true
  specs:
    description: Every launch spec of the cluster (its digest, images and shape).
    type: list
    elements: dict
    required: true
  baseline:
    description: An earlier run's directory to compare with; empty for none.
    type: path
    default: ""
  threshold:
    description: A change for the worse beyond this fraction of the baseline's figure is a regression.
    type: float
    default: 0.1
"""

EXAMPLES = r"""
- name: Write the report
  llmops.inference.benchmark_report:
    dest: /var/tmp/llmops-benchmarks
    cluster: pd_a2
    points: "{{ points }}"
    runs: "{{ runs.results }}"
    specs: "{{ _llmops_cluster_specs }}"
  delegate_to: localhost
"""

RETURN = r"""
path:
  description: The run directory.
  returned: success
  type: str
table:
  description: The table of the points (one line per point).
  returned: success
  type: list
  elements: str
comparison:
  description: Each figure's change against the baseline (empty without one).
  returned: success
  type: list
  elements: str
regressions:
  description: The changes of the comparison that are regressions.
  returned: success
  type: list
  elements: str
"""

import datetime
import hashlib
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.llmops.inference.plugins.module_utils.operations._verify import service_changes
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import spec_hash
from ansible_collections.llmops.inference.plugins.module_utils.services import _benchmark as bench
from ansible_collections.llmops.inference.plugins.module_utils.services._svg_plot import line_plot


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            cluster=dict(type="str", required=True),
            points=dict(type="list", elements="dict", required=True),
            runs=dict(type="list", elements="dict", required=True),
            specs=dict(type="list", elements="dict", required=True),
            baseline=dict(type="path", default=""),
            threshold=dict(type="float", default=0.1),
        ),
        supports_check_mode=False,
    )
    params = module.params
    now = datetime.datetime.now(datetime.UTC)
    path = os.path.join(params["dest"], "%s-%s" % (params["cluster"], now.strftime("%Y%m%dT%H%M%SZ")))
    rows, counters = [], []
    for point, run in zip(params["points"], params["runs"]):
        found = bench.point_row(point, run)
        before = run.get("services_before") or {}
        found["pool_services"] = {name: service_changes(before.get(name) or {}, after)
                                  for name, after in (run.get("services_after") or {}).items()}
        rows.append(found)
        counters.append({"workload": point["workload"], "sweep": point["sweep"], "value": point["value"],
                         "engines_before": run.get("before"), "engines_after": run.get("after"),
                         "services_before": run.get("services_before"), "services_after": run.get("services_after")})
    specs = params["specs"]
    plan = {"digest": hashlib.sha256("".join(sorted(spec_hash(s) for s in specs)).encode()).hexdigest()[:16],
            "images": sorted({s.get("image") for s in specs if s.get("image")}), "shape": bench.shape(specs)}
    comparison = {"lines": [], "regressions": []}
    if params["baseline"]:
        try:
            with open(os.path.join(params["baseline"], "summary.json"), encoding="utf-8") as handle:
                comparison = bench.compare(rows, json.load(handle).get("rows") or [], params["threshold"])
        except (OSError, ValueError) as err:
            module.fail_json(msg="llmops_benchmark_baseline %s: %s" % (params["baseline"], err))
    table = bench.table(rows)
    try:
        os.makedirs(os.path.join(path, "points"), exist_ok=True)
        for index, (point, run) in enumerate(zip(params["points"], params["runs"])):
            write_json(os.path.join(path, "points", "%02d-%s-%s-%s.json" % (index + 1, point["workload"], point["sweep"], point["value"])),
                       run.get("result") or {})
        write_json(os.path.join(path, "counters.json"), counters)
        write_json(os.path.join(path, "plan.json"), plan)
        write_json(os.path.join(path, "summary.json"), dict(plan, cluster=params["cluster"], time=now.isoformat(), rows=rows,
                                                            baseline=params["baseline"] or None, threshold=params["threshold"],
                                                            comparison=comparison["lines"], regressions=comparison["regressions"]))
        with open(os.path.join(path, "report.txt"), "w", encoding="utf-8") as handle:
            handle.write("\n".join(["cluster %s, plan %s, images %s" % (params["cluster"], plan["digest"], ", ".join(plan["images"]))]
                                   + table + ([""] + ["against %s:" % params["baseline"]] + comparison["lines"] if params["baseline"] else []))
                         + "\n")
        with open(os.path.join(path, "sweep.svg"), "wb") as handle:
            handle.write(line_plot(bench.plot_series(rows), "%s: latency against throughput" % params["cluster"], "output tokens/s", "ms"))
    except OSError as err:
        module.fail_json(msg="cannot write the benchmark report under %s: %s. Fix: set llmops_benchmark_dir to a writable "
                             "directory of the controller." % (params["dest"], err))
    module.exit_json(changed=True, path=path, table=table, comparison=comparison["lines"], regressions=comparison["regressions"])


if __name__ == "__main__":
    main()
