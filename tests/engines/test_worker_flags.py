"""Worker flags that decide whether a deployment does what its recipe says (issue 11's findings).

Each test reads the rendered DGD (infersweep/dgd/render.py) of a catalog recipe and fails on the rendering before
the fix. The engine facts behind them are cited where they are encoded (params/engines/*.yaml,
infersweep/dgd/render.py); tests/engines/test_engine_parsers.py runs the same arguments through the real parsers.
"""

from __future__ import annotations

import json

import pytest
import yaml

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.dgd_reader import read_components
from infersweep.local.gpu.engine_flags import flag_value as _flag
from infersweep.paths import params_dir
from infersweep.recipe import all_recipe_paths, load_recipe
from tests.conftest import shared_dir


def workers(name: str) -> dict[str, list[str]]:
    """role -> the worker's args, of one catalog recipe's rendered DGD."""
    return {c.role: c.args for c in read_components(render_dgd(load_recipe(name))) if c.role != "frontend"}


def env_of(name: str) -> dict[str, str]:
    dgd = render_dgd(load_recipe(name))
    comp = next(c for c in dgd["spec"]["components"] if c["type"] != "frontend")
    return {e["name"]: e["value"] for e in comp["podTemplate"]["spec"]["containers"][0]["env"]}


def _json_flag(args: list[str], flag: str) -> dict | None:
    value = _flag(args, flag)
    return json.loads(value) if value is not None else None


# ---------------------------------------------------------------- KV events for KV-aware routing

KV_RECIPES = sorted(p.stem for p in all_recipe_paths() if load_recipe(p).recipe.router == "kv")


@pytest.mark.parametrize("name", KV_RECIPES)
def test_kv_routed_workers_publish_kv_events(name):
    """Dynamo 1.6.1 vLLM/SGLang workers publish KV events only with --kv-events-config (TRT-LLM: with
    --publish-kv-events); without them the KV router routes by load alone."""
    r = load_recipe(name)
    for role, args in workers(name).items():
        if role == "decode":
            continue  # the router scores the workers a request enters at (aggregated or prefill)
        if r.recipe.engine == "trtllm":
            assert "--publish-kv-events" in args, role
            continue
        cfg = _json_flag(args, "--kv-events-config")
        assert cfg, f"{name} {role}: no --kv-events-config"
        assert cfg["publisher"] == "zmq" and cfg["endpoint"].startswith("tcp://"), cfg
        if r.recipe.engine == "vllm":
            assert cfg["enable_kv_cache_events"] is True  # vLLM's KVEventsConfig defaults it to False


def test_the_kv_routing_recipes_cover_the_seed_headline():
    assert {
        "nemotron-3-nano-fp8-vllm-agg-kv",
        "qwen3-32b-fp8-vllm-disagg-4p4d-kv",
        "qwen3-32b-fp8-sglang-disagg-6p2d-kv",
        "lightning-vllm-agg-h100-dspark-kv-router",
    } <= set(KV_RECIPES)


def test_round_robin_workers_do_not_publish_kv_events():
    for args in workers("nemotron-3-nano-fp8-vllm-agg-rr").values():
        assert "--kv-events-config" not in args


# ---------------------------------------------------------------- vLLM offload + NIXL


def test_vllm_cpu_offload_keeps_the_nixl_connector_on_both_sides():
    """`--kv-offloading-size` makes vLLM set kv_connector to the OffloadingConnector, replacing NIXL: the
    tier must ride in a MultiConnector next to NIXL instead."""
    for role, args in workers("qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload").items():
        assert "--kv-offloading-size" not in args, role
        cfg = _json_flag(args, "--kv-transfer-config")
        assert cfg["kv_connector"] == "MultiConnector", role
        inner = cfg["kv_connector_extra_config"]["connectors"]
        assert [c["kv_connector"] for c in inner] == ["NixlConnector", "OffloadingConnector"]
        assert inner[1]["kv_connector_extra_config"]["cpu_bytes_to_use"] > 0


def test_nixl_inside_a_multiconnector_advertises_the_pod_ip():
    """ai-dynamo 1.6.1 sets VLLM_NIXL_SIDE_CHANNEL_HOST only when `_uses_nixl_connector` finds NIXL at the top
    level or inside a PdConnector (dynamo/vllm/args.py); inside a MultiConnector vLLM keeps its default
    "localhost" (vllm/envs.py) and prefill advertises localhost to decode. The DGD must set it to the pod IP."""
    dgd = render_dgd(load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload"))
    for comp in dgd["spec"]["components"]:
        if comp["type"] == "frontend":
            continue
        env = {e["name"]: e for e in comp["podTemplate"]["spec"]["containers"][0]["env"]}
        assert env.get("VLLM_NIXL_SIDE_CHANNEL_HOST") == {
            "name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
            "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
        }, comp["type"]
    # Where Dynamo finds NIXL itself (the plain disaggregated recipe), it sets the host: nothing rendered.
    plain = render_dgd(load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d-kv"))
    for comp in plain["spec"]["components"][1:]:
        assert "VLLM_NIXL_SIDE_CHANNEL_HOST" not in {
            e["name"] for e in comp["podTemplate"]["spec"]["containers"][0]["env"]
        }


def test_side_channel_rule_matches_dynamos_own_check():
    """Our reading of `_uses_nixl_connector` (dynamo/vllm/args.py, ai-dynamo 1.6.1), case by case."""
    from infersweep.engines.vllm import dynamo_sets_side_channel_host, nixl_nested

    nixl = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    multi = {"kv_connector": "MultiConnector", "kv_connector_extra_config": {"connectors": [nixl]}}
    pd = {"kv_connector": "PdConnector", "kv_connector_extra_config": {"connectors": [nixl]}}
    assert dynamo_sets_side_channel_host(nixl) and dynamo_sets_side_channel_host(pd)
    assert not dynamo_sets_side_channel_host(multi) and nixl_nested(multi)
    assert not nixl_nested({"kv_connector": "OffloadingConnector"})


def test_aggregated_vllm_offload_still_uses_the_offloading_size_flag(tmp_path):
    path = tmp_path / "agg-offload.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "agg-offload",
                "model": "qwen3-32b-fp8",
                "engine": "vllm",
                "gpu": {"type": "H100", "count": 1},
                "topology": {"workers": {"replicas": 1, "tp": 1}},
                "kv_offload": {"cpu_gib": 64},
                "workload": {"isl": 100, "osl": 10, "concurrency": [1]},
            }
        )
    )
    args = read_components(render_dgd(load_recipe(path)))[1].args
    assert _flag(args, "--kv-offloading-size") == "64" and "--kv-transfer-config" not in args


