"""`--set PATH=VALUE` changes recipe fields (dotted paths, YAML values), and the recipe is validated and
rendered again: the DGD, points, GPU locks, gpu-count and context follow. Parameters derived from the recipe
cannot be set (one error naming what to set instead); an unknown path gets a did-you-mean.

The first four tests are the wrong answers of issue 21 item 2, each failing on the parameter-level --set."""

from __future__ import annotations

import json

import pytest
import yaml

from infersweep.cli import main
from infersweep.cli_util import parse_sets
from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import RecipeError, load_recipe
from infersweep.recipe.overrides import DERIVED, RUN_PARAMS

TP16 = "llama-3-1-8b-vllm-tp16-multinode"  # gpu.count 16: one replica, TP=16 over two nodes
AGG = "nemotron-3-nano-fp8-vllm-agg-kv"  # 8 workers x TP=1, isl 1024 / osl 256


def rendered(tmp_path, recipe: str, *sets: str, cache: bool = False) -> tuple[dict, dict]:
    """(DGD, workflow parameters) as `infersweep render RECIPE --set ...` writes them."""
    out = tmp_path / "out"
    argv = ["render", recipe, "--out", str(out), *[a for s in sets for a in ("--set", s)]]
    assert main(argv if cache else [*argv, "--no-cache"]) == 0
    wf = yaml.safe_load((out / "workflow.yaml").read_text())
    params = {p["name"]: p.get("value") for p in wf["spec"]["arguments"]["parameters"]}
    return yaml.safe_load((out / "dgd.yaml").read_text()), params


def refused(capsys, *argv: str) -> str:
    assert main(list(argv)) == 2
    return capsys.readouterr().err


# ---- the reported wrong answers -------------------------------------------------------------------


def test_gpu_count_cannot_be_set(tmp_path, capsys):
    # Was accepted: the 16-GPU recipe took the 1-GPU lane's lock and reported tok/s/GPU 16x too high.
    err = refused(capsys, "render", TP16, "--out", str(tmp_path / "o"), "--set", "gpu-count=1")
    assert "--set gpu-count: cannot be set" in err and "topology." in err and "gpu.count" in err
    assert not (tmp_path / "o").exists()


def test_topology_change_moves_gpu_count_and_locks(tmp_path):
    # What a user means by fewer GPUs: the topology. gpu-count, the DGD and the GPU guard's keys follow.
    settings = load_cluster_settings()
    from workflows.gpu_guard import guard_arguments

    dgd16, p16 = rendered(tmp_path / "a", TP16)
    dgd8, p8 = rendered(tmp_path / "b", TP16, "topology.workers={tp: 8, nodes: 1}", "gpu.count=8")
    assert (p16["gpu-count"], p8["gpu-count"]) == ("16", "8")
    locks = guard_arguments(
        load_recipe(TP16, overrides={"topology.workers.tp": 8, "topology.workers.nodes": 1, "gpu.count": 8}), settings
    )
    assert {k: p8[k] for k in locks} == locks
    assert {k: p8[k] for k in locks} != {k: p16[k] for k in locks}
    assert '"nodeCount": 2' in json.dumps(dgd16) and "nodeCount" not in json.dumps(dgd8)
    assert json.loads(p8["context"])["recipe_hash"] != json.loads(p16["context"])["recipe_hash"]


def test_model_change_is_served_by_the_dgd(tmp_path):
    # Was accepted as a parameter while the DGD still served the recipe's own model.
    from infersweep.paths import params_dir

    new = yaml.safe_load((params_dir() / "models" / "qwen3-32b-fp8.yaml").read_text())["id"]
    old = load_recipe(AGG).model.id
    dgd, params = rendered(tmp_path / "a", AGG, "model=qwen3-32b-fp8")
    assert new != old and params["model"] == new
    assert new in json.dumps(dgd) and old not in json.dumps(dgd)
    _, plain = rendered(tmp_path / "b", AGG)
    assert json.loads(params["context"])["recipe_hash"] != json.loads(plain["context"])["recipe_hash"]


