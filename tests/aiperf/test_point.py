"""A benchmark point has one type and one parser (infersweep/aiperf/point.py): the recipe's sweep, local
mode's scaled sweep, `--set points=...` and the pipeline's `points` parameter all go through it."""

from __future__ import annotations

import json

import pytest

from infersweep.aiperf.point import Point, PointError, parse_points, points_text, repeated, sweep
from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import RecipeError, load_recipe
from workflows.render import render_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


def test_a_point_round_trips_through_its_text():
    points = [Point(1, 8, 0), Point(16, 20, 4, 2.5)]
    assert parse_points(points_text(points)) == points
    assert json.loads(points_text(points))[0] == {"concurrency": 1, "request_rate": 0, "requests": 8, "warmup": 0}


@pytest.mark.parametrize(
    "value, fragment",
    [
        ("[]", "needs 1 to 64 points"),
        ('[{"concurrency": 2, "requests": 4}]', "point 0 must have exactly concurrency, requests, warmup"),
        ('[{"concurrency": 0, "requests": 4, "warmup": 0}]', "point 0: concurrency and requests must be integers >= 1"),
        ('[{"concurrency": 2, "requests": 4, "warmup": 0, "request_rate": -1}]', "point 0: request_rate must be"),
        (
            '[{"concurrency": 2, "requests": 4, "warmup": 0}, {"concurrency": 2, "requests": 8, "warmup": 0}]',
            "concurrency 2 at request_rate 0 repeats",
        ),
        ("{", "not JSON"),
    ],
)
def test_the_parser_names_the_point_and_the_fix(value, fragment):
    with pytest.raises(PointError, match=fragment):
        parse_points(value)


def test_a_point_the_pipeline_cannot_run_is_refused_when_rendered():
    """Before, the pipeline re-parsed `points` with json.loads only: a point without `warmup` rendered, and the
    point task's {{item.warmup}} then failed on the cluster. Now the render refuses it, naming the point."""
    with pytest.raises(RecipeError, match="--set points: point 0 must have exactly concurrency, requests, warmup"):
        render_recipe(
            load_recipe(RECIPE),
            load_cluster_settings(),
            overrides={"points": '[{"concurrency": 2, "requests": 4}]'},
            cache=False,
        )


def test_the_recipe_sweep_and_the_rendered_points_agree():
    r = load_recipe(RECIPE)
    bundle = render_recipe(r, load_cluster_settings(), cache=False)
    wf = next(d for d in bundle.documents() if d.get("kind") == "Workflow")
    rendered = next(p["value"] for p in wf["spec"]["arguments"]["parameters"] if p["name"] == "points")
    # each point regression.repetitions times (tests/aiperf/test_repetitions.py)
    assert parse_points(
        [
            {k: v for k, v in p.items() if k in ("concurrency", "requests", "warmup", "request_rate", "repetition")}
            for p in json.loads(rendered)
        ]
    ) == repeated(r.recipe.workload.points(), r.recipe.regression.repetitions)


def test_one_sweep_formula():
    assert sweep([1, 4], [], requests_per_concurrency=10, min_requests=8, warmup=lambda c: c) == [
        Point(1, 10, 1, 0),
        Point(4, 40, 4, 0),
    ]
    assert sweep([16], [0.5, 2], requests_per_concurrency=10, min_requests=8, warmup=lambda c: 0) == [
        Point(16, 8, 0, 0.5),
        Point(16, 20, 0, 2),
    ]
