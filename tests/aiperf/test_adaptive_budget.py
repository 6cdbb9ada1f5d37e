"""A point's budget (issue 32 item 4, adaptive length): the recipe's workload.max_requests_per_concurrency and
ci95_target reach the aiperf-point step through the rendered workflow's `workload` argument, like every other
workload field, and a recipe without them renders as before."""

from __future__ import annotations

import json

import pytest

from infersweep import aiperf as aiperf_contract
from infersweep.aiperf.adaptive import point_budget
from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import RecipeError, load_recipe
from infersweep.recipe.models import Workload
from steps import aiperf_point
from workflows.pipeline import recipe_run

BASE = {"isl": 64, "osl": 16, "concurrency": [1, 16], "requests_per_concurrency": 6, "min_requests": 32}


def test_a_budget_flows_from_the_recipe_to_the_point_step():
    r = load_recipe(
        "demo-prefix-rr",
        overrides={"workload.max_requests_per_concurrency": 24, "workload.ci95_target": 0.05},
    )
    args = recipe_run(r, load_cluster_settings()).arguments
    workload = json.loads(args["workload"])
    rpc = r.recipe.workload.requests_per_concurrency
    assert workload["max_requests_factor"] == pytest.approx(24 / rpc) and workload["ci95_target"] == 0.05
    point = json.loads(args["points"])[0]
    step = aiperf_point.parse_args(
        [
            *("--url", "http://f:8000", "--model", "m", "--tokenizer", "/tok", "--out", "/tmp/p/c1"),
            *("--concurrency", str(point["concurrency"]), "--requests", str(point["requests"])),
            *("--workload", args["workload"]),
        ]
    )
    assert point_budget(step.requests, step.workload["max_requests_factor"]) == point["requests"] * 24 // rpc
    # the step takes them; AIPerf never sees them
    argv = aiperf_contract.build_argv(step)
    assert not any("max_requests" in a or "ci95" in a for a in argv)


def test_no_budget_renders_the_workload_as_before():
    w = Workload(**BASE)
    assert "max_requests_factor" not in w.aiperf_workload() and "ci95_target" not in w.aiperf_workload()
    same = Workload(**BASE, max_requests_per_concurrency=6)  # a budget of the first window alone: nothing to add
    assert same.aiperf_workload() == w.aiperf_workload()


def test_a_budget_below_the_first_window_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"max_requests_per_concurrency 4 is below requests_per_concurrency 6.*raise"):
        Workload(**BASE, max_requests_per_concurrency=4)
    with pytest.raises(RecipeError, match="max_requests_per_concurrency"):
        load_recipe("demo-prefix-rr", overrides={"workload.max_requests_per_concurrency": 1})


def test_a_target_without_a_budget_is_refused():
    with pytest.raises(ValueError, match="ci95_target applies to a point that may be extended"):
        Workload(**BASE, ci95_target=0.05)


def test_the_step_refuses_a_bad_length_key():
    with pytest.raises(SystemExit):
        aiperf_point.parse_args(
            [
                *("--url", "http://f:8000", "--model", "m", "--tokenizer", "/tok", "--out", "/tmp/p/c1"),
                *("--concurrency", "1", "--requests", "8", "--workload", '{"isl":8,"osl":8,"max_requests_factor":-1}'),
            ]
        )