def test_model_not_in_catalog_is_refused(tmp_path, capsys):
    err = refused(capsys, "render", AGG, "--out", str(tmp_path / "o"), "--set", "model=no-such-model")
    assert "model: unknown model 'no-such-model'" in err and "--set model=" in err
    err = refused(capsys, "render", AGG, "--out", str(tmp_path / "o"), "--set", "model=someone/Some-Model")
    assert "not a Hugging Face id; use one of [" in err
    err = refused(capsys, "render", AGG, "--out", str(tmp_path / "o"), "--set", "model=Qwen/Qwen3-32B-FP8")
    assert "Qwen/Qwen3-32B-FP8 is the Hugging Face id of qwen3-32b-fp8: --set model=qwen3-32b-fp8" in err
    assert not (tmp_path / "o").exists()


def test_workload_mapping_merges(tmp_path):
    # Was: the workload parameter replaced whole, so osl was silently dropped.
    _, params = rendered(tmp_path, AGG, 'workload={"isl":512}')
    w = json.loads(params["workload"])
    assert (w["isl"], w["osl"]) == (512, 256)
    assert [p["concurrency"] for p in json.loads(params["points"]) if p["repetition"] == 0] == [1, 4, 16, 32, 64, 128]


def test_workload_concurrency_as_a_user_types_it(tmp_path):
    # Was refused ("no such parameter").
    _, params = rendered(tmp_path, AGG, "workload.concurrency=[1,2]", "workload.isl=2048")
    assert [p["concurrency"] for p in json.loads(params["points"]) if p["repetition"] == 0] == [1, 2]
    assert json.loads(params["workload"])["isl"] == 2048


# ---- what may and may not be set --------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(DERIVED) + ["gpu-lock-1", "gpu-lock-4"])
def test_derived_parameters_cannot_be_set(key):
    with pytest.raises(RecipeError, match=f"--set {key}: cannot be set: .*(set|use|copy|new recipe file)"):
        parse_sets([f"{key}=1"])


def test_every_pipeline_parameter_is_classified():
    # A new pipeline parameter must be declared a run parameter or derived (with what to set instead).
    from workflows.pipeline import PIPELINE_PARAMS

    recipe_fields = {"model", "workload", "slo", "regression"}  # the recipe's fields of the same name
    names = {n for n, _, _ in PIPELINE_PARAMS}
    locks = {n for n in names if n.startswith("gpu-lock-")}
    assert names == set(RUN_PARAMS) | (set(DERIVED) - {"name"}) | recipe_fields | locks


@pytest.mark.parametrize(
    "typed, hint",
    [
        ("workload.concurency=[1,2]", "did you mean workload.concurrency?"),
        ("routr=kv", "did you mean router?"),
        ("prometheus_url=http://p:9090", "did you mean prometheus-url?"),
        ("max_error_rate=0.1", "did you mean workload.max_error_rate?"),
        ("topology.worker.tp=2", "did you mean topology.workers?"),
    ],
)
def test_unknown_path_did_you_mean(typed, hint):
    with pytest.raises(RecipeError) as e:
        parse_sets([typed])
    assert hint in str(e.value) and "\n" not in str(e.value)


def test_values_are_yaml_and_run_parameters_stay_strings():
    s = parse_sets(
        [
            "workload.concurrency=[1, 8]",
            "router=round-robin",
            "topology.workers.tp=2",
            "workload={isl: 1024}",
            "kv_offload=",
            "s3-prefix=runs/x",
            "storage-class=",
        ]
    )
    assert s.recipe == {
        "workload.concurrency": [1, 8],
        "router": "round-robin",
        "topology.workers.tp": 2,
        "workload": {"isl": 1024},
        "kv_offload": None,
    }
    assert s.params == {"s3-prefix": "runs/x", "storage-class": ""}


def test_a_list_for_one_value_is_not_a_grid():
    with pytest.raises(RecipeError, match="takes one value; a list of values .* experiment"):
        parse_sets(["workload.isl=[1024,2048]"])


@pytest.mark.parametrize(
    "typed, expect",
    [
        ("router=fastest", "router: must be one of 'kv', 'round-robin' or 'random' (got 'fastest')"),
        ("workload.isl=0", "workload.isl: Input should be greater than 0"),
        ("workload.concurrency=[4,4]", "concurrency values repeat: [4]"),
        ("workload.max_error_rate=2", "workload.max_error_rate: Input should be less than or equal to 1"),
        ("topology.workers.tp=2", "gpu.count: the topology uses 16 GPUs"),
        ("workload={exec: rm}", "workload.exec: unknown field"),
    ],
)
def test_changed_recipe_is_validated_as_a_file_is(typed, expect):
    key, _, value = typed.partition("=")
    changes = parse_sets([typed]).recipe
    with pytest.raises(RecipeError) as e:
        load_recipe(AGG, overrides=changes)
    assert expect in str(e.value) and f"--set {key}=" in str(e.value)


