"""Comparisons that say what they compare (issue 21 item 3): compare, regress, experiment report and the
nightly regression check refuse runs of another workload, model, SLOs or source unless
`--allow-different DIM`, and then print what differs. On main each of these compared silently and printed
the difference of workloads as an improvement (or a regression)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from infersweep.cli import main as cli_main
from infersweep.experiment.spec import load_experiment
from infersweep.recipe_context import recipe_hash
from infersweep.results import baseline as baseline_mod
from infersweep.results.comparable import NotComparable, check_comparable
from infersweep.results.run import Run
from infersweep.results.table import finish_table

SLO = {"ttft_p50_ms": 2000, "output_throughput_p50_tok_s_per_user": 20}
CTX = {"model": "Qwen/Qwen3-0.6B", "workload": {"isl": 128, "osl": 64}, "slo": SLO, "source": "measured"}


def table(recipe: str, tok: dict[int, float], reps: int = 1, slo=SLO) -> pd.DataFrame:
    rows = []
    for c, t in tok.items():
        for r in range(reps):
            rows.append(
                {
                    "run_id": f"wf-{recipe}",
                    "recipe": recipe,
                    "concurrency": c,
                    "repetition": r,
                    "status": "ok",
                    "reason": "",
                    "error_ratio": 0.0,
                    "ttft_p50_ms": 100.0,
                    "ttft_avg_ms": 100.0,
                    "itl_p50_ms": 5.0,
                    "itl_avg_ms": 5.0,
                    "request_latency_avg_ms": 900.0,
                    "request_latency_p50_ms": 900.0,
                    "output_throughput_tok_s": t,
                    "request_throughput_req_s": t / 100,
                    "output_throughput_tok_s_per_gpu": t / 2,
                    "output_throughput_avg_tok_s_per_user": 50.0,
                    "output_throughput_p50_tok_s_per_user": 50.0,
                    "goodput_req_s": t / 100,
                    "slo_pass": True,
                    "slo_detail": "meets",
                    "valid": True,
                    "validity_reasons": "",
                }
            )
    return finish_table(pd.DataFrame(rows), {"recipe": recipe, "slo": slo})


def folder(root: Path, name: str, df: pd.DataFrame, **context) -> str:
    f = root / name
    (f / "summary").mkdir(parents=True)
    df.to_parquet(f / "summary" / "results.parquet")
    (f / "summary" / "run.json").write_text(
        json.dumps({"context": {"run_id": f"wf-{name}", "recipe": name, **CTX, **context}})
    )
    return str(f)


A = table("a", {1: 100.0, 4: 300.0})
B = table("b", {1: 120.0, 4: 390.0})  # +20 / +30 %: what a user acts on


@pytest.mark.parametrize(
    "dim,context,words",
    [
        ("workload", {"workload": {"isl": 4096, "osl": 64}}, "isl=4096"),
        ("model", {"model": "Qwen/Qwen3-8B"}, "Qwen/Qwen3-8B"),
        ("slo", {"slo": {"ttft_p50_ms": 100}}, "ttft_p50_ms=100"),
        ("source", {"source": "simulated (built-in timing)"}, "simulated (built-in timing)"),
    ],
)
def test_compare_refuses_runs_that_measured_something_else(tmp_path, capsys, dim, context, words):
    a, b = folder(tmp_path, "a", A), folder(tmp_path, "b", B, **context)
    assert cli_main(["compare", a, b]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert f"different {dim}" in err or (dim == "source" and "different sources" in err)
    assert words in err and f"--allow-different {dim}" in err
    # allowed: compared, and the output says what differs above the numbers
    assert cli_main(["compare", a, b, "--allow-different", dim]) == 0
    out = capsys.readouterr().out
    assert out.startswith("note: different") and f"allowed by --allow-different {dim}" in out and words in out
    assert "+20.0%" in out


def test_compare_refuses_another_concurrency_sweep(tmp_path, capsys):
    a, b = folder(tmp_path, "a", A), folder(tmp_path, "b", table("b", {1: 120.0, 8: 500.0}))
    assert cli_main(["compare", a, b]) == 2
    err = capsys.readouterr().err
    assert "different workload" in err and "concurrency 1,4" in err and "concurrency 1,8" in err


def test_a_run_that_records_nothing_is_let_through_and_named(tmp_path):
    old = Run("wf-old", B, {}, "test")  # a table from before the context existed
    notes = check_comparable({"a": Run("wf-a", A, dict(CTX), "test"), "old": old})
    assert "not checked: old records no model" in notes and "not checked: old records no slo" in notes
    assert "not checked: old records no workload shape (ISL/OSL, prefix, dataset)" in notes


def test_regress_refuses_another_workload_but_judges_a_lost_point(tmp_path, capsys):
    base = folder(tmp_path, "base", A)
    other = folder(tmp_path, "other", table("a", {1: 100.0, 4: 300.0}), workload={"isl": 4096, "osl": 64})
    assert cli_main(["regress", other, "--baseline", base]) == 2
    assert "different workload" in capsys.readouterr().err
    # a point the current run lost altogether is a regression, not another workload
    lost = folder(tmp_path, "lost", table("a", {1: 100.0}))
    assert cli_main(["regress", lost, "--baseline", base]) == 1
    assert "concurrency 4: measured in the baseline, not now" in capsys.readouterr().out


def test_the_nightly_check_fails_against_a_baseline_of_another_workload(tmp_path, monkeypatch):
    base = Path(folder(tmp_path, "base", A, workload={"isl": 1024, "osl": 64}))
    cur = Path(folder(tmp_path, "cur", A))

    def download(bucket, prefix, dest):
        shutil.copytree(base, dest, dirs_exist_ok=True)
        return 2

    monkeypatch.setattr(baseline_mod, "download_prefix", download)
    report = tmp_path / "report.txt"
    assert baseline_mod.check_against_baseline(cur, "results", "baselines/a", None, report) == "incomparable"
    text = report.read_text()
    assert "different workload" in text and "isl=1024" in text and "promote a run" in text
    from steps import regression_check

    monkeypatch.setattr(regression_check, "check_against_baseline", baseline_mod.check_against_baseline)
    assert (
        regression_check.main(
            ["--run-dir", str(cur), "--bucket", "results", "--baseline-prefix", "baselines/a", "--report", str(report)]
        )
        == 1
    )


def test_experiment_report_refuses_a_measured_treatment_beside_a_simulated_one(tmp_path, capsys):
    e = load_experiment("nemotron-rr-vs-kv")
    refs = [
        f"{n}="
        + folder(
            tmp_path,
            n,
            table(n, {1: 100.0, 8: 500.0}),
            recipe_hash=recipe_hash(e.treatment(n).recipe),
            **({"source": "simulated (built-in timing)"} if n == "kv" else {}),
        )
        for n in ("rr", "kv")
    ]
    assert cli_main(["experiment", "report", "nemotron-rr-vs-kv", *refs]) == 2
    err = capsys.readouterr().err
    assert "experiment report nemotron-rr-vs-kv" in err and "different sources" in err
    assert cli_main(["experiment", "report", "nemotron-rr-vs-kv", *refs, "--allow-different", "source"]) == 0
    assert "note: different sources" in capsys.readouterr().out


def test_an_unknown_dimension_is_one_clear_error():
    with pytest.raises(NotComparable, match="colour: not a dimension; choose from workload, model, slo, source"):
        check_comparable({}, {"colour"})


# ---------------------------------------------------------------- repetitions where a verdict is drawn


def test_the_nightly_runs_each_point_three_times_by_default():
    """On main the CronWorkflow ran each point once, so every nightly verdict was 'noise unknown'."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.cron import nightly_cron

    r = load_recipe("nemotron-3-nano-fp8-vllm-agg-kv")
    assert r.recipe.regression.repetitions == 3
    args = {
        p["name"]: p["value"]
        for p in nightly_cron(r, load_cluster_settings())["spec"]["workflowSpec"]["arguments"]["parameters"]
    }
    points = json.loads(args["points"])
    levels = r.recipe.workload.concurrency
    assert len(points) == 3 * len(levels)
    assert sorted((p["concurrency"], p["repetition"]) for p in points) == sorted(
        (c, k) for c in levels for k in range(3)
    )


