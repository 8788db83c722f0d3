# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of benchmark.yml (_benchmark): the sweep points of the workloads, refused with every problem, a point's
progress line, and an earlier run read back as a baseline."""

from __future__ import annotations

import json
import os

from ansible.errors import AnsibleFilterError

from ansible_collections.llmops.inference.plugins.module_utils.services import _benchmark as bench


def benchmark_points(workloads):
    try:
        return bench.points(workloads)
    except bench.WorkloadError as err:
        raise AnsibleFilterError(str(err)) from None


def benchmark_line(run, point):
    return bench.line(bench.point_row(point, run))


def benchmark_baseline(path, specs):
    """{"rows", "problems"} of an earlier run's directory (its summary.json) against this cluster's specs."""
    summary = os.path.join(os.path.expanduser(path), "summary.json")
    try:
        with open(summary, encoding="utf-8") as handle:
            then = json.load(handle)
    except (OSError, ValueError) as err:
        return {"rows": [], "problems": ["llmops_benchmark_baseline: %s is no benchmark run (%s). Fix: give a directory "
                                         "benchmark.yml wrote, <llmops_benchmark_dir>/<cluster>-<UTC time>." % (path, err)]}
    return {"rows": then.get("rows") or [], "problems": bench.same_shape(bench.shape(specs), then.get("shape"))}


class FilterModule:
    def filters(self):
        return {"benchmark_points": benchmark_points, "benchmark_line": benchmark_line, "benchmark_baseline": benchmark_baseline}
