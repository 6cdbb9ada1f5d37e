"""Recipes as data: the real params/ load, and each mistake gives one error naming file, field and fix."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infersweep.cli import main
from infersweep.recipe import RecipeError, find_recipe, load_recipe, parse_recipe, recipe_data
from infersweep.results.index import NOT_RECIPES

NEMOTRON = "nemotron-3-nano-fp8-vllm-agg-kv"
VLLM_DISAGG = "qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload"
SGLANG_DPEP = "qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload"
SPEC = "lightning-vllm-disagg-h100-dflash"
TRTLLM = "lightning-trtllm-agg-h100-mtp"
KEDA = "qwen36-35b-a3b-fp8-sglang-agg-keda"


def data(name: str = NEMOTRON) -> dict:
    """The recipe as a file outside the catalog would have to say it (folder defaults merged in)."""
    return recipe_data(find_recipe(name))


def test_walking_skeleton_recipe_matches_the_cluster_report():
    r = load_recipe(NEMOTRON)
    assert r.model.id == "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8"
    assert r.recipe.engine == "vllm" and r.recipe.router == "kv"
    assert r.recipe.topology.mode == "agg"
    assert (r.recipe.topology.workers.replicas, r.recipe.topology.workers.tp) == (8, 1)
    assert r.gpu_count == 8 and r.recipe.gpu.type == "H100"
    assert r.recipe.slo.output_throughput_p50_tok_s_per_user == 50


def test_folder_defaults_and_workload_preset_fill_what_a_recipe_leaves_out():
    r = load_recipe(SPEC)  # says neither engine, SLO, trace nor baseline source
    assert r.recipe.engine == "vllm" and r.recipe.slo.ttft_p50_ms == 5000
    assert r.recipe.workload.kind == "trace" and (r.recipe.workload.isl, r.recipe.workload.osl) == (9300, 339)
    assert r.recipe.baseline.concurrency == 12 and "seeds/004" in r.recipe.baseline.source
    assert r.draft_model and "DFlash" in r.draft_model  # from the model's draft_models


def test_sglang_dp_attention_lives_inside_tp_and_vllm_dp_adds_gpus():
    assert load_recipe(SGLANG_DPEP).gpu_count == 16  # 4P+4D x TP=2 DP=2 EP=2, as the seed's 16 GPUs
    d = data(NEMOTRON)
    d["topology"]["workers"].update(replicas=4, dp=2)
    assert parse_recipe(d).gpu_count == 8  # vLLM: 4 x TP=1 x DP=2


def test_autoscaled_recipe_renders_min_and_claims_max():
    r = load_recipe(KEDA)
    assert (r.gpu_count, r.gpu_capacity) == (2, 16)


def test_seq_dist_fills_weighted_mean_lengths_and_reaches_aiperf_as_is():
    w = load_recipe("qwen3-32b-fp8-sglang-agg").recipe.workload
    assert w.kind == "seq_dist"
    assert w.isl == round((1024 * 35 + 4096 * 30 + 8192 * 20 + 16384 * 10 + 32768 * 5) / 100)
    assert w.aiperf_workload() == {"seq_dist": "1024,256:35;4096,512:30;8192,1024:20;16384,512:10;32768,256:5"}


def test_prefix_is_part_of_the_input_and_local_mode_keeps_its_share():
    w = load_recipe("qwen36-35b-a3b-fp8-sglang-disagg-dpep-prefix32k").recipe.workload
    assert w.aiperf_workload() == {"isl": 8192, "osl": 256, "prefix_tokens": 24576, "num_prefixes": 64}
    small = w.synthetic_workload(512, 4)
    assert small["prefix_tokens"] == 384 and small["isl"] + small["prefix_tokens"] == 512


def test_trace_runs_as_its_averages_locally():
    w = load_recipe(SPEC).recipe.workload
    assert set(w.aiperf_workload()) == {"trace", "trace_type"}
    assert w.synthetic_workload(512, 19) == {"isl": 512, "osl": 19}


def test_workload_keys_are_all_known_to_the_aiperf_step():
    from infersweep.aiperf import TRACE_KEYS, WORKLOAD_FLAGS
    from infersweep.recipe import all_recipe_paths

    for p in all_recipe_paths():
        w = load_recipe(p).recipe.workload
        assert set(w.aiperf_workload()) <= set(WORKLOAD_FLAGS) | set(TRACE_KEYS), p


def _error(d, tmp_path: Path) -> str:
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(d) if not isinstance(d, str) else d)
    with pytest.raises(RecipeError) as e:
        load_recipe(f)
    return str(e.value)


def _set(path: str, value):
    def mutate(d):
        *head, last = path.split(".")
        node = d
        for k in head:
            node = node.setdefault(k, {})
        node[last] = value

    return mutate


CASES = [
    # unknown fields and values
    (NEMOTRON, lambda d: d.update(routr="kv"), "routr", "unknown field"),
    (NEMOTRON, _set("topology.workers.tpp", 2), "topology.workers.tpp", "unknown field"),
    (NEMOTRON, lambda d: d.update(engine="tgi"), "engine", "must be one of"),
    (NEMOTRON, _set("kv_offload.size_gib", 32), "kv_offload.size_gib", "unknown field"),
    (NEMOTRON, lambda d: d.update(model="no-such-model"), "model", "unknown model"),
    (NEMOTRON, _set("gpu.type", "A100"), "gpu.type", "unknown GPU type"),
    (NEMOTRON, lambda d: d.update(name="Nemotron_Nano"), "name", "lowercase"),
    # the results store's own folders (<base>/experiments/, <base>/_index/) beside <base>/<recipe>/
    (NEMOTRON, lambda d: d.update(name="experiments"), "name", "'experiments' is reserved"),
    (NEMOTRON, lambda d: d.update(name="_index"), "name", "'_index' is reserved"),
    (NEMOTRON, lambda d: d.pop("workload"), "workload", "missing"),
    (SPEC, _set("workload.preset", "no-such-trace"), "workload.preset", "unknown workload"),
    # GPU arithmetic
    (NEMOTRON, _set("gpu.count", 16), "gpu.count", "topology uses 8 GPUs"),
    (
        NEMOTRON,
        lambda d: d["topology"]["workers"].update(tp=16, replicas=1) or d["gpu"].update(count=16),
        "topology.workers.tp",
        "set nodes: 2",
    ),
    (
        NEMOTRON,
        lambda d: d["topology"]["workers"].update(replicas=1, tp=4, dp=4) or d["gpu"].update(count=16),
        "topology.workers.tp",
        "TP=4 x DP=4 needs 16 GPUs",
    ),
    (
        NEMOTRON,
        lambda d: d["topology"]["workers"].update(replicas=1, tp=16, nodes=3) or d["gpu"].update(count=16),
        "topology.workers.nodes",
        "do not split evenly",
    ),
    (NEMOTRON, _set("topology.workers.ep", 4), "topology.workers.ep", "set ep to 1 or 1"),
    (SGLANG_DPEP, _set("topology.decode.dp", 4), "topology.decode.dp", "must divide TP=2"),
    (SGLANG_DPEP, _set("topology.prefill.ep", 3), "topology.prefill.ep", "must divide TP=2"),
    (
        TRTLLM,
        lambda d: d["topology"]["workers"].update(tp=4, dp=2) or d["gpu"].update(count=4),
        "topology.workers.dp",
        "set dp to 1 or 4",
    ),
    (KEDA, _set("gpu.count", 2), "gpu.count", "at max replicas"),
    (KEDA, _set("topology.workers.replicas", 3), "topology.workers.replicas", "set replicas: 1"),
    (
        KEDA,
        _set("topology.workers.autoscaling.max_replicas", 0),
        "topology.workers.autoscaling.max_replicas",
        "greater than or equal to 1",
    ),
    (
        "qwen3-235b-a22b-fp8-vllm-agg",
        lambda d: d["topology"]["workers"].update(replicas=16, tp=1),
        "topology.workers.tp",
        "raise tp",
    ),
    # shape
    (NEMOTRON, lambda d: d.update(topology={"prefill": {"replicas": 4, "tp": 2}}), "topology", "add `decode`"),
    (NEMOTRON, lambda d: d.update(topology={"decode": {"replicas": 4, "tp": 2}}), "topology", "add `prefill`"),
    # engine-specific options on the wrong engine
    (NEMOTRON, _set("kv_offload", {"hicache_ratio": 1.2}), "kv_offload.hicache_ratio", "use cpu_gib for vLLM"),
    (SGLANG_DPEP, _set("kv_offload", {"cpu_gib": 32}), "kv_offload.cpu_gib", "use hicache_ratio"),
    (TRTLLM, _set("kv_offload", {"cpu_gib": 32}), "kv_offload.cpu_gib", "remove kv_offload"),
    (VLLM_DISAGG, _set("kv_offload", {"write_policy": "write_back"}), "kv_offload.write_policy", "HiCache is SGLang's"),
    (SGLANG_DPEP, _set("transport.nixl_backend", "LIBFABRIC"), "transport.nixl_backend", "use UCX for sglang"),
    (NEMOTRON, _set("transport", {"resources": {"nvidia.com/gpu": 1}}), "transport.resources", "extra resource name"),
    # speculative decoding
    (NEMOTRON, _set("speculative", {"mode": "dspark"}), "speculative.draft_model", "needs a draft model"),
    (TRTLLM, _set("speculative", {"mode": "dflash"}), "speculative.mode", "trtllm has no 'dflash'"),
    (SPEC, _set("speculative", {"mode": "mtp", "draft_model": "x/y"}), "speculative.draft_model", "remove draft_model"),
    (SPEC, _set("speculative.mode", "medusa"), "speculative.mode", "must be one of"),
    # workload
    (NEMOTRON, _set("workload.concurrency", [1, 4, 4]), "workload.concurrency", "repeat"),
    (NEMOTRON, _set("workload.concurrency", [0, 4]), "workload.concurrency.0", "greater than 0"),
    (NEMOTRON, _set("workload.concurrency", "1,4,16"), "workload.concurrency", "list"),
    (NEMOTRON, _set("workload.seq_dist", "1024,256:50"), "workload", "one workload kind"),
    ("qwen3-32b-fp8-sglang-agg", _set("workload.seq_dist", "1024,256:50;4096,512:30"), "workload", "add up to 80"),
    ("qwen3-32b-fp8-sglang-agg", _set("workload.seq_dist", "1024x256"), "workload.seq_dist", "ISL,OSL:percent"),
    (NEMOTRON, _set("workload.prefix", {"tokens": 2048, "count": 8}), "workload", "below isl 1024"),
    (SPEC, _set("workload.multi_turn", {"turns": 3}), "workload", "remove `multi_turn`"),
    (SPEC, _set("workload.trace.url", "ftp://x"), "workload.trace.url", "https:// URL"),
    (SPEC, _set("baseline.concurrency", 7), "baseline.concurrency", "add it so the sweep measures"),
]


@pytest.mark.parametrize("name, mutate, field, words", CASES, ids=[f"{c[2]}:{c[3]}" for c in CASES])
def test_each_mistake_is_named_with_its_field_and_fix(tmp_path, name, mutate, field, words):
    d = data(name)
    mutate(d)
    msg = _error(d, tmp_path)
    assert "bad.yaml" in msg and f"{field}:" in msg and words in msg, msg
    assert len(msg.splitlines()) == 1, msg


def test_a_catalog_file_must_carry_its_own_name(tmp_path, monkeypatch):
    import shutil

    from infersweep import paths

    pdir = tmp_path / "params"
    shutil.copytree(paths.params_dir(), pdir)
    f = pdir / "recipes" / "cluster-report" / "renamed.yaml"
    shutil.copy(find_recipe(NEMOTRON), f)
    with pytest.raises(RecipeError, match="rename the file to nemotron-3-nano-fp8-vllm-agg-kv.yaml"):
        load_recipe(f, pdir)


@pytest.mark.parametrize(
    "text, words",
    [
        ("- a\n- b\n", "must be a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
        ("", "must be a mapping"),
    ],
)
def test_files_that_are_not_recipes(tmp_path, text, words):
    assert words in _error(text, tmp_path)


def test_a_huge_file_is_refused_before_parsing(tmp_path):
    f = tmp_path / "huge.yaml"
    f.write_text("a: " + "x" * 300_000)
    with pytest.raises(RecipeError, match="at most"):
        load_recipe(f)


def test_unknown_recipe_name_says_how_to_list_them():
    with pytest.raises(RecipeError, match="infersweep recipes"):
        load_recipe("no-such-recipe")


def test_sweep_points_carry_requests_and_warmup():
    points = parse_recipe(data()).recipe.workload.points()
    assert [p.concurrency for p in points] == data()["workload"]["concurrency"]
    assert all(p.requests >= 10 * p.concurrency for p in points)


def test_the_prefix_demos_carry_the_shared_prefix_they_are_named_for():
    """demo-prefix-{kv,rr}: a shared-prefix workload whose working set exceeds one worker's KV cache and fits in
    both (so routing shows), at lengths local mode runs unscaled (so the prefix survives `run --local`)."""
    from infersweep.local.profile import load_local_profile
    from infersweep.local.scale import scaled_workload

    for name in ("demo-prefix-kv", "demo-prefix-rr"):
        r = load_recipe(name)
        w, args = r.recipe.workload, r.recipe.engine_args
        assert w.prefix is not None, name
        cache = int(args[args.index("--num-gpu-blocks-override") + 1]) * int(args[args.index("--block-size") + 1])
        working_set = w.prefix.tokens * w.prefix.count
        assert cache < working_set < r.recipe.topology.workers.replicas * cache, name
        local = scaled_workload(r, load_local_profile())
        assert (local["prefix_tokens"], local["num_prefixes"]) == (w.prefix.tokens, w.prefix.count), name


def test_a_recipe_named_like_a_store_folder_is_refused_before_anything_is_rendered(tmp_path, capsys):
    """A recipe's runs go to <base>/<recipe>/<run-id>: one named `experiments` would put them among the
    experiments' treatments, which no listing reads as runs of a recipe."""
    recipe = tmp_path / "experiments.yaml"
    recipe.write_text(yaml.safe_dump({**data(NEMOTRON), "name": "experiments"}))
    out = tmp_path / "out"
    assert main(["render", str(recipe), "--out", str(out), "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "name:" in err and "rename the recipe" in err, err
    assert not out.exists()


def test_the_reserved_recipe_names_are_the_store_folders_that_hold_no_recipe():
    from infersweep.recipe.models import RESERVED_RECIPE_NAMES

    assert RESERVED_RECIPE_NAMES == NOT_RECIPES  # the recipe layer cannot import results/: spelled twice