def test_repetitions_land_in_folders_of_their_own_and_the_verdict_finds_them(tmp_path):
    from infersweep.aiperf import point_folder
    from infersweep.results.verdict import verdict

    assert point_folder("p/c4", 0, 0) == Path("p/c4") and point_folder("p/c4", 0, 2) == Path("p/c4-r2")
    assert point_folder("p/c4", 1.5, 1) == Path("p/c4-rate1.5-r1")
    for rep in range(3):
        d = point_folder(str(tmp_path / "points" / "c4"), 0, rep)
        d.mkdir(parents=True)
        (d / "result.json").write_text(json.dumps({"status": "ok", "concurrency": 4, "repetition": rep}))
    ok, message = verdict(tmp_path, [{"concurrency": 4, "repetition": k} for k in range(3)])
    assert ok and message == "all 3 points measured"


def test_a_verdict_from_one_repetition_says_why_its_noise_is_unknown():
    from infersweep.results.regression import judge_run

    v = judge_run(table("a", {1: 100.0, 4: 200.0}), A, {"output_throughput_tok_s": 0.05})
    # inconclusive, was regressed (issue 43): one repetition per point decides nothing, however large the change
    assert v.verdict == "inconclusive"
    assert "noise unknown for 10 of 10 checks: their points ran once (n=1), so nothing is decided" in v.report
    assert "regression.repetitions to at least 3" in v.report
    assert "one repetition per point (n=1/1), so nothing is decided here; run at least 3 repetitions" in v.report


