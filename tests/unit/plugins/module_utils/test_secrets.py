# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Secret environment: masked in every spec, restored only when a container starts."""

from __future__ import annotations

import json

import pytest
import seed_clusters as seeds  # noqa: E402  pylint: disable=wrong-import-order

from ansible_collections.llmops.inference.plugins.module_utils.plan import _launch_spec as launch
from ansible_collections.llmops.inference.plugins.module_utils.plan import _secret_files as secret_files
from ansible_collections.llmops.inference.plugins.module_utils.plan._planner import plan_cluster

PLANTED = "s3cr3t-planted-4711-9c2e7a1b"  # strong enough (_key_strength), and findable in any output


def _engine(**extra):
    engine = {"image": "img", "model": "/m", "container_name": "vllm", "env": {"A": "1", "MY_API_KEY": "k-" + PLANTED},
              "role_env": {"decode": {"HF_TOKEN": "decode-" + PLANTED}}, "driver": {"devices": [], "volumes": []},
              "secret_env": {"VLLM_API_KEY": PLANTED}, "headless_ready_log": seeds.HEADLESS_READY_LOG}
    engine.update(extra)
    return engine


def test_secret_values_appear_in_no_spec_and_are_named():
    specs = launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine())
    assert PLANTED not in json.dumps(specs)
    decode = next(s for s in specs if s["name"] == "vllm-decode-dp0")
    prefill = next(s for s in specs if s["name"] == "vllm-prefill-dp0")
    assert decode["env"]["MY_API_KEY"] == "<secret>"  # a secret whose reader reads the environment only
    assert decode["env"]["A"] == "1"
    assert decode["secret_env"]["names"] == ["HF_TOKEN", "MY_API_KEY", "VLLM_API_KEY"] and decode["secret_env"]["role"] == "decode"
    assert prefill["secret_env"]["names"] == ["MY_API_KEY", "VLLM_API_KEY"]
    assert decode["ready"] == {"http": "http://192.0.2.43:9900/health"}  # /v1/models would need the key
    # the engines' key and the Hugging Face token go as files, which the guard and huggingface_hub (HF_TOKEN_PATH) read:
    # no environment holds them (docker inspect shows those)
    assert "VLLM_API_KEY" not in decode["env"] and "HF_TOKEN" not in decode["env"]
    assert decode["env"]["HF_TOKEN_PATH"] == "/run/llmops/secrets/HF_TOKEN" and "HF_TOKEN_PATH" not in prefill["env"]
    assert decode["secret_env"]["files"] == {"VLLM_API_KEY": "/etc/llmops/secrets/vllm-decode-dp0/VLLM_API_KEY",
                                             "HF_TOKEN": "/etc/llmops/secrets/vllm-decode-dp0/HF_TOKEN"}
    assert decode["volumes"].count("/etc/llmops/secrets/vllm-decode-dp0:/run/llmops/secrets:ro") == 1
    sources = {"secret_env": {"VLLM_API_KEY": PLANTED}, "env": {"MY_API_KEY": "k-" + PLANTED},
               "role_env": {"decode": {"HF_TOKEN": "decode-" + PLANTED}}}
    env, files = secret_files.split(decode["secret_env"], launch.secret_values(decode["secret_env"], sources))
    assert env == {"MY_API_KEY": "k-" + PLANTED}
    assert files["/etc/llmops/secrets/vllm-decode-dp0/HF_TOKEN"] == "decode-" + PLANTED + "\n"
    alone = launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(secret_env={"HF_TOKEN": PLANTED}, env={}, role_env={}))[0]
    assert alone["secret_env"]["files"] == {"HF_TOKEN": "/etc/llmops/secrets/%s/HF_TOKEN" % alone["name"]}  # no key: no guard
    assert alone["command"][:2] == ["vllm", "serve"] and "HF_TOKEN" not in alone["env"]
    plain = launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(secret_env={}, env={}, role_env={}))[0]
    assert plain["secret_env"] is None and plain["ready"]["http"].endswith("/v1/models")


