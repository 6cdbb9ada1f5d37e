"""`infersweep predict EXPERIMENT`: every treatment's predicted curve and the treatments ranked by the
experiment's question before any GPU is spent (infersweep.predict.rank).

The ranking, tie and claim rules run on hand-made predictions (no AIConfigurator); one test runs the real
AIConfigurator 0.12.0 (.venv-aic) on the TP=1 vs TP=2 study at two concurrencies (~6 estimates, ~30 s on
this 2-core machine, cached per session) and one on the Nemotron study (support matrix only, ~1 s).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infersweep.cli import main
from infersweep.experiment.spec import Comparison
from infersweep.metrics import direction
from infersweep.predict import aic
from infersweep.predict.curve import PredictedPoint, Prediction
from infersweep.predict.rank import (
    PREDICTED_METRICS,
    ExperimentPrediction,
    _check_claim,
    _rank,
    metric_value,
    not_predicted_reason,
)
from infersweep.predict.target import Target, Worker

pytestmark = pytest.mark.slow  # AIConfigurator in its own environment, a subprocess per call: outside the inner loop

needs_aic = pytest.mark.skipif(
    not Path(aic.aic_python()).exists(), reason="no .venv-aic (AIConfigurator): run scripts/setup.sh"
)


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    # one cache for the whole module (the real estimates are computed once)
    monkeypatch.setenv("INFERSWEEP_PREDICT_CACHE", str(tmp_path_factory.getbasetemp() / "aic-cache-experiment"))


def _target(osl=100, isl=1000) -> Target:
    return Target(
        "Qwen/Qwen3-32B-FP8", "h100_sxm", "vllm", "0.24.0", "agg", "fp8", isl, osl, 0, {"worker": Worker(1, 2)}
    )


def _pred(name, ttft, itl, tok_s) -> Prediction:
    pts = [PredictedPoint(8, ttft, itl, tok_s, 1000 / itl, tok_s / 2)]
    return Prediction(name, _target(), None, pts, {})


def test_an_unknown_name_points_at_both_catalogs(capsys):
    assert main(["predict", "no-such-study"]) == 2
    err = capsys.readouterr().err
    assert "infersweep recipes" in err and "infersweep experiment list" in err


def test_the_predicted_metrics_better_directions_are_the_results_schemas():
    for metric, way in PREDICTED_METRICS.items():
        assert direction(metric) == way, metric


def test_metrics_without_an_estimate_say_why():
    assert "no distribution" in not_predicted_reason("ttft_p99_ms")
    assert "not modelled" in not_predicted_reason("error_ratio")
    assert not_predicted_reason("itl_avg_ms") is None


def test_ranking_follows_each_metrics_direction_and_ties_within_one_percent():
    r = _rank("itl_avg_ms", 8, {"a": 20.0, "b": 10.0, "c": 10.05})
    assert r.groups == [["b", "c"], ["a"]] and r.text() == "b = c > a"  # lower ITL is better; 0.5 % is a tie
    r = _rank("output_throughput_tok_s", 8, {"a": 200.0, "b": 100.0})
    assert r.groups == [["a"], ["b"]]  # higher throughput is better


def test_goodput_is_the_request_rate_only_where_the_point_meets_the_slos():
    p = PredictedPoint(8, 500.0, 20.0, 400.0, 50.0, 200.0)
    t = _target(osl=100)
    assert metric_value("request_throughput_req_s", p, t, {}) == pytest.approx(4.0)
    assert metric_value("goodput_req_s", p, t, {"ttft_p50_ms": 1000}) == pytest.approx(4.0)
    assert metric_value("goodput_req_s", p, t, {"itl_p50_ms": 10}) == 0.0
    assert metric_value("request_latency_avg_ms", p, t, {}) == pytest.approx(500 + 20 * 99)


def test_claims_are_judged_on_the_predictions_with_ties_and_unmodelled_treatments_named():
    preds = {
        "fast": _pred("fast", 100.0, 10.0, 800.0),
        "slow": _pred("slow", 100.0, 20.0, 400.0),
        "twin": _pred("twin", 100.0, 20.0, 400.0),
        "gone": Prediction("gone", None, "NVFP4 on H100: ...", [], {}),
    }
    ep = ExperimentPrediction("x", preds, ["itl_avg_ms"], [8], {})
    holds = _check_claim(
        ep, "claim", Comparison(metric="itl_avg_ms", concurrency=8, treatment="fast", baseline="slow", better_by_pct=40)
    )
    assert holds.verdict == "holds" and "50.0 % better" in holds.detail
    short = _check_claim(
        ep, "seed", Comparison(metric="itl_avg_ms", concurrency=8, treatment="fast", baseline="slow", better_by_pct=60)
    )
    assert short.verdict == "does not hold" and "needs 60 %" in short.detail and short.text.startswith("seed:")
    worse = _check_claim(
        ep, "claim", Comparison(metric="output_throughput_tok_s", concurrency=8, treatment="slow", baseline="fast")
    )
    assert worse.verdict == "does not hold" and "50.0 % worse" in worse.detail
    tie = _check_claim(ep, "claim", Comparison(metric="itl_avg_ms", concurrency=8, treatment="twin", baseline="slow"))
    assert tie.verdict == "tie"
    gone = _check_claim(ep, "claim", Comparison(metric="itl_avg_ms", concurrency=8, treatment="gone", baseline="slow"))
    assert gone.verdict == "not predicted" and "NVFP4" in gone.detail
    tail = _check_claim(ep, "claim", Comparison(metric="ttft_p99_ms", concurrency=8, treatment="fast", baseline="slow"))
    assert tail.verdict == "not predicted" and "no distribution" in tail.detail


@needs_aic
def test_predict_experiment_ranks_tp1_against_tp2(capsys):
    rc = main(["predict", "qwen3-32b-tp1-vs-tp2", "-c", "1", "16", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert set(data["treatments"]) == {"tp1", "tp2"} and data["unsupported"] == {}
    tp1 = {p["concurrency"]: p for p in data["treatments"]["tp1"]["points"]}
    tp2 = {p["concurrency"]: p for p in data["treatments"]["tp2"]["points"]}
    # TP=2 decodes each token across two GPUs' bandwidth: a faster ITL at c1 (the seed's direction too)
    assert tp2[1]["itl_ms"] < tp1[1]["itl_ms"]
    itl_c1 = next(r for r in data["rankings"] if r["metric"] == "itl_avg_ms" and r["concurrency"] == 1)
    assert itl_c1["order"] == [["tp2"], ["tp1"]]
    assert "output_throughput_tok_s" in {r["metric"] for r in data["rankings"]}
    # The claim is at c128, not asked for here: said, not guessed
    claim = next(c for c in data["claims"] if c["claim"].startswith("claim:"))
    assert claim["verdict"] == "not predicted" and "c128" in claim["detail"]

    rc = main(["predict", "qwen3-32b-tp1-vs-tp2", "-c", "1", "16"])  # the text form, from the cache
    out = capsys.readouterr().out
    assert rc == 0 and "ranked by the question" in out and "tp2 > tp1" in out and "nothing was run" in out


@needs_aic
def test_predict_experiment_lists_treatments_the_database_cannot_model(capsys):
    rc = main(["predict", "nemotron-rr-vs-kv"])
    out = capsys.readouterr().out
    assert rc == 3  # no treatment modelled
    assert "rr: not modelled" in out and "kv: not modelled" in out and "Nemotron-3-Nano-30B-A3B-BF16" in out
    assert "not predicted" in out  # the claim too
    # by file as well as by name; JSON names every unmodelled treatment with its reason
    from infersweep.paths import params_dir

    rc = main(["predict", str(params_dir() / "experiments" / "nemotron-rr-vs-kv.yaml"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 3 and set(data["unsupported"]) == {"rr", "kv"} and data["rankings"] == []
