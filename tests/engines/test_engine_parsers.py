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

The Dynamo 1.3.1 release (params/engines/releases/dynamo-1.3.1.yaml, what `--dgd-api v1alpha1` renders)
runs the same way through ai-dynamo 1.3.1's parsers with vLLM 0.23.0 / SGLang 0.5.14: their modules are
installed --no-deps in `.venv-engines-1.3` and put before `.venv-engines`'s site-packages on PYTHONPATH
(images/engines-1.3.requirements.txt says why that suffices); SGLang 0.5.14 resolves its arguments eagerly,
so parse_workers.py runs its accelerator-free part (parse_workers._sglang_eager_post_init).

`.venv-engines` is large (see README "Environments"); `scripts/setup.sh --engines` builds it and
`.venv-engines-1.3`. Without them this tier is skipped. TensorRT-LLM cannot be installed here (PyPI's tensorrt-llm 1.3.0rc29 is a
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

from infersweep.dgd.render import render_dgd
from infersweep.local.dynamo.dgd_reader import read_components
from infersweep.recipe import ResolvedRecipe, all_recipe_paths, load_recipe
from infersweep.recipe.release import for_dgd_api, releases
from tests.engine_parsers.release_flags import OVERLAYS, env_for
from tests.engine_parsers.release_flags import render as render_flags
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


BASE, OLDER = "dynamo-1.6.1", "dynamo-1.3.1"


def api_of(release: str) -> str:
    return releases()[release].dgd_api


def run_parsers(items: list[dict], release: str = BASE, timeout: int = 1800) -> list[dict]:
    """The parse results of a batch, through the parsers of `release` (its module folder on PYTHONPATH)."""
    proc = subprocess.run(
        [str(ENGINES_PY), str(PARSER)],
        input=json.dumps(items),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env=env_for(release),
    )
    if proc.returncode != 0:
        raise AssertionError(f"parser batch failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _component(name: str, role: str, release: str):
    dgd = render_dgd(load_recipe(name), api_version=api_of(release))
    return next(c for c in read_components(dgd) if c.role == role)


def _drop_flag(args: list[str], flag: str) -> list[str]:
    i = args.index(flag)
    return args[:i] + args[i + 2 :]


def probes(release: str) -> list[dict]:
    """Command lines the tests below build from rendered workers, parsed in the recipes' batch (one process
    per release: importing vLLM and SGLang is most of a batch's time), and the release's flag lists."""
    kv = _component("nemotron-3-nano-fp8-vllm-agg-kv", "worker", release)
    decode = _component("qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload", "decode", release)
    vllm = _component("qwen3-32b-fp8-vllm-agg", "worker", release)
    return [
        {"id": "probe/kv-without-events", "module": "dynamo.vllm", "args": _drop_flag(kv.args, "--kv-events-config")},
        {
            "id": "probe/hicache-on-decode",
            "module": "dynamo.sglang",
            "args": decode.args + ["--enable-hierarchical-cache", "--hicache-ratio", "2"],
        },
        {
            "id": "probe/max-num-queued-reqs",
            "module": "dynamo.vllm",
            "args": vllm.args + ["--max-num-queued-reqs", "8"],
        },
        {"id": "probe/flags", "module": "flags", "args": []},
    ]


@cache
def parsed(release: str = BASE) -> dict[str, dict]:
    """id -> parse result, for every component of every recipe rendered for `release` and the probes, from
    one batch run of that release's real parsers."""
    items = []
    for name in RECIPES:
        for comp in read_components(render_dgd(load_recipe(name), api_version=api_of(release))):
            if comp.module == "dynamo.trtllm" and not trtllm_importable():
                continue
            items.append({"id": f"{name}/{comp.role}", "module": comp.module, "args": comp.args})
    return {r["id"]: r for r in run_parsers(items + probes(release), release)}


def probe(release: str, name: str) -> dict:
    if release == OLDER:
        _older_env()
    return parsed(release)[f"probe/{name}"]


@pytest.fixture(scope="module", autouse=True)
def _engines_env():
    if not ENGINES_PY.exists():
        pytest.skip(f"no engine-parser environment at {ENGINES_PY}; build it with scripts/setup.sh --engines")


def _older_env() -> None:
    if not OVERLAYS[OLDER].is_dir():
        pytest.skip(f"no Dynamo 1.3.1 parser modules at {OVERLAYS[OLDER]}; build them with scripts/setup.sh --engines")


def _results(name: str, release: str = BASE) -> dict[str, dict]:
    r = load_recipe(name)
    if r.recipe.engine == "trtllm" and not trtllm_importable():
        pytest.skip(
            "tensorrt_llm is not installable here (PyPI has only a wheel_stub that downloads from "
            "NVIDIA's index); dynamo.trtllm's parser imports it"
        )
    out = {k.split("/", 1)[1]: v for k, v in parsed(release).items() if k.split("/", 1)[0] == name}
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


def _claims_hold(name: str, release: str) -> None:
    r = for_dgd_api(load_recipe(name), api_of(release))
    results = _results(name, release)
    if not all(res["ok"] for res in results.values()):
        pytest.fail("does not parse (see test_every_command_line_parses)")
    assert results["frontend"]["facts"]["router_mode"] == r.recipe.router
    for role in r.recipe.topology.roles():
        f = results[role]["facts"]
        assert f["model"] == r.model.id
        CHECKS[r.recipe.engine](r, role, f)


@pytest.mark.parametrize("name", RECIPES)
def test_the_recipes_claims_hold_on_the_parsed_configuration(name):
    _claims_hold(name, BASE)


# TRT-LLM recipes are left out of the 1.3.1 tier for the same reason as above (no tensorrt_llm here).
OLDER_RECIPES = [n for n in RECIPES if load_recipe(n).recipe.engine in ("vllm", "sglang")]


@pytest.mark.parametrize("name", OLDER_RECIPES)
def test_every_command_line_parses_under_dynamo_1_3_1(name):
    """Each recipe rendered for the 1.3 release (--dgd-api v1alpha1: 1.3.1's images) through ai-dynamo 1.3.1's
    own parsers with vLLM 0.23.0 / SGLang 0.5.14, the versions those images carry."""
    _older_env()
    failed = {role: res["error"] for role, res in _results(name, OLDER).items() if not res["ok"]}
    assert not failed, f"{name}: " + "\n".join(f"[{role}] {err}" for role, err in failed.items())


@pytest.mark.parametrize("name", OLDER_RECIPES)
def test_the_recipes_claims_hold_under_dynamo_1_3_1(name):
    _older_env()
    _claims_hold(name, OLDER)


def test_the_older_tier_runs_the_1_3_1_parsers():
    """The batch really imports ai-dynamo 1.3.1, vLLM 0.23.0 and SGLang 0.5.14 (not .venv-engines' own)."""
    _older_env()
    code = (
        "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in "
        "('ai-dynamo', 'vllm', 'sglang')}))"
    )
    proc = subprocess.run(
        [str(ENGINES_PY), "-c", code], capture_output=True, text=True, env=env_for(OLDER), timeout=120
    )
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {
        "ai-dynamo": "1.3.1",
        "vllm": "0.23.0",
        "sglang": "0.5.14",
    }


@pytest.mark.parametrize("release", [BASE, OLDER])
def test_each_releases_flag_list_is_its_parsers(release):
    """params/engines/releases/<release>.flags.yaml (what rendering checks engine_args against) is what the
    release's own parsers accept; regenerate with `python -m tests.engine_parsers.release_flags`."""
    res = probe(release, "flags")
    assert res["ok"], res["error"]
    committed = (ROOT / "params" / "engines" / "releases" / f"{release}.flags.yaml").read_text()
    assert committed == render_flags(release, res["facts"]), (
        f"{release}.flags.yaml is stale; run python -m tests.engine_parsers.release_flags"
    )


def test_a_1_6_only_flag_fails_1_3_1s_own_parser_as_rendering_says():
    """The refusal at render time (infersweep/recipe/release.py) is what the 1.3.1 worker would do at start-up:
    vLLM 0.31's --max-num-queued-reqs parses under 1.6.1 and is an unrecognized argument under 1.3.1."""
    new, old = probe(BASE, "max-num-queued-reqs"), probe(OLDER, "max-num-queued-reqs")
    assert new["ok"], new["error"]
    assert not old["ok"] and "unrecognized arguments: --max-num-queued-reqs" in old["error"]


def test_the_tier_catches_a_kv_recipe_without_events():
    """The checks fail on the defect they exist for: a KV-routed vLLM worker without --kv-events-config."""
    res = probe(BASE, "kv-without-events")
    assert res["ok"]
    with pytest.raises(AssertionError, match="no KV events"):
        _check_vllm(load_recipe("nemotron-3-nano-fp8-vllm-agg-kv"), "worker", res["facts"])


@pytest.mark.parametrize("release", [BASE, OLDER])
def test_the_tier_catches_hicache_on_an_sglang_decode_worker(release):
    """SGLang's own hooks refuse the old rendering (HiCache on a PD decode server, whose radix cache
    handle_pd_disaggregation forces off): 0.5.21's resolution hooks and 0.5.14's eager post-init alike."""
    res = probe(release, "hicache-on-decode")
    assert not res["ok"] and "enable-hierarchical-cache and disable-radix-cache" in res["error"]


if __name__ == "__main__":  # python -m tests.test_engine_parsers: the per-recipe table
    sys.exit(pytest.main([__file__, "-q", *sys.argv[1:]]))