def test_render_cache_keys_on_recipe_changes(tmp_path, monkeypatch):
    from workflows import render_cache

    monkeypatch.setenv("INFERSWEEP_CACHE_DIR", str(tmp_path / "cache"))
    settings = load_cluster_settings()
    key = lambda r: render_cache.bundle_key(
        r, settings, dgd_api="v1beta1", namespace=None, overrides=None, workflow_name=None
    )
    plain, two = load_recipe(AGG), load_recipe(AGG, overrides={"workload.concurrency": [1, 2]})
    assert key(plain) != key(two) == key(load_recipe(AGG, overrides={"workload.concurrency": [1, 2]}))
    # through the CLI's cache: a hit for the same --set, a fresh render for another
    points = lambda p: [x["concurrency"] for x in json.loads(p["points"]) if x["repetition"] == 0]
    assert points(rendered(tmp_path / "a", AGG, "workload.concurrency=[1,2]", cache=True)[1]) == [1, 2]
    assert points(rendered(tmp_path / "b", AGG, "workload.concurrency=[1,2]", cache=True)[1]) == [1, 2]
    assert points(rendered(tmp_path / "c", AGG, "workload.concurrency=[4]", cache=True)[1]) == [4]
    assert points(rendered(tmp_path / "d", AGG, cache=True)[1]) == [1, 4, 16, 32, 64, 128]


def test_validate_takes_set(capsys):
    assert (
        main(
            ["validate", f"params/recipes/cluster-report/{AGG}.yaml", "--set", "workload.concurrency=[2]", "--no-cache"]
        )
        == 0
    )
    assert main(["validate", f"params/recipes/cluster-report/{AGG}.yaml", "--set", "router=fastest", "--no-cache"]) == 1
    assert "router: must be one of" in capsys.readouterr().err


def test_submit_refuses_derived_before_any_request(capsys, monkeypatch):
    import infersweep.commands.submit as submit

    monkeypatch.setattr(submit, "server_from_args", lambda a: pytest.fail("no server may be reached"))
    assert main(["submit", TP16, "--set", "gpu-count=1"]) == 2
    assert "cannot be set" in capsys.readouterr().err


def test_run_local_applies_recipe_changes(monkeypatch, tmp_path):
    # run --local hands the recipe changes to run_local, which loads the recipe with them.
    import infersweep.local.run as local_run

    seen = {}

    def fake(ref, **kw):
        seen["r"] = load_recipe(ref, overrides=kw["recipe_overrides"])
        seen["params"] = kw["overrides"]
        raise RecipeError("stop here")

    monkeypatch.setattr(local_run, "run_local", fake)
    assert (
        main(
            [
                "run",
                "--local",
                AGG,
                "--out",
                str(tmp_path / "runs"),
                "--set",
                "workload.concurrency=[1,2]",
                "--set",
                "ready-timeout-s=60",
            ]
        )
        == 2
    )
    assert seen["r"].recipe.workload.concurrency == [1, 2] and seen["params"] == {"ready-timeout-s": "60"}


def test_resume_refuses_other_recipe_changes(tmp_path):
    # A resumed run keeps the points measured before: they must be of the same recipe fields.
    from infersweep.local.run import run_local
    from workflows.render import render_recipe

    run_dir = tmp_path / "runs" / "r1"
    changes = {"workload.concurrency": [1, 2]}
    render_recipe(
        load_recipe(AGG, overrides=changes), load_cluster_settings(), namespace="local", workflow_name="r1"
    ).write(run_dir / "rendered")
    kw = dict(resume=run_dir, out_root=tmp_path / "runs", cache_root=tmp_path / "cache")
    with pytest.raises(RecipeError, match="with other recipe fields .* give the --set it was run with"):
        run_local(AGG, **kw)
    with pytest.raises(RecipeError, match="with other recipe fields"):
        run_local(AGG, recipe_overrides={"workload.concurrency": [1, 4]}, **kw)
    assert not (tmp_path / "cache" / "toy-model").exists(), "nothing may be built or started"
