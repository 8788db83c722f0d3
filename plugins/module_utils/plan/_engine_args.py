# -*- coding: utf-8 -*-
# Copyright: (c) 2026, llmops.inference contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The `vllm serve` flags an inventory gives, checked before any host is touched.

vllm_engine_args (every role) and vllm_engine_role_args.<role> (over it) become flags the planner
appends to the ones it renders itself. Refused here, each with the variable and the fix:
- a flag the plan renders (parallel sizes, DP ranks and addresses, ports, the KV transfer config, the
  model, ...) given again: vLLM would take one of the two by argv order;
- a flag vLLM does not have, with the closest real one (the list is real vLLM's parser, kept as data
  in _vllm_serve_flags), and one flag given in two spellings;
- a value vLLM's parser would refuse (the flag's kind and choices, from the same list);
- a setting prefill and decode must share (SHARED_SETTINGS) that differs between them;
- a model vLLM would take for a hub id, or a path in no mounted directory.
Flags are matched as vLLM's parser matches them: `--flag`, `flag` and `flag_with_underscores` are one
flag, and `no-flag` is the negation of a boolean flag that has one.
"""

from __future__ import annotations

import difflib
import json
import re
import typing as t

from ansible_collections.llmops.inference.plugins.module_utils._text import flag_name
from ansible_collections.llmops.inference.plugins.module_utils.plan._launch_spec import SECRET_PLACEHOLDER, looks_secret, merged
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_errors import Problem
from ansible_collections.llmops.inference.plugins.module_utils.plan._plan_model import Cluster
from ansible_collections.llmops.inference.plugins.module_utils.plan._vllm_serve_flags import FLAGS, SOURCE

# Flags the planner renders itself, and the variable an operator sets instead (docs/refused.md).
PLAN_OWNED = {
    "model": "vllm_engine_model",
    "host": None,  # every engine binds 0.0.0.0 on the host network, as the seeds do: nothing to set instead
    "port": "vllm_engine_groups.<role>.api_port (or vllm_engine_api_port per host)",
    "headless": "vllm_engine_headless (per host)",
    "data-parallel-size": "vllm_engine_groups.<role>.dp_size",
    "data-parallel-size-local": "vllm_engine_local_ranks (per host)",
    "data-parallel-rank": "vllm_engine_rank_start (per host)",
    "data-parallel-start-rank": "vllm_engine_rank_start (per host)",
    "data-parallel-address": "vllm_engine_groups.<role>.dp_address",
    "data-parallel-rpc-port": "vllm_engine_groups.<role>.dp_rpc_port",
    "tensor-parallel-size": "vllm_engine_groups.<role>.tp_size",
    "api-server-count": "vllm_engine_api_server_count (per host)",
    "kv-transfer-config": "vllm_engine_connector (with vllm_engine_mooncake_extra_config or vllm_engine_nixl_extra_config and "
                          "the groups' kv_port and kv_role)",
}

# Settings prefill and decode must share: (flag, rule, why, source). "equal": the same value (absent on
# both counts as equal: vLLM's default); "decode_at_least": decode's at least prefill's; a tuple of keys:
# those keys of the JSON value equal (the rest may differ by design).
SHARED_SETTINGS = (
    ("served-model-name", "equal",
     "the proxy sends each request, its model name unchanged, to a prefill and then a decode engine, and an engine "
     "answers 404 for a name it does not serve",
     "vllm-ascend examples/disaggregated_prefill_v1/load_balance_proxy_server_example.py; vLLM's OpenAI server model check"),
    ("tokenizer", "equal",
     "decode continues from the token ids prefill computed the KV of: another tokenizer reads other text",
     "vLLM ModelConfig.tokenizer (defaults to the model)"),
    ("block-size", "equal",
     "KV moves between them block by block: a block size mismatch garbles the output with HTTP 200",
     "vllm-ascend #14545 (MooncakeConnectorV2); vLLM 0.32 NixlConnector checks the remote block size at its handshake"),
    ("kv-cache-dtype", "equal",
     "the KV bytes are copied as they are: another cache dtype reads them as other numbers",
     "MooncakeConnectorV2 copies raw cache bytes; vLLM 0.32 NixlConnector compatibility hash (cache_dtype)"),
    ("dtype", "equal",
     "with kv-cache-dtype auto the KV cache takes the model's dtype, so it must be the same on both",
     "vLLM CacheConfig.cache_dtype auto; vLLM 0.32 NixlConnector compatibility hash (dtype)"),
    ("quantization", "equal",
     "a quantization method changes the layers and may change the KV cache (fp8, int8 KV): the two must compute the "
     "same model", "004 5.3 and 5.4 run both roles with --quantization ascend"),
    ("hf-overrides", "equal",
     "it changes the model's config (layers, heads), and with it the KV cache's shape", "vLLM ModelConfig.hf_overrides"),
    ("max-model-len", "decode_at_least",
     "decode serves the whole prompt prefill accepted, plus the answer: it must accept at least prefill's length",
     "vLLM input length check (a longer prompt is refused with HTTP 400)"),
    ("speculative-config", ("method", "model", "num_speculative_tokens"),
     "the draft (MTP) layers' KV moves with the target's: both must run the same draft with the same number of tokens "
     "(its enforce_eager may differ, as in 004 5.3 A3)",
     "vllm-ascend MooncakeConnectorV2 adds num_draft_layers to the layers it pulls; vLLM 0.32 NixlConnector "
     "compatibility hash (speculative factors)"),
    ("attention-backend", "equal",
     "the attention backend sets the KV cache's memory layout", "vLLM 0.32 NixlConnector compatibility hash (attn_backend_name)"),
)

# Values vllm-ascend accepts beyond upstream vLLM's choices (the lab's images are vllm-ascend).
EXTRA_CHOICES = {
    "kv-cache-dtype": ("int8",),  # vllm-ascend's int8 KV cache: 004 5.1 and 5.3 (A3) serve with --kv-cache-dtype int8
}
# Other long spellings of a flag (--device-memory-utilization for --gpu-memory-utilization).
LONG_ALIASES = {alias[2:]: flag for flag, spec in FLAGS.items() for alias in spec["aliases"] if alias.startswith("--")}

HUMAN_INT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)\s*$")
MULTIPLIERS = {"": 1, "k": 10 ** 3, "m": 10 ** 6, "g": 10 ** 9, "t": 10 ** 12,
               "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def canonical(key: object) -> tuple[str | None, bool]:
    """(flag, negated) as vLLM's parser reads a key, or (None, False) when vLLM has no such flag."""
    name = str(key).lstrip("-")
    # vLLM turns underscores into dashes up to the first dot; "flag.key" sets one key of a JSON flag
    base, dot, _rest = name.partition(".")
    name = base.replace("_", "-")
    name = LONG_ALIASES.get(name, name)
    if dot:
        return (name, False) if (FLAGS.get(name) or {}).get("kind") in ("json", "str") else (None, False)
    if name in FLAGS:
        return name, False
    if name.startswith("no-") and (FLAGS.get(name[3:]) or {}).get("negatable"):
        return name[3:], True
    return None, False


