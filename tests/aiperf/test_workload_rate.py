"""Open-loop load: a recipe's request_rate sweep reaches AIPerf as --request-rate + --arrival-pattern
(AIPerf 0.13 aiperf/config/flags/cli_config.py, CLIConfig.request_rate / arrival_pattern), each rate point
lands in a folder of its own, and the results table says which rate a row measured."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from infersweep import aiperf as aiperf_contract
from infersweep.cli_util import check_sets
from infersweep.recipe import RecipeError
from infersweep.recipe.models import Workload
from steps import aiperf_point

BASE = {"isl": 64, "osl": 16}


def _argv(*extra: str) -> list[str]:
    args = aiperf_point.parse_args(
        [
            "--url",
            "http://f:8000",
            "--model",
            "m",
            "--tokenizer",
            "/tok",
            "--out",
            "/tmp/p/c16",
            "--requests",
            "40",
            *extra,
        ]
    )
    return aiperf_contract.build_argv(args)


def test_rate_sweep_points_carry_the_rate_under_one_concurrency_cap():
    w = Workload(**BASE, concurrency=[16], request_rate=[0.5, 2, 8], requests_per_concurrency=10, min_requests=8)
    assert w.load == "request_rate"
    assert [(p.concurrency, p.request_rate, p.requests) for p in w.points()] == [(16, 0.5, 8), (16, 2, 20), (16, 8, 80)]
    assert w.aiperf_workload()["arrival"] == "poisson"


def test_concurrency_sweep_points_are_closed_loop():
    w = Workload(**BASE, concurrency=[1, 4])
    assert w.load == "concurrency"
    assert [p.request_rate for p in w.points()] == [0, 0]
    assert "arrival" not in w.aiperf_workload()


@pytest.mark.parametrize(
    "extra, message",
    [
        ({"request_rate": [0]}, "above 0"),
        ({"request_rate": [-1.5]}, "above 0"),
        ({"request_rate": [float("nan")]}, "above 0"),
        ({"request_rate": [1e9]}, "at most"),
        ({"request_rate": [2, 2]}, "repeat"),
        ({"request_rate": []}, "at least 1"),
        ({"request_rate": [1, 2], "concurrency": [4, 8]}, "one concurrency, the in-flight cap"),
        ({"arrival": "constant"}, "arrival applies to a request_rate sweep"),
        ({"request_rate": [1], "arrival": "bursty"}, "poisson"),
    ],
)
def test_bad_rates_are_one_clear_recipe_error(extra, message):
    data = {**BASE, "concurrency": [16], **extra}
    with pytest.raises(ValueError, match=message):
        Workload(**data)


def test_bad_rate_in_a_recipe_file_names_the_field(tmp_path):
    from infersweep.paths import params_dir
    from infersweep.recipe import load_recipe

    src = (params_dir() / "recipes" / "demo" / "demo-prefix-rr.yaml").read_text()
    bad = src.replace("concurrency: [4, 8]", "concurrency: [16]\n  request_rate: [4, -1]")
    (tmp_path / "demo").mkdir()
    f = tmp_path / "demo" / "bad-rate.yaml"
    f.write_text(bad.replace("name: demo-prefix-rr", "name: bad-rate"))
    with pytest.raises(RecipeError, match=r"request_rate.*above 0"):
        load_recipe(f)


def test_rate_point_sends_request_rate_and_arrival_pattern_to_aiperf():
    argv = _argv(
        "--concurrency", "16", "--request-rate", "2.5", "--workload", json.dumps({**BASE, "arrival": "constant"})
    )
    assert argv[argv.index("--request-rate") + 1] == "2.5"
    assert argv[argv.index("--arrival-pattern") + 1] == "constant"
    assert argv[argv.index("--concurrency") + 1] == "16"  # the in-flight cap


def test_closed_loop_point_sends_no_rate():
    argv = _argv("--concurrency", "4", "--request-rate", "0", "--workload", json.dumps(BASE))
    assert "--request-rate" not in argv and "--arrival-pattern" not in argv


def test_rate_points_get_folders_and_seeds_of_their_own():
    assert str(aiperf_contract.point_folder("/run/points/c16", 2.5)) == "/run/points/c16-rate2.5"
    assert str(aiperf_contract.point_folder("/run/points/c16", 0)) == "/run/points/c16"
    seeds = {
        aiperf_contract.choose_seed(
            aiperf_point.parse_args(
                [
                    "--url",
                    "u",
                    "--model",
                    "m",
                    "--tokenizer",
                    "t",
                    "--out",
                    "o",
                    "--requests",
                    "1",
                    "--isl",
                    "8",
                    "--osl",
                    "8",
                    "--concurrency",
                    "16",
                    "--request-rate",
                    r,
                ]
            )
        )[0]
        for r in ("1", "2")
    }
    assert len(seeds) == 2


@pytest.mark.parametrize("rate", ["-1", "nan", "inf", "fast"])
def test_step_refuses_a_bad_rate(rate):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "steps.aiperf_point",
            "--url",
            "u",
            "--model",
            "m",
            "--tokenizer",
            "t",
            "--out",
            "/nonexistent/x",
            "--requests",
            "1",
            "--isl",
            "8",
            "--osl",
            "8",
            "--concurrency",
            "1",
            "--request-rate",
            rate,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2 and "--request-rate" in proc.stderr


def test_set_points_fill_in_closed_loop_and_check_rates():
    sets = {"points": '[{"concurrency":2,"requests":8,"warmup":0}]'}
    check_sets(sets, ["points"])
    assert json.loads(sets["points"]) == [{"concurrency": 2, "requests": 8, "warmup": 0, "request_rate": 0}]
    with pytest.raises(RecipeError, match="request_rate must be requests/s"):
        check_sets({"points": '[{"concurrency":2,"requests":8,"warmup":0,"request_rate":-3}]'}, ["points"])
    with pytest.raises(RecipeError, match="repeats"):
        check_sets(
            {
                "points": '[{"concurrency":2,"requests":8,"warmup":0,"request_rate":1},'
                '{"concurrency":2,"requests":8,"warmup":0,"request_rate":1}]'
            },
            ["points"],
        )


def test_rendered_point_task_passes_each_items_rate():
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.pipeline import recipe_run

    r = load_recipe("demo-prefix-rr")
    args = recipe_run(r, load_cluster_settings()).arguments
    assert all("request_rate" in p for p in json.loads(args["points"]))


def test_plots_keep_one_point_per_rate_of_a_rate_sweep():
    import pandas as pd

    from infersweep.results.plots import per_point

    df = pd.DataFrame(
        {
            "concurrency": [8, 8, 8],
            "request_rate": [2.0, 8.0, 8.0],
            "repetition": [0, 0, 1],
            "status": ["ok"] * 3,
            "valid": [True] * 3,
            "slo_pass": [True, False, False],
            "output_throughput_p50_tok_s_per_user": [170.0, 160.0, 150.0],
            "output_throughput_tok_s_per_gpu": [15.0, 40.0, 44.0],
        }
    )
    pts = per_point(df)
    assert list(pts["request_rate"]) == [2.0, 8.0] and list(pts["output_throughput_tok_s_per_gpu"]) == [15.0, 42.0]
    closed = per_point(df.assign(request_rate=0.0, concurrency=[1, 2, 2]))
    assert list(closed["concurrency"]) == [1, 2] and "request_rate" not in closed
