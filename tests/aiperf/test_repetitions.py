"""Repetitions by default (issue 32 item 4, issue 38 finding 4): every point of a run whose numbers are results
(a submit, `run --local --workers gpu`, the nightly) runs `regression.repetitions` times (default 3), in
interleaved rounds, and `--set regression.repetitions=N` reaches the rendered Workflow and local runs."""

from __future__ import annotations

import json

import pytest

from infersweep.aiperf.point import Point, PointError, parse_points, repeated
from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.profile import load_local_profile
from infersweep.local.scale import run_points, scaled_lengths
from infersweep.local.scale_note import scale_note
from infersweep.recipe import load_recipe
from workflows.render import render_recipe

H200 = "qwen3-32b-bf16-vllm-h200-tp1"
MOCKER = "nemotron-3-nano-fp8-vllm-agg-kv"
C1_16_64 = {"workload.concurrency": [1, 16, 64]}


def _loads(points) -> list[tuple[int, int]]:
    return [(p.concurrency, p.repetition) for p in points]


def test_repetitions_run_in_rounds_so_no_load_runs_twice_in_a_row():
    pts = repeated([Point(1, 32, 4), Point(16, 96, 4), Point(64, 384, 4)], 3)
    assert _loads(pts) == [(1, 0), (16, 0), (64, 0), (1, 1), (16, 1), (64, 1), (1, 2), (16, 2), (64, 2)]
    assert all(a.concurrency != b.concurrency for a, b in zip(pts, pts[1:], strict=False))
    assert parse_points([p.as_dict() for p in pts]) == pts  # the points parameter carries them as they are


def test_a_repetition_count_outside_1_to_20_is_refused():
    with pytest.raises(PointError, match="repetitions must be 1 to 20"):
        repeated([Point(1, 8, 0)], 0)


def _rendered_points(recipe: str, sets: dict) -> list[tuple[int, int]]:
    bundle = render_recipe(load_recipe(recipe, overrides=sets), load_cluster_settings(), cache=False)
    params = {p["name"]: p.get("value") for p in bundle.workflow["spec"]["arguments"]["parameters"]}
    return [(p["concurrency"], p["repetition"]) for p in json.loads(params["points"])]


def test_render_and_submit_carry_the_recipes_repetitions_as_points():
    # `render` and `submit` both render through render_recipe with the --set recipe changes applied
    assert _rendered_points(H200, C1_16_64) == [(c, k) for k in range(3) for c in (1, 16, 64)]  # default 3
    assert _rendered_points(H200, C1_16_64 | {"regression.repetitions": 2}) == [
        (c, k) for k in range(2) for c in (1, 16, 64)
    ]
    assert _rendered_points(H200, C1_16_64 | {"regression.repetitions": 1}) == [(1, 0), (16, 0), (64, 0)]


def test_run_local_on_gpus_repeats_the_recipes_sweep_and_honours_the_set():
    prof = load_local_profile()
    r = load_recipe(H200, overrides=C1_16_64)
    assert _loads(run_points(r, prof, "gpu", *scaled_lengths(r, prof))) == [
        (c, k) for k in range(3) for c in (1, 16, 64)
    ]
    r5 = load_recipe(H200, overrides=C1_16_64 | {"regression.repetitions": 5})
    assert len(run_points(r5, prof, "gpu", *scaled_lengths(r5, prof))) == 15
    # the requests are the recipe's own (not scaled down) in every repetition
    assert {p.requests for p in run_points(r, prof, "gpu", 1, 1) if p.concurrency == 64} == {384}


def test_a_mocker_run_measures_once_unless_repetitions_are_asked_for_and_says_so():
    prof = load_local_profile()
    r = load_recipe(MOCKER)
    once = run_points(r, prof, "mocker", *scaled_lengths(r, prof))
    assert {p.repetition for p in once} == {0}
    note = "\n".join(scale_note(r, prof, {}, once, 1))
    assert "repetitions  3" in note and "-> 1 (a simulated point is not a result" in note
    r3 = load_recipe(MOCKER, overrides={"regression.repetitions": 3})
    thrice = run_points(r3, prof, "mocker", *scaled_lengths(r3, prof))
    assert _loads(thrice) == [(c, k) for k in range(3) for c, _ in _loads(once)]
    note = "\n".join(scale_note(r3, prof, {}, thrice, 1))
    # one row per load, not one per repetition
    assert f"-> [{', '.join(str(c) for c, _ in _loads(once))}]" in note and "-> 3" in note


def test_the_repetition_count_is_not_part_of_the_recipe_hash():
    """More repetitions measure the same deployment: `--resume` with a higher count adds the missing ones
    (infersweep.local.run checks the hash), and runs of different counts stay comparable."""
    from infersweep.recipe_context import recipe_hash

    hashes = {recipe_hash(load_recipe(H200, overrides={"regression.repetitions": n})) for n in (1, 2, 3, 5)}
    assert hashes == {recipe_hash(load_recipe(H200))}
    assert recipe_hash(load_recipe(H200, overrides=C1_16_64)) not in hashes  # what is measured still counts