# ---------------------------------------------------------------- SGLang HiCache on PD


def test_sglang_hicache_goes_on_prefill_never_on_decode():
    """SGLang turns the radix cache off on a PD decode server and refuses --enable-hierarchical-cache there."""
    ws = workers("qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload")
    assert "--enable-hierarchical-cache" in ws["prefill"]
    assert "--enable-hierarchical-cache" not in ws["decode"]
    assert "--hicache-ratio" not in ws["decode"]


# ---------------------------------------------------------------- Nemotron-3.5-Lightning


LIGHTNING_VLLM = sorted(p.stem for p in all_recipe_paths() if p.stem.startswith("lightning-vllm-"))


def test_no_unverified_draft_models_remain():
    for f in (params_dir() / "models").glob("*.yaml"):
        assert "UNVERIFIED" not in f.read_text(), f


@pytest.mark.parametrize("name", LIGHTNING_VLLM)
def test_lightning_vllm_workers_carry_upstreams_flags_and_env(name):
    for role, args in workers(name).items():
        for flag in ("--trust-remote-code", "--enable-prefix-caching", "--async-scheduling"):
            assert flag in args, (role, flag)
        assert _flag(args, "--mamba-ssm-cache-dtype") == "float16"
        assert _flag(args, "--reasoning-parser") == "nemotron_v3"
        assert _flag(args, "--dyn-tool-call-parser") == "nemotron_nano"
        assert _flag(args, "--max-num-seqs") == ("32" if role in ("prefill", "decode") else "512")
        spec = _json_flag(args, "--speculative-config")
        if spec["method"] != "mtp":
            assert spec["model"].startswith("nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4-"), spec
    assert env_of(name)["PYTHONHASHSEED"] == "0"


def test_lightning_draft_token_counts_follow_the_target():
    """Upstream's README table: DSpark 7 aggregated / 1 disaggregated, DFlash 5 / 3 (GB200 disagg 7)."""

    def n(name):
        return _json_flag(next(iter(workers(name).values())), "--speculative-config")["num_speculative_tokens"]

    assert n("lightning-vllm-agg-h100-dspark") == 7
    assert n("lightning-vllm-disagg-h100-dspark") == 1
    assert n("lightning-vllm-agg-h200-dflash") == 5
    assert n("lightning-vllm-disagg-h200-dflash") == 3
    assert n("lightning-vllm-disagg-gb200-dflash-bf16") == 7


UPSTREAM = shared_dir() / "reference" / "dynamo" / "recipes" / "nemotron-3.5-lightning" / "vllm"


def _upstream_speculative(ident: str) -> dict:
    docs = [d for d in yaml.safe_load_all((UPSTREAM / ident / "deploy.yaml").read_text()) if d]
    return json.loads(next(d for d in docs if d["kind"] == "ConfigMap")["data"]["speculative-config"])


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="needs ../shared/reference (upstream Lightning recipes)")
@pytest.mark.parametrize(
    "name", [n for n in LIGHTNING_VLLM if (UPSTREAM / n.removeprefix("lightning-vllm-").removesuffix("-bf16")).is_dir()]
)
def test_lightning_speculative_config_equals_upstreams(name):
    theirs = _upstream_speculative(name.removeprefix("lightning-vllm-").removesuffix("-bf16"))
    for args in workers(name).values():
        assert _json_flag(args, "--speculative-config") == theirs


# ---------------------------------------------------------------- remote code vs the read-only model cache

REMOTE_CODE = sorted(
    p.stem for p in all_recipe_paths() if any("--trust-remote-code" in a for a in workers(p.stem).values())
)


@pytest.mark.parametrize("name", REMOTE_CODE)
def test_remote_code_is_written_outside_the_read_only_model_cache(name):
    """--trust-remote-code copies the model's code into HF_MODULES_CACHE, default "$HF_HOME/modules"
    (transformers utils/hub.py; dynamic_module_utils.py init_hf_modules makes the folder). HF_HOME is the
    model-cache PVC, mounted read-only: HF_MODULES_CACHE must point elsewhere, at a writable place."""
    dgd = render_dgd(load_recipe(name))
    for comp in dgd["spec"]["components"]:
        if comp["type"] == "frontend":
            continue
        c = comp["podTemplate"]["spec"]["containers"][0]
        env = {e["name"]: e.get("value") for e in c["env"]}
        modules = env.get("HF_MODULES_CACHE") or f"{env['HF_HOME']}/modules"
        read_only = [m["mountPath"] for m in c["volumeMounts"] if m.get("readOnly")]
        assert not any(modules == p or modules.startswith(p.rstrip("/") + "/") for p in read_only), (name, modules)