def test_compare_shows_n_and_a_confidence_interval_and_calls_a_change_inside_it_noise():
    from infersweep.results.compare import compare_runs

    base = table("a", {1: 100.0, 4: 300.0}, reps=3)
    other = table("b", {1: 101.5, 4: 390.0}, reps=3)
    # run-to-run spread: +-4 % around each median
    for t in (base, other):
        t["output_throughput_tok_s"] = t["output_throughput_tok_s"] * t["repetition"].map({0: 0.96, 1: 1.0, 2: 1.04})
    cmp = compare_runs({"a": base, "b": other}, [("output_throughput_tok_s", "output tok/s")])
    ch = cmp.changes.set_index("concurrency")
    assert (ch.at[1, "n_baseline"], ch.at[1, "n"]) == (3, 3) and ch.at[1, "ci95_pct"] > 1.5
    assert ch.at[1, "better"] is None  # +1.5 % inside its interval: not a win
    assert bool(ch.at[4, "better"]) is True  # +30 %: beyond it
    text = cmp.text()
    assert "n = repetitions a/b" in text and " 3/3 " in text and "+30.0% ±" in text
    assert "within noise at c1" in text and "b better at c4" in text


def test_compare_of_single_runs_says_the_noise_is_unknown():
    from infersweep.results.compare import compare_runs

    text = compare_runs({"a": A, "b": B}).text()
    # issue 43: the line says nothing is decided (it said "noise unknown" and still starred the changes)
    assert " 1/1 " in text and "nothing decided at c1, c4: one repetition per point (n = 1/1)" in text
    table_rows = text.split("judged:")[0].splitlines()[1:]
    assert "Run at least 3 repetitions per point" in text and not any("*" in r or "!" in r for r in table_rows)


def test_two_runs_of_one_recipe_and_run_id_are_both_compared(tmp_path, capsys):
    """An experiment's balanced second pass (rr, kv, kv, rr) has the first's recipe and run id; on main the
    second silently replaced the first in `compare`."""
    a = folder(tmp_path, "a", A, run_id="wf-x", recipe="r")
    b = folder(tmp_path, "b", B, run_id="wf-x", recipe="r")
    assert cli_main(["compare", a, b]) == 0
    assert "r@wf-x#2 vs r@wf-x" in capsys.readouterr().out
