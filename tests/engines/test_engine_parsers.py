"""Engine-parser tier: every rendered worker and frontend command line through the real parsers.

Renders every catalog recipe's DGD (infersweep/dgd/render.py) and sends each component's `python -m dynamo.X ARGS`
through ai-dynamo 1.6.1's own argument parsing plus the engines' own post-parse checks, in one subprocess
inside `.venv-engines` (tests/engine_parsers/parse_workers.py says which functions run). Then it asserts
what each recipe claims, on the *parsed* configuration:

- KV routing: the frontend runs the KV router and every worker it routes to publishes KV events
  (Dynamo's derived use_kv_events / TRT-LLM's publish_kv_events);
- disaggregation: a KV transfer connector is active on both sides (vLLM: NIXL among the connectors in
  effect after vLLM's own offload post-init; SGLang: PD mode with the NIXL backend);
- offload: the CPU tier is on (vLLM OffloadingConnector, SGLang HiCache on prefill/aggregated workers)
  without displacing the transfer connector;
- speculative decoding: the configured method, draft model and token count;
- TP/DP/EP: as the recipe's topology says.

`.venv-engines` is large (see README "Environments"); `scripts/setup.sh --engines` builds it. Without it
this tier is skipped. TensorRT-LLM cannot be installed here (PyPI's tensorrt-llm 1.3.0rc29 is a
wheel_stub sdist that downloads the real wheel from NVIDIA's index at install time), and
dynamo/trtllm/backend_args.py imports tensorrt_llm at module level, so TRT-LLM workers are checked only
when it imports; otherwise their test is skipped saying so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache

import pytest

from infersweep.local.dynamo import read_components
from infersweep.recipe import ResolvedRecipe, all_recipe_paths, load_recipe
from infersweep.dgd.render import render_dgd
from tests.support.paths import REPO, TESTS

# The first test runs the whole batch (~100 s here under load): above the suite's 300 s default on a slower machine.
pytestmark = [pytest.mark.engine_parsers, pytest.mark.timeout(1800)]

ROOT = REPO
ENGINES_PY = ROOT / ".venv-engines" / "bin" / "python"
PARSER = TESTS / "engine_parsers" / "parse_workers.py"
RECIPES = [p.stem for p in all_recipe_paths()]


@cache
def trtllm_importable() -> bool:
    return subprocess.run([str(ENGINES_PY), "-c", "import tensorrt_llm"], capture_output=True).returncode == 0


@cache
def parsed() -> dict[str, dict]:
    """id -> parse result, for every component of every recipe, from one batch run of the real parsers."""
    items = []
    for name in RECIPES:
        for comp in read_components(render_dgd(load_recipe(name))):
            if comp.module == "dynamo.trtllm" and not trtllm_importable():
                continue
            items.append({"id": f"{name}/{comp.role}", "module": comp.module, "args": comp.args})
    proc = subprocess.run([str(ENGINES_PY), str(PARSER)], input=json.dumps(items), capture_output=True,
                          text=True, timeout=1800, cwd=ROOT)
    if proc.returncode != 0:
        raise AssertionError(f"parser batch failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return {r["id"]: r for r in json.loads(proc.stdout.strip().splitlines()[-1])}


@pytest.fixture(scope="module", autouse=True)
def _engines_env():
    if not ENGINES_PY.exists():
        pytest.skip(f"no engine-parser environment at {ENGINES_PY}; build it with scripts/setup.sh --engines")


def _results(name: str) -> dict[str, dict]:
    r = load_recipe(name)
    if r.recipe.engine == "trtllm" and not trtllm_importable():
        pytest.skip("tensorrt_llm is not installable here (PyPI has only a wheel_stub that downloads from "
                    "NVIDIA's index); dynamo.trtllm's parser imports it")
    out = {k.split("/", 1)[1]: v for k, v in parsed().items() if k.split("/", 1)[0] == name}
    assert out, f"{name}: nothing was parsed"
    return out


@pytest.mark.parametrize("name", RECIPES)
def test_every_command_line_parses(name):
    failed = {role: res["error"] for role, res in _results(name).items() if not res["ok"]}
    assert not failed, f"{name}: " + "\n".join(f"[{role}] {err}" for role, err in failed.items())


def _check_vllm(r: ResolvedRecipe, role: str, f: dict) -> None:
    w = r.recipe.topology.roles()[role]
    assert (f["tp"], f["dp"], f["expert_parallel"]) == (w.tp, w.dp, w.ep > 1), "TP/DP/EP"
    names = [c["kv_connector"] for c in f["connectors"]]
    if role in ("prefill", "decode"):
        assert "NixlConnector" in names, f"{role}: no NIXL connector in effect ({names})"
        assert f["disaggregation_mode"].lower().endswith(role)
    off = r.recipe.kv_offload
    if off and off.cpu_gib is not None:
        tier = [c for c in f["connectors"] if c["kv_connector"] == "OffloadingConnector"]
        assert tier, f"{role}: CPU offload configured but not in effect ({names})"
        assert tier[0]["extra"].get("cpu_bytes_to_use") == int(off.cpu_gib * (1 << 30))
    spec = r.recipe.speculative
    if spec and spec.mode != "none":
        assert f["speculative"]["method"] == r.engine.speculative.methods[spec.mode]
        assert f["speculative"]["num_speculative_tokens"] == spec.num_tokens
        assert f["speculative"]["model"] == r.draft_model if r.draft_model else True
    if r.recipe.router == "kv" and role != "decode":
        assert f["kv_events"] and f["prefix_caching"], f"{role}: KV routing but no KV events published"


def _check_sglang(r: ResolvedRecipe, role: str, f: dict) -> None:
    w = r.recipe.topology.roles()[role]
    assert (f["tp"], f["dp"], f["ep"], f["dp_attention"]) == (w.tp, w.dp, w.ep, w.dp > 1), "TP/DP/EP"
    if role in ("prefill", "decode"):
        assert (f["disaggregation_mode"], f["transfer_backend"]) == (role, "nixl")
    if r.recipe.kv_offload:
        assert f["hicache"] == (role != "decode"), f"{role}: HiCache {f['hicache']}"
    if f["hicache"]:
        assert f["radix_cache"]
    spec = r.recipe.speculative
    if spec and spec.mode != "none":
        assert f["speculative"]["method"] == r.engine.speculative.methods[spec.mode]
        assert f["speculative"]["num_steps"] == spec.num_tokens
        assert f["speculative"]["model"] == r.draft_model
    if r.recipe.router == "kv" and role != "decode":
        assert f["kv_events"], f"{role}: KV routing but no KV events published"


def _check_trtllm(r: ResolvedRecipe, role: str, f: dict) -> None:
    w = r.recipe.topology.roles()[role]
    assert (f["tp"], f["attention_dp"]) == (w.tp, w.dp > 1)
    spec = r.recipe.speculative
    if spec and spec.mode != "none":
        assert f["speculative"]["decoding_type"] == r.engine.speculative.methods[spec.mode]
    if r.recipe.router == "kv" and role != "decode":
        assert f["kv_events"]


CHECKS = {"vllm": _check_vllm, "sglang": _check_sglang, "trtllm": _check_trtllm}


@pytest.mark.parametrize("name", RECIPES)
def test_the_recipes_claims_hold_on_the_parsed_configuration(name):
    r = load_recipe(name)
    results = _results(name)
    if not all(res["ok"] for res in results.values()):
        pytest.fail("does not parse (see test_every_command_line_parses)")
    assert results["frontend"]["facts"]["router_mode"] == r.recipe.router
    for role in r.recipe.topology.roles():
        f = results[role]["facts"]
        assert f["model"] == r.model.id
        CHECKS[r.recipe.engine](r, role, f)


def test_the_tier_catches_a_kv_recipe_without_events():
    """The checks fail on the defect they exist for: a KV-routed vLLM worker without --kv-events-config."""
    r = load_recipe("nemotron-3-nano-fp8-vllm-agg-kv")
    comp = next(c for c in read_components(render_dgd(r)) if c.role == "worker")
    i = comp.args.index("--kv-events-config")
    args = comp.args[:i] + comp.args[i + 2:]
    proc = subprocess.run([str(ENGINES_PY), str(PARSER)], capture_output=True, text=True, timeout=900,
                          input=json.dumps([{"id": "x", "module": "dynamo.vllm", "args": args}]))
    (res,) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["ok"]
    with pytest.raises(AssertionError, match="no KV events"):
        _check_vllm(r, "worker", res["facts"])


def test_the_tier_catches_hicache_on_an_sglang_decode_worker():
    """SGLang's own hooks refuse the old rendering (HiCache on a PD decode server, whose radix cache
    handle_pd_disaggregation forces off)."""
    r = load_recipe("qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload")
    comp = next(c for c in read_components(render_dgd(r)) if c.role == "decode")
    args = comp.args + ["--enable-hierarchical-cache", "--hicache-ratio", "2"]
    proc = subprocess.run([str(ENGINES_PY), str(PARSER)], capture_output=True, text=True, timeout=900,
                          input=json.dumps([{"id": "x", "module": "dynamo.sglang", "args": args}]))
    (res,) = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not res["ok"] and "enable-hierarchical-cache and disable-radix-cache" in res["error"]


if __name__ == "__main__":  # python -m tests.test_engine_parsers: the per-recipe table
    sys.exit(pytest.main([__file__, "-q", *sys.argv[1:]]))