def human_int(value: object) -> int | None:
    """vLLM's human_readable_int: 200000, "200k" (x1000) or "2K" (x1024); None when it is none of these."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    match = HUMAN_INT.match(str(value))
    if not match or ("." in match.group(1) and not match.group(2)):
        return None
    return int(float(match.group(1)) * MULTIPLIERS[match.group(2)])


def _closest(name: str) -> str | None:
    found = difflib.get_close_matches(name, list(FLAGS), n=1, cutoff=0.7)
    return found[0] if found else None


def _shown(flag: str, value: object) -> str:
    return SECRET_PLACEHOLDER if looks_secret(flag) else json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) \
        else str(value)


def _as_json(value: object) -> t.Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def value_problem(flag: str, value: object) -> str | None:
    """Why vLLM's parser would refuse this value for flag (the collection renders true as a bare flag and
    false or null as no flag), or None."""
    spec = FLAGS[flag]
    if value is None:
        return None
    kind = spec["kind"]
    if kind == "bool":
        return None if isinstance(value, bool) else "takes no value (true sets it, false or null leaves it out)"
    if isinstance(value, bool):
        return "takes a value, not %s (vLLM would read the next flag as its value)" % str(value).lower()
    if isinstance(value, (dict, list)) and kind != "json" and kind != "str":
        return "takes one plain value (a mapping or list is rendered as one JSON word)"
    if spec["optional"] and str(value) == "None":
        return None
    choices = list(spec["choices"] or []) + list(EXTRA_CHOICES.get(flag, ()))
    if kind == "int" and not re.match(r"^-?\d+$", str(value)):
        return "takes an integer"
    if kind == "human_int" and human_int(value) is None:
        return "takes an integer (200000, 200k or 2K)"
    if kind == "float" and not re.match(r"^-?(\d+\.?\d*|\.\d+)([eE]-?\d+)?$", str(value)):
        return "takes a number"
    if kind == "json" and isinstance(value, str) and not _is_json(value):
        return "takes a JSON object (give it as a mapping)"
    if choices and str(value) not in choices:
        return "takes one of %s" % ", ".join(choices)
    return None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _given(cluster: Cluster) -> list[tuple[str, str, t.Any]]:
    """[(variable, raw key, value)] of every flag the inventory gives."""
    given = [("vllm_engine_args", key, value) for key, value in (cluster.args or {}).items()]
    for role, flags in sorted((cluster.role_args or {}).items()):
        given += [("vllm_engine_role_args.%s" % role, key, value) for key, value in (flags or {}).items()]
    return given


def flag_problems(cluster: Cluster) -> list[Problem]:
    """Plan-owned, unknown, twice-spelt and ill-typed flags of vllm_engine_args / vllm_engine_role_args."""
    problems: list[Problem] = []

    def problem(variable: str, message: str, fix: str) -> None:
        problems.append(Problem(cluster.name, variable, message, fix))

    for role in cluster.role_args or {}:
        if role not in cluster.roles:
            problem("vllm_engine_role_args.%s" % role, "the cluster has no %s group (it has: %s)"
                    % (role, ", ".join(cluster.roles)), "remove it, or name one of those roles")
    known = {flag_name(flag) for flag in cluster.known_flags}
    for variable, key, value in _given(cluster):
        where = "%s.%s" % (variable, key)
        flag, negated = canonical(key)
        name = flag_name(key)
        if flag is None and name.partition(".")[0] in known:
            continue  # the operator's image has it: nothing known to check its value against
        if flag is None:
            alias = next((f for f, spec in FLAGS.items() if "-" + name in spec["aliases"] or "--" + name in spec["aliases"]), None)
            close = alias or _closest(name)
            problem(where, "vLLM has no flag --%s (%s)" % (name, SOURCE),
                    ("write %s%s" % (close, " (the collection renders --<key>, not vLLM's short form)" if alias else "")
                     if close else "remove it, or check the flag's name in `vllm serve --help` of the image")
                    + "; if your image's vLLM has it, list it in vllm_engine_known_flags")
            continue
        if flag in PLAN_OWNED:
            problem(where, "--%s is rendered by the plan itself; given again, vLLM would take one of the two by their "
                    "order in the command" % flag, "remove it and set %s" % PLAN_OWNED[flag] if PLAN_OWNED[flag]
                    else "remove it: every engine binds 0.0.0.0 on the host network, as the seeds do")
            continue
        why = value_problem(flag, value) if not negated else (
            None if isinstance(value, bool) or value is None else "takes no value (true sets it)")
        if why:
            problem(where, "--%s %s, got %s" % (flag, why, _shown(flag, value)),
                    "give it a value vLLM's parser takes (%s)" % SOURCE)
    return problems + _spelling_problems(cluster)


def _spelling_problems(cluster: Cluster) -> list[Problem]:
    """One flag reaching an engine under two keys (max_num_seqs and max-num-seqs, or a flag and its no- form):
    each role's flags are the cluster's with the role's over them, null dropping a key, as engine_specs renders them."""
    problems: list[Problem] = []
    reported: set[tuple[str, str]] = set()
    for role in cluster.roles:
        own = (cluster.role_args or {}).get(role) or {}
        seen: dict[str, tuple[str, str]] = {}
        for key in merged(cluster.args, own):
            flag, _negated = canonical(key)
            if flag is None or flag in PLAN_OWNED:
                continue
            variable = "vllm_engine_role_args.%s" % role if key in own else "vllm_engine_args"
            if flag in seen and (variable, key) not in reported:
                reported.add((variable, key))
                first_variable, first_key = seen[flag]
                problems.append(Problem(
                    cluster.name, "%s.%s" % (variable, key),
                    "--%s is also given as %s in %s: both would reach the %s engines" % (flag, first_key, first_variable, role),
                    "keep one: set %s: null under vllm_engine_role_args.%s to drop the cluster-wide one, or spell both alike"
                    % (first_key, role) if first_variable != variable else "keep one of the two"))
            seen.setdefault(flag, (variable, key))
    return problems


