"""Experiments: expansion of a spec into validated recipes, restart classes, the run order, bad specs, and
every study file in params/experiments planning with at most one full deploy per full-redeploy class."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infersweep.cli import main
from infersweep.experiment.plan import make_plan
from infersweep.experiment.restart import RestartClass, classify
from infersweep.experiment.spec import all_experiment_paths, load_experiment, patch
from infersweep.recipe import RecipeError, load_recipe, parse_recipe, recipe_data

BASE = "nemotron-3-nano-fp8-vllm-agg-kv"  # 8 aggregated vLLM workers x TP=1 on 8 H100
DISAGG = "qwen3-32b-fp8-vllm-disagg-4p4d"


def write(tmp_path: Path, spec: dict, name: str = "exp.yaml") -> Path:
    p = tmp_path / name
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return p


def spec(**over) -> dict:
    base = {
        "name": "t",
        "base": BASE,
        "factors": {"router": {"rr": {"router": "round-robin"}, "kv": {"router": "kv"}}},
        "question": {"metrics": ["ttft_avg_ms"], "concurrency": [1, 8]},
    }
    return {**base, **over}


def variant(name: str, change: dict):
    data = patch(recipe_data(load_recipe(name).path), change)
    return parse_recipe({**data, "name": "x"})


# ---------------------------------------------------------------- expansion


def test_full_design_is_the_cross_product_with_question_applied(tmp_path):
    s = spec(
        factors={
            "router": {"rr": {"router": "round-robin"}, "kv": {"router": "kv"}},
            "mem": {
                "m90": {"engine_args": ["--gpu-memory-utilization", "0.90"]},
                "m80": {"engine_args": ["--gpu-memory-utilization", "0.80"]},
            },
        }
    )
    e = load_experiment(write(tmp_path, s))
    assert [t.name for t in e.treatments] == ["rr-m90", "rr-m80", "kv-m90", "kv-m80"]
    t = e.treatment("kv-m80")
    assert t.levels == {"router": "kv", "mem": "m80"}
    assert t.recipe.recipe.router == "kv" and t.recipe.recipe.engine_args[-1] == "0.80"
    assert t.recipe.name == "t-kv-m80"
    assert all(x.recipe.recipe.workload.concurrency == [1, 8] for x in e.treatments)


def test_fractional_design_lists_only_its_rows(tmp_path):
    s = spec(
        factors={
            "router": {"rr": {"router": "round-robin"}, "kv": {"router": "kv"}},
            "rep": {"r8": {}, "r4": {"gpu": {"count": 4}, "topology": {"workers": {"replicas": 4}}}},
        },
        design=[{"router": "rr", "rep": "r8"}, {"router": "kv", "rep": "r4"}],
    )
    e = load_experiment(write(tmp_path, s))
    assert [t.name for t in e.treatments] == ["rr-r8", "kv-r4"]
    assert e.treatment("kv-r4").recipe.gpu_count == 4


def test_explicit_treatments_and_null_deletes(tmp_path):
    s = {
        "name": "t",
        "question": {"metrics": ["ttft_avg_ms"]},
        "treatments": [
            {"name": "off", "recipe": "qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload", "set": {"kv_offload": None}},
            {"name": "on", "recipe": "qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload"},
        ],
    }
    e = load_experiment(write(tmp_path, s))
    assert e.treatment("off").recipe.recipe.kv_offload is None
    assert e.treatment("on").recipe.recipe.kv_offload.cpu_gib == 32


# ---------------------------------------------------------------- restart classes


@pytest.mark.parametrize(
    "change, expected",
    [
        ({"workload": {"isl": 512}}, RestartClass.LOAD),
        ({"slo": {"ttft_p50_ms": 100}}, RestartClass.LOAD),
        # kv -> round-robin also changes the workers: a KV-routed worker is given --kv-events-config (Dynamo 1.6.1
        # workers publish KV events only with it), a round-robin one is not
        ({"router": "round-robin"}, RestartClass.WORKER),
        ({"gpu": {"count": 4}, "topology": {"workers": {"replicas": 4}}}, RestartClass.SCALE),
        ({"engine_args": ["--gpu-memory-utilization", "0.80"]}, RestartClass.WORKER),
        ({"gpu": {"count": 16}, "topology": {"workers": {"tp": 2}}}, RestartClass.FULL),
        ({"model": "qwen3-32b-fp8"}, RestartClass.FULL),
        ({"engine": "sglang", "engine_args": []}, RestartClass.FULL),
        (
            {"topology": {"workers": None, "prefill": {"replicas": 4, "tp": 1}, "decode": {"replicas": 4, "tp": 1}}},
            RestartClass.FULL,
        ),
    ],
)
def test_each_change_gets_its_restart_class(change, expected):
    a, b = load_recipe(BASE), variant(BASE, change)
    assert classify(a, b).cls is expected
    assert classify(b, a).cls is expected  # the class of a change does not depend on its direction


def test_a_router_change_that_leaves_the_workers_alone_replaces_only_the_frontend():
    rr, rand = variant(BASE, {"router": "round-robin"}), variant(BASE, {"router": "random"})
    assert classify(rr, rand).cls is RestartClass.FRONTEND


def test_worker_class_on_disaggregated_offload_and_scale_of_one_side():
    a = load_recipe(DISAGG)
    assert classify(a, variant(DISAGG, {"kv_offload": {"cpu_gib": 32}})).cls is RestartClass.WORKER
    assert (
        classify(a, variant(DISAGG, {"topology": {"prefill": {"replicas": 6}, "decode": {"replicas": 2}}})).cls
        is RestartClass.SCALE
    )


def test_a_change_names_what_differs():
    t = classify(load_recipe(BASE), variant(BASE, {"router": "round-robin"}))
    assert t.reasons == ("router: kv -> round-robin",)


# ---------------------------------------------------------------- ordering


def test_order_deploys_each_full_class_once_and_beats_the_listed_order(tmp_path):
    tp2 = {"gpu": {"count": 16}, "topology": {"workers": {"tp": 2}}}
    # round-robin vs random: a router change that leaves the workers alone (kv would also change them: KV events)
    s = spec(
        factors={
            "tp": {"tp1": {}, "tp2": tp2},
            "router": {"rr": {"router": "round-robin"}, "rand": {"router": "random"}},
        },
        design=[
            {"tp": "tp1", "router": "rr"},
            {"tp": "tp2", "router": "rr"},
            {"tp": "tp1", "router": "rand"},
            {"tp": "tp2", "router": "rand"},
        ],
    )
    e = load_experiment(write(tmp_path, s))
    as_listed, planned = make_plan(e, ordered=False), make_plan(e)
    assert as_listed.counts()[RestartClass.FULL] == 4
    assert planned.counts()[RestartClass.FULL] == 2 == planned.distinct_full
    assert planned.counts()[RestartClass.FRONTEND] == 2
    assert planned.naive_counts()[RestartClass.FULL] == 4


def test_order_continues_from_the_running_frontend_and_scales_down_first(tmp_path):
    r4 = {"gpu": {"count": 4}, "topology": {"workers": {"replicas": 4}}}
    s = spec(
        factors={"rep": {"r4": r4, "r8": {}}, "router": {"rr": {"router": "round-robin"}, "rand": {"router": "random"}}}
    )
    plan = make_plan(load_experiment(write(tmp_path, s)))
    names = [st.treatment.name for st in plan.steps]
    assert names[0].startswith("r8")  # deploy the largest, then scale down (no model load)
    # the scale step keeps the running frontend: it changes replicas only, never the router as well
    scale = next(st for st in plan.steps if st.transition.cls is RestartClass.SCALE)
    assert not any(r.startswith("router") for r in scale.transition.reasons), scale.transition.reasons
    assert plan.counts() == {RestartClass.FULL: 1, RestartClass.FRONTEND: 2, RestartClass.SCALE: 1}


# ---------------------------------------------------------------- bad specs


@pytest.mark.parametrize(
    "over, message",
    [
        ({"factorz": {}}, "factorz: unknown field"),
        (
            {"factors": {"router": {"rr": {"router": "round-robin"}}}},
            "factors.router: a factor needs at least two levels",
        ),
        (
            {"factors": {"tp": {"tp1": {}, "tp2": {"topology": {"workers": {"tp": 2}}}}}},
            "(treatment tp=tp2): gpu.count: the topology uses 16 GPUs",
        ),
        (
            {"factors": {"r": {"a": {"router": "kv"}, "b": {"router": "fastest"}}}},
            "(treatment r=b): router: must be one of",
        ),
        ({"design": [{"router": "kv"}, {"router": "best"}]}, "design.1.router: unknown level 'best'"),
        ({"design": [{"router": "kv"}, {"routr": "rr"}]}, "design.1: unknown factor 'routr'"),
        (
            {"claim": {"metric": "ttft_avg_ms", "concurrency": 8, "treatment": "kv", "baseline": "r-r"}},
            "claim.baseline: no treatment 'r-r'",
        ),
        (
            {"claim": {"metric": "ttft_avg_ms", "concurrency": 64, "treatment": "kv", "baseline": "rr"}},
            "claim.concurrency: treatment 'kv' does not measure c64",
        ),
        (
            {"claim": {"metric": "ttft_fast", "concurrency": 8, "treatment": "kv", "baseline": "rr"}},
            "claim.metric: ttft_fast",
        ),
        ({"treatments": [{"name": "a", "recipe": BASE}]}, "give either `base` + `factors` or a `treatments` list"),
        ({"base": "no-such-recipe"}, "base: no recipe 'no-such-recipe'"),
        ({"name": "a-very-long-experiment-name-that-goes-on-and"}, "name: String should have at most 40 characters"),
        (
            {
                "name": "a-long-experiment-name-that-goes-on-and",
                "factors": {"router": {"round-robin-routing": {"router": "round-robin"}, "kv": {"router": "kv"}}},
            },
            "over 52; shorten the experiment name or the level labels",
        ),
    ],
)
def test_bad_spec_is_one_clear_error(tmp_path, over, message):
    path = write(tmp_path, spec(**over))
    with pytest.raises(RecipeError) as e:
        load_experiment(path)
    text = str(e.value)
    assert str(path) in text and message in text, text
    assert len(text.splitlines()) == 1  # one mistake, one line


def test_catalog_file_name_must_match(tmp_path):
    pdir = tmp_path / "params"
    import shutil

    from infersweep.paths import params_dir

    shutil.copytree(params_dir(), pdir)
    (pdir / "experiments" / "other.yaml").write_text(yaml.safe_dump(spec()))
    with pytest.raises(RecipeError, match="differs from the file name; rename the file to t.yaml"):
        load_experiment("other", pdir)


def test_cli_plan_prints_order_and_counts(capsys):
    assert main(["experiment", "plan", "qwen3-32b-mooncake"]) == 0
    out = capsys.readouterr().out
    assert "full redeploy             2                        5" in out
    assert main(["experiment", "plan", "nope"]) == 2


# ---------------------------------------------------------------- the seed studies


EXPECTED = {  # study -> (full deploys, one workflow per recipe)
    "nemotron-rr-vs-kv": (1, 2),
    "qwen3-32b-mooncake": (2, 5),
    "qwen3-32b-tp1-vs-tp2": (2, 2),
    "qwen36-hicache-policy": (1, 2),
    "gpu-kv-vs-rr": (1, 12),  # 3 ABBA blocks of 2 treatments: 12 runs, one deployment
    "gpu-kv-vs-rr-no-reset": (1, 12),
}


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_every_study_plans_with_one_deploy_per_full_class(path):
    e = load_experiment(path)
    plan = make_plan(e)
    assert plan.counts()[RestartClass.FULL] == plan.distinct_full
    assert (plan.counts()[RestartClass.FULL], plan.naive_counts()[RestartClass.FULL]) == EXPECTED[e.name]
    assert e.spec.seed and e.spec.seed.found and e.spec.seed.expect  # the report's "direction agrees" needs it


def test_nemotron_study_is_one_worker_deploy_and_two_frontends():
    plan = make_plan(load_experiment("nemotron-rr-vs-kv"))
    assert [s.transition.cls for s in plan.steps] == [RestartClass.FULL, RestartClass.FRONTEND]
    assert all(s.treatment.recipe.recipe.workload.multi_turn for s in plan.steps)


# ---------------------------------------------------------------- the GPU-time model


def test_cost_model_saves_exactly_the_avoided_setup():
    from infersweep.experiment.cost import Durations, naive_cost, plan_cost

    d = Durations()
    for path in all_experiment_paths():
        plan = make_plan(load_experiment(path))
        ours, naive = plan_cost(plan, d), naive_cost(plan, d)
        measuring = (
            sum(
                len(s.treatment.recipe.recipe.workload.concurrency) * d.point_s * s.treatment.recipe.gpu_count
                for s in plan.steps
            )
            / 3600
        )
        # both run the same sweeps; only setup differs, and it never grows
        assert ours.gpu_hours - ours.setup_gpu_hours == pytest.approx(measuring)
        assert naive.gpu_hours - naive.setup_gpu_hours == pytest.approx(measuring)
        assert ours.setup_gpu_hours <= naive.setup_gpu_hours + 1e-9
        if plan.counts()[RestartClass.FULL] == len(plan.steps):  # nothing to reuse: the same cost
            assert ours.gpu_hours == pytest.approx(naive.gpu_hours)
    # a slower warm-up makes the frontend-only swap worth more (the seed's SGLang start-up point)
    nemotron = make_plan(load_experiment("nemotron-rr-vs-kv"))
    slow = Durations(warmup_s={"vllm": 600.0, "sglang": 600.0, "trtllm": 600.0})
    assert (
        naive_cost(nemotron, slow).gpu_hours - plan_cost(nemotron, slow).gpu_hours
        > naive_cost(nemotron, d).gpu_hours - plan_cost(nemotron, d).gpu_hours
    )


def test_every_part_of_a_worker_component_the_operator_hashes_restarts_the_workers():
    """The worker hash covers the whole worker component except replicas, scalingAdapter, modelRef,
    eppConfig and topologyConstraint (deploy/operator/api/v1beta1 ComputeDGDWorkersSpecHash), not only its
    podTemplate: a /dev/shm size change (sharedMemorySize) rolls every worker."""
    a, b = load_recipe(DISAGG), variant(DISAGG, {"placement": {"shared_memory": "64Gi"}})
    assert classify(a, b).cls is RestartClass.WORKER