def test_a_changed_secret_changes_the_spec_hash_and_a_changed_key_its_file_alone():
    plan = plan_cluster(seeds.pd_a2())
    before = launch.engine_specs(plan, _engine())[0]
    after = launch.engine_specs(plan, _engine(role_env={"decode": {"HF_TOKEN": "rotated-" + PLANTED}}))[0]
    same = launch.engine_specs(plan, _engine())[0]
    assert launch.spec_hash(before) == launch.spec_hash(same)
    assert launch.spec_hash(before) != launch.spec_hash(after)  # an environment secret: the container restarts
    assert PLANTED not in before["secret_env"]["digest"]
    # the engines' key is a file the guard reads again: rewritten in place (its own digest changes), no restart
    rotated = launch.engine_specs(plan, _engine(secret_env={"VLLM_API_KEY": "rotated-" + PLANTED}))[0]
    assert launch.spec_hash(before) == launch.spec_hash(rotated)
    path = before["secret_env"]["files"]["VLLM_API_KEY"]
    assert secret_files.live_digests([before])[path] != secret_files.live_digests([rotated])[path]
    assert before["meta"]["live"] == {"flags": [], "files": [path]}


def test_the_values_come_back_only_from_the_host_variables():
    record = launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine())[2]
    assert record["secret_env"]["role"] == "decode"
    sources = {"secret_env": {"VLLM_API_KEY": PLANTED}, "env": {"MY_API_KEY": "k-" + PLANTED, "A": "1"},
               "role_env": {"decode": {"HF_TOKEN": "decode-" + PLANTED}}}
    assert launch.secret_values(record["secret_env"], sources) == {
        "HF_TOKEN": "decode-" + PLANTED, "MY_API_KEY": "k-" + PLANTED, "VLLM_API_KEY": PLANTED}
    assert launch.secret_values(None, sources) == {}
    with pytest.raises(ValueError, match="HF_TOKEN has no value on this host"):
        launch.secret_values(record["secret_env"], dict(sources, role_env={}))


def test_the_engines_key_in_plain_environment_is_refused():
    for where, extra in (("vllm_engine_env", {"env": {"VLLM_API_KEY": PLANTED}}),
                         ("vllm_engine_role_env.decode", {"role_env": {"decode": {"VLLM_API_KEY": PLANTED}}})):
        with pytest.raises(ValueError, match=r"cluster pd_a2: %s sets VLLM_API_KEY.*Fix: move it to vllm_engine_secret_env" % where):
            launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(**extra))


def test_the_engines_key_as_a_vllm_serve_flag_is_refused_by_name_without_its_value():
    for extra in ({"args": {"api-key": PLANTED}}, {"role_args": {"prefill": {"max-num-seqs": 8}, "decode": {"api_key": PLANTED}}}):
        with pytest.raises(ValueError) as refused:
            launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(**extra))
        assert "cluster pd_a2: %s in vllm_engine_args / vllm_engine_role_args would show the key in every output" % (
            next(iter(extra.get("args") or extra["role_args"]["decode"]))) in str(refused.value)
        assert "Fix: remove it and set vllm_engine_secret_env: {VLLM_API_KEY: ...}" in str(refused.value)
        assert PLANTED not in str(refused.value)
    assert launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(args={"max-num-seqs": 8}))  # other flags pass


@pytest.mark.parametrize("args, named", [
    ({"hf-token": PLANTED}, "hf-token in vllm_engine_args / vllm_engine_role_args would show the key in every output. Fix: "
     "remove it and set vllm_engine_secret_env: {HF_TOKEN: ...}"),
    ({"kv-transfer-config": {"kv_connector_extra_config": {"store": "redis://admin:%s@192.0.2.9:6379" % PLANTED}}},
     "kv-transfer-config in vllm_engine_args / vllm_engine_role_args holds a URL with a user and password"),
    ({"served-model-name": "see https://user:%s@example.com/x" % PLANTED}, "served-model-name in vllm_engine_args"),
])
def test_other_secrets_in_the_command_are_refused_by_flag_without_their_value(args, named):
    with pytest.raises(ValueError) as refused:
        launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(args=args))
    assert "cluster pd_a2: " + named in str(refused.value) and PLANTED not in str(refused.value)


def test_a_bare_hf_token_flag_and_urls_without_a_password_pass():
    # --hf-token alone: the token huggingface-cli stored on the host; a user without a password is no secret
    assert launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(args={"hf-token": True, "served-model-name": "https://user@example.com/glm"}))


