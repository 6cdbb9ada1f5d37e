"""Summarized rows carry their prediction and the physics check (infersweep.predict.beside via steps/summarize).

The run folder is made of real AIPerf 0.13.0 artifacts (tests/fixtures): its c4 point came from a Dynamo
mocker (0.86 ms mean ITL), so attributed to Qwen3-32B FP8 on 2 H100 it is faster than reading 32.8 GB of
weights at 2 x 3.35 TB/s allows (>= 4.90 ms) and must be flagged; its c8 point (5.8 ms) is not.
Only the last test runs the real AIConfigurator (.venv-aic, 2 estimates, ~25 s, cached per test).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from infersweep.cli import main as cli_main
from infersweep.predict import aic
from tests.support.run_folders import make_run_folder, summarize

pytestmark = pytest.mark.slow  # AIConfigurator in its own environment, a subprocess per call: outside the inner loop

needs_aic = pytest.mark.skipif(
    not Path(aic.aic_python()).exists(), reason="no .venv-aic (AIConfigurator): run scripts/setup.sh"
)
RECIPE = "qwen3-32b-fp8-vllm-agg"  # 8 x TP=2 on H100, FP8


@pytest.fixture(autouse=True)
def _empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERSWEEP_PREDICT_CACHE", str(tmp_path / "aic-cache"))


def _context(run: Path) -> dict:
    return json.loads((run / "summary" / "run.json").read_text())["context"]


def test_an_itl_below_the_hardware_floor_is_flagged_and_a_missing_prediction_says_why(
    tmp_path, aiperf_ref, monkeypatch
):
    monkeypatch.setenv("INFERSWEEP_AIC_PYTHON", "/nonexistent/python")  # no AIConfigurator: must not block
    run = make_run_folder(tmp_path, aiperf_ref)
    df = summarize(run, extra=["--context", json.dumps({"recipe": RECIPE, "source": "measured"})])
    c4, c8, c16 = (df[df["concurrency"] == c].iloc[0] for c in (4, 8, 16))
    assert c4["implausible"] == True  # noqa: E712 (pandas boolean)
    assert "0.86 ms < floor" in c4["implausible_reason"] and "2 H100" in c4["implausible_reason"]
    assert c4["itl_floor_ms"] == pytest.approx(32.8e9 / (2 * 3.35e12) * 1000, rel=1e-3)
    assert c8["implausible"] == False and c8["implausible_reason"] == ""  # noqa: E712
    assert pd.isna(c16["implausible"]) and "no measured ITL" in c16["implausible_reason"]  # a failed point
    # No cached estimate and no environment: the columns stay empty, the run context says why and how.
    assert df["predicted_itl_avg_ms"].isna().all()
    note = _context(run)["prediction"]
    assert "no cached prediction" in note and "no AIConfigurator environment" in note and f"predict {RECIPE}" in note
    assert (df["prediction"] == note).all()
    # The parquet keeps the flag a boolean a reader can filter on.
    back = pd.read_parquet(run / "summary" / "results.parquet")
    assert list(back.loc[back["implausible"].fillna(False), "concurrency"]) == [4]
    html = (run / "summary" / "report.html").read_text()
    assert "Physically implausible points" in html and "No prediction beside these points" in html


def test_simulated_runs_and_unknown_recipes_are_not_judged(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref, failed=False)
    df = summarize(run, extra=["--context", json.dumps({"recipe": RECIPE, "source": "simulated (built-in timing)"})])
    assert df["implausible"].isna().all() and "simulated run" in df.iloc[0]["implausible_reason"]
    assert "simulated run" in _context(run)["prediction"] and df["predicted_ttft_avg_ms"].isna().all()

    run = make_run_folder(tmp_path / "b", aiperf_ref, failed=False)
    summarize(run, extra=["--context", json.dumps({"recipe": "demo-prefix-kv-gone", "source": "measured"})])
    assert "not in this checkout's params/" in _context(run)["prediction"]

    run = make_run_folder(tmp_path / "c", aiperf_ref, failed=False)  # the recipe changed since the run
    df = summarize(
        run, extra=["--context", json.dumps({"recipe": RECIPE, "recipe_hash": "0" * 64, "source": "measured"})]
    )
    assert "has changed since the run" in _context(run)["prediction"] and df["implausible"].isna().all()


@needs_aic
def test_measured_rows_carry_the_cached_prediction_and_the_report_sets_them_side_by_side(tmp_path, aiperf_ref, capsys):
    assert cli_main(["predict", RECIPE, "-c", "4", "8", "16", "--json"]) == 0  # fills the cache, as a user would
    predicted = {p["concurrency"]: p for p in json.loads(capsys.readouterr().out)["points"]}
    run = make_run_folder(tmp_path, aiperf_ref)
    df = summarize(run, extra=["--context", json.dumps({"recipe": RECIPE, "source": "measured"})])
    for _, row in df.iterrows():
        p = predicted[int(row["concurrency"])]
        assert (
            row["predicted_ttft_avg_ms"],
            row["predicted_itl_avg_ms"],
            row["predicted_output_throughput_tok_s"],
        ) == (p["ttft_ms"], p["itl_ms"], p["output_tok_s"])
    assert _context(run)["prediction"] == "AIConfigurator 0.12.0 h100_sxm vllm 0.24.0, cached estimates"
    html = (run / "summary" / "report.html").read_text()
    section = html[html.index("<h2>Measured vs predicted") : html.index("<h2>Pareto")]
    c8 = df[df["concurrency"] == 8].iloc[0]
    assert f"{c8['itl_avg_ms'] / c8['predicted_itl_avg_ms']:.2f}" in section  # the ratio measured / predicted
    assert "IMPLAUSIBLE" in section and "plausible" in section


def test_an_experiment_treatments_run_is_summarized_with_its_treatments_recipe(tmp_path, aiperf_ref, monkeypatch):
    """The context the experiment workflow hands its summarize task (workflows/experiment.py) is accepted, and
    the treatment's recipe (not in the catalog: an experiment builds it) is found for the physics check."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from infersweep.predict.source import SIMULATED_DEPLOYMENTS_ENV
    from workflows.experiment import experiment_template

    monkeypatch.delenv(SIMULATED_DEPLOYMENTS_ENV, raising=False)  # a cluster run: measured
    doc = experiment_template(make_plan(load_experiment("qwen3-32b-tp1-vs-tp2")), load_cluster_settings()).to_dict()
    contexts = [
        p["value"]
        for tpl in doc["spec"]["templates"]
        for t in (tpl.get("dag") or {}).get("tasks", [])
        if t["name"].endswith("-summarize")
        for p in t["arguments"]["parameters"]
        if p["name"] == "context"
    ]
    context = next(c for c in contexts if json.loads(c)["treatment"] == "tp1")
    run = make_run_folder(tmp_path, aiperf_ref, failed=False)
    df = summarize(run, extra=["--context", context])
    ctx = _context(run)
    assert (ctx["experiment"], ctx["treatment"]) == ("qwen3-32b-tp1-vs-tp2", "tp1")
    # TP=1: one H100 reads all 32.8 GB per step, >= 9.79 ms; both mocker points are far below
    assert df["implausible"].all() and "on 1 H100" in df.iloc[0]["implausible_reason"]
    assert "no cached prediction for qwen3-32b-tp1-vs-tp2-tp1" in ctx["prediction"]


def test_an_implausible_row_is_invalid_where_the_table_has_the_validity_verdict(monkeypatch):
    """Results schema v2 (infersweep.results.validity) carries `valid` + `validity_reasons`: the physics
    reason joins them, so compare and regress leave the impossible point out."""
    from infersweep.predict.beside import annotate

    monkeypatch.setenv("INFERSWEEP_AIC_PYTHON", "/nonexistent/python")
    df = pd.DataFrame(
        {
            "concurrency": [4, 8],
            "repetition": [0, 0],
            "status": ["ok", "ok"],
            "itl_avg_ms": [0.86, 5.8],
            "valid": pd.array([True, True], dtype="boolean"),
            "validity_reasons": ["", ""],
        }
    )
    out, _ = annotate(df, {"recipe": RECIPE, "source": "measured"})
    assert list(out["valid"]) == [False, True]
    assert "implausible: ITL 0.86 ms < floor" in out.loc[0, "validity_reasons"] and out.loc[1, "validity_reasons"] == ""
