# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which containers Docker restarts by itself, how deploy starts them with it and sets it on running ones."""

from __future__ import annotations

from ansible_collections.llmops.inference.plugins.module_utils.operations import _container_state as container_state
from ansible_collections.llmops.inference.plugins.module_utils.operations import _docker_run as docker_run
from ansible_collections.llmops.inference.plugins.module_utils.operations import _rollout as rollout
from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _restart_policy as restart_policy


def engine(name, host, group, role="decode"):
    return launch.new_spec(name=name, host=host, image="e", command=["vllm", "serve"],
                           meta={"kind": "engine", "role": role, "dp_group": group, "dp_ranks": [0]})


def service(name, host, kind):
    return launch.new_spec(name=name, host=host, image="s", command=["serve"], meta={"kind": kind})


SPECS = [
    service("mooncake-master", "p0", "pool_service"),           # without HA: engines restart after it, in a deploy
    service("etcd", "p0", "pool_store"),
    engine("vllm-prefill-dp0", "p0", None, "prefill"),        # a DP group alone (its own coordinator, none named)
    engine("vllm-prefill-dp1", "p1", "10.0.0.1:9100", "prefill"),  # alone in its group too
    engine("vllm-decode-dp0", "d0", "10.0.0.3:9200"),
    engine("vllm-decode-dp1", "d1", "10.0.0.3:9200"),          # the decode group spans two containers
    service("pd-proxy", "p0", "proxy"),
    service("llmops-metrics-relay", "p0", "metrics_relay"),
]


def test_services_and_engines_alone_in_their_group_restart_by_themselves_and_no_dp_group_of_several():
    found = {spec["name"]: spec["restart"] for spec in restart_policy.with_policies(SPECS, True)}
    assert found == {"mooncake-master": "no", "etcd": "unless-stopped", "vllm-prefill-dp0": "unless-stopped",
                     "vllm-prefill-dp1": "unless-stopped", "vllm-decode-dp0": "no", "vllm-decode-dp1": "no",
                     "pd-proxy": "unless-stopped", "llmops-metrics-relay": "unless-stopped"}
    assert {spec["restart"] for spec in restart_policy.with_policies(SPECS, False)} == {"no"}
    in_ha = launch.new_spec(name="mooncake-master", host="p1", image="m", command=["mooncake_master"],
                            meta={"kind": "pool_service", "ha": {"service": "mooncake_master"}})
    assert restart_policy.with_policies([in_ha], True)[0]["restart"] == "unless-stopped"


def test_the_policy_is_no_part_of_the_hash_and_docker_run_carries_it():
    specs = restart_policy.with_policies(SPECS, True)
    assert [launch.spec_hash(spec) for spec in specs] == [launch.spec_hash(spec) for spec in SPECS]
    proxy = docker_run.run_argv("docker", specs[6], {})
    assert proxy[proxy.index("--restart") + 1] == "unless-stopped"
    assert "--restart" not in docker_run.run_argv("docker", specs[4], {})


def test_running_containers_whose_policy_is_not_their_specs_get_it_in_place():
    specs = restart_policy.with_policies(SPECS, True)
    # deployed before policies existed ("no", or "" from an older engine), or already as planned
    seen = container_state.parse_policies("/pd-proxy\tno\n/etcd\t\n/llmops-metrics-relay\tunless-stopped\n/vllm-decode-dp0\tno\n")
    assert seen == {"pd-proxy": "no", "etcd": "", "llmops-metrics-relay": "unless-stopped", "vllm-decode-dp0": "no"}
    assert restart_policy.to_update(specs, seen) == {"unless-stopped": ["etcd", "pd-proxy"]}
    # switched off: the running containers with one lose it
    off = restart_policy.with_policies(SPECS, False)
    assert restart_policy.to_update(off, {"pd-proxy": "unless-stopped", "vllm-decode-dp0": "no"}) == {"no": ["pd-proxy"]}


def test_a_host_with_a_policy_to_set_has_work_before_the_steps_and_the_run_is_not_idle():
    states = {"p0": {"policies": {"unless-stopped": ["pd-proxy"]}, "changed_files": []}, "d0": {"changed_files": []}}
    before, _marks = rollout._before_steps(states, [], {}, False)
    assert before == {"p0": True, "d0": False}
    assert not rollout._settled(states, None)
    assert rollout._settled({"p0": {"changed_files": []}}, None)