def role_setting(cluster: Cluster, role: str, flag: str) -> tuple[t.Any, str]:
    """(value, where it came from) of a flag for one role: the role's, else the cluster's, else vLLM's default."""
    for variable, flags in (("vllm_engine_role_args.%s" % role, (cluster.role_args or {}).get(role) or {}),
                            ("vllm_engine_args", cluster.args or {})):
        for key, value in flags.items():
            name, negated = canonical(key)
            if name == flag:
                if value is None:
                    return None, "%s (null: vLLM's default)" % variable
                return (not value if negated else value), variable
    return None, "vLLM's default"


def _differs(rule: str | tuple[str, ...], prefill: t.Any, decode: t.Any) -> bool:
    """Whether the two roles' values break the rule."""
    if isinstance(rule, tuple):
        prefill, decode = _as_json(prefill), _as_json(decode)
        if prefill is None or decode is None:
            return (prefill is None) != (decode is None)
        if not isinstance(prefill, dict) or not isinstance(decode, dict):
            return bool(prefill != decode)
        return any(prefill.get(key) != decode.get(key) for key in rule)
    if rule == "decode_at_least":
        if decode is None:
            return False  # decode takes the model's whole length
        if prefill is None:
            return True  # prefill accepts the model's whole length, decode less
        low, high = human_int(prefill), human_int(decode)
        return low is not None and high is not None and high < low
    return json.dumps(_as_json(prefill), sort_keys=True) != json.dumps(_as_json(decode), sort_keys=True)