@pytest.mark.parametrize("args, role_args, message", [
    ({"limit-mm-per-prompt": {"image": 2}}, {}, "vllm_engine_args sets limit-mm-per-prompt \\(the engines take media\\), but no "
     "allowed-media-domains, so any client could make the engines fetch any URL"),
    ({}, {"prefill": {"media-io-kwargs": {"video": {"num_frames": 8}}}}, "vllm_engine_role_args.prefill sets media-io-kwargs"),
    ({"allowed-media-domains": ["images.example.com"], "allowed-local-media-path": "/etc/"}, {},
     "vllm_engine_args sets allowed-local-media-path to /etc/, which lets a client read the engine container's own files"),
])
def test_media_from_anywhere_or_from_system_files_is_refused(args, role_args, message):
    with pytest.raises(ValueError, match="cluster pd_a2: " + message):
        launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(args=args, role_args=role_args))


def test_media_from_listed_domains_from_anywhere_by_name_none_at_all_and_a_media_directory_pass():
    args = {"limit-mm-per-prompt": {"image": 2}, "allowed-media-domains": ["images.example.com"], "allowed-local-media-path": "/data/media"}
    assert launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(args=args))
    # the seeds' {image: 1, video: 0} from any domain, opened by name (vllm_engine_open_media_fetch)
    seeds_media = _engine(args={"limit-mm-per-prompt": {"image": 1, "video": 0}}, open_media_fetch=True)
    assert launch.engine_specs(plan_cluster(seeds.pd_a2()), seeds_media)
    assert launch.engine_specs(plan_cluster(seeds.pd_a2()), _engine(args={"limit-mm-per-prompt": '{"image": 0, "video": 0}'}))


def test_an_engine_with_a_key_runs_the_guard_on_every_route_and_vllms_own_flags_unchanged():
    plan = plan_cluster(seeds.pd_a2())
    guard = {"llmops_key_guard.py": "# guard\n", "vllm_guarded.sh": "# wrapper\n"}
    guarded = launch.engine_specs(plan, _engine(guard=guard))[0]
    plain = launch.engine_specs(plan, _engine(secret_env={}, env={}, role_env={}))[0]
    # the wrapper keeps the image's PYTHONPATH and makes the guard importable; vllm serve's flags stay the plan's
    assert guarded["command"][:2] == ["sh", "/etc/llmops/vllm_engine/vllm_guarded.sh"]
    assert guarded["command"][2:-2] == plain["command"][1:]
    assert guarded["command"][-2:] == ["--middleware", "llmops_key_guard.EngineGuard"]
    assert guarded["files"] == {"/etc/llmops/vllm_engine/llmops_key_guard.py": "# guard\n",
                                "/etc/llmops/vllm_engine/vllm_guarded.sh": "# wrapper\n"}
    assert "/etc/llmops/vllm_engine:/etc/llmops/vllm_engine:ro" in guarded["volumes"]
    assert plain["command"][:2] == ["vllm", "serve"] and not plain["files"]  # no key: the seed's command as it is


def test_a_retiring_key_goes_into_the_engines_key_file_written_in_place():
    plan = plan_cluster(seeds.pd_a2())
    old = "old-" + PLANTED
    before = next(s for s in launch.engine_specs(plan, _engine()) if s["name"] == "vllm-prefill-dp0")
    rotating = next(s for s in launch.engine_specs(plan, _engine(retiring_api_keys=[old])) if s["name"] == "vllm-prefill-dp0")
    assert launch.spec_hash(before) == launch.spec_hash(rotating) and old not in json.dumps(rotating)
    assert secret_files.live_digests([before]) != secret_files.live_digests([rotating])
    sources = {"secret_env": {"VLLM_API_KEY": PLANTED}, "env": {"MY_API_KEY": "k-" + PLANTED}, "retiring_api_keys": [old]}
    values = launch.secret_values(rotating["secret_env"], sources)
    env, files = secret_files.split(rotating["secret_env"], values)
    assert files == {"/etc/llmops/secrets/vllm-prefill-dp0/VLLM_API_KEY": PLANTED + "\n" + old + "\n"}
    assert env == {"MY_API_KEY": "k-" + PLANTED}
    with pytest.raises(ValueError, match=r"vllm_engine_retiring_api_keys\[0\]"):
        launch.engine_specs(plan, _engine(retiring_api_keys=["short"]))