def shared_setting_problems(cluster: Cluster) -> list[Problem]:
    """The SHARED_SETTINGS prefill and decode disagree on, naming both values and where each came from."""
    if not {"prefill", "decode"} <= set(cluster.roles):
        return []
    problems = []
    for flag, rule, why, source in SHARED_SETTINGS:
        (p_value, p_from), (d_value, d_from) = role_setting(cluster, "prefill", flag), role_setting(cluster, "decode", flag)
        if not _differs(rule, p_value, d_value):
            continue
        keys = " (%s)" % ", ".join(rule) if isinstance(rule, tuple) else ""
        shown = [("not set" if v is None else _shown(flag, v)) for v in (p_value, d_value)]
        variable = next((v for v in (p_from, d_from) if v.startswith("vllm_engine_role_args")), p_from).split(" ")[0]
        need = "at least prefill's" if rule == "decode_at_least" else "the same%s" % keys
        problems.append(Problem(
            cluster.name, "%s.%s" % (variable, flag),
            "prefill has --%s %s (%s), decode %s (%s); %s (%s)" % (flag, shown[0], p_from, shown[1], d_from, why, source),
            "give decode %s --%s, set once in vllm_engine_args" % (need, flag) if rule == "decode_at_least"
            else "set --%s once in vllm_engine_args, or give both roles the same value%s" % (flag, keys)))
    return problems


def model_problems(cluster: Cluster) -> list[Problem]:
    """A model vLLM would take for a hub id, or a path that lies in no directory mounted into the engines."""
    model = cluster.model
    if model is None or cluster.model_from_hub:
        return []
    if not str(model).startswith("/"):
        return [Problem(cluster.name, "vllm_engine_model",
                        "%r is not an absolute path: vLLM would take it for a hub id and try to download it" % model,
                        "give the model's directory inside a mounted volume (vllm_engine_volumes), or set "
                        "vllm_engine_model_from_hub: true when the hosts may download it (or have it in a mounted cache)")]
    targets = [volume.split(":")[1].rstrip("/") or "/" for volume in cluster.mounts if ":" in volume]
    path = str(model).rstrip("/")
    if any(path == target or path.startswith(target.rstrip("/") + "/") for target in targets):
        return []
    return [Problem(cluster.name, "vllm_engine_model",
                    "%s lies in no directory mounted into the engine containers (%s): vLLM would not find it and take "
                    "it for a hub id" % (model, ", ".join(sorted(targets)) or "none"),
                    "mount its directory with vllm_engine_volumes (host:container[:ro]), or give the path it has there")]


def engine_arg_problems(cluster: Cluster) -> list[Problem]:
    """Every problem of the flags, the settings P and D share and the model (empty when all is sound)."""
    return flag_problems(cluster) + model_problems(cluster) + shared_setting_problems(cluster)
