"""`predict` gives a closed-loop TTFT band (infersweep.predict.queueing; issue 32 item 6): from AIConfigurator's
static estimate up to the lockstep prefill queue t_prefill x (c' + 1) / 2, checked here against the H200 points
infersweep measured (benchmarks/measured/h200-*, committed), with no AIConfigurator run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from infersweep.predict import curve
from infersweep.predict.queueing import closed_loop_band, lockstep_ttft_ms
from infersweep.predict.target import Target, Worker
from infersweep.results.legacy import upgrade_table

MEASURED = Path(__file__).resolve().parents[2] / "benchmarks" / "measured"
H200 = "qwen3-32b-bf16-vllm-h200-tp1"
# AIConfigurator 0.12.0's estimates for that recipe (its h200_sxm vLLM database), as docs/predictions.md's
# accuracy table records them: the c1 TTFT is one 1,024-token prefill of Qwen3-32B bf16 on one H200.
STATIC_TTFT_MS = {1: 144.4, 2: 176.4, 4: 196.3, 8: 216.5, 16: 238.0, 32: 261.4, 64: 288.7, 128: 323.4}


def _measured() -> pd.DataFrame:
    frames = [
        upgrade_table(pd.read_parquet(f), str(f)) for f in sorted(MEASURED.glob("h200-*/*/summary/results.parquet"))
    ]
    df = pd.concat(frames)
    return df[(df["recipe"] == H200) & (df["valid"] == True)].set_index("concurrency")  # noqa: E712


def test_the_lockstep_queue_is_half_a_round_of_prefills_per_replica():
    assert lockstep_ttft_ms(100, 1) == 100  # alone: one prefill
    assert lockstep_ttft_ms(100, 16) == 850  # the k-th of 16 waits k prefills: mean 8.5
    assert lockstep_ttft_ms(100, 16, replicas=4) == 250  # 4 users per replica
    with pytest.raises(ValueError):
        lockstep_ttft_ms(0, 4)


def test_the_static_estimate_misses_the_closed_loop_and_the_band_holds_it_where_rounds_lock():
    df = _measured()
    assert {2, 4, 8, 16, 32, 64, 128} <= set(df.index)
    for c in (4, 8, 16, 32, 64):
        measured = float(df.loc[c, "ttft_avg_ms"])
        band = closed_loop_band(STATIC_TTFT_MS[c], STATIC_TTFT_MS[1], c)
        assert measured > 1.8 * STATIC_TTFT_MS[c], c  # the static estimate alone is 2-14x low here
        # the lockstep end lands within 25 % (measured TTFT is first *visible* text: a few decode steps high)
        assert measured == pytest.approx(band.high_ms, rel=0.25), c
    # c128: rounds desynchronise, the queue is shorter than lockstep; the measured TTFT lies inside the band
    band = closed_loop_band(STATIC_TTFT_MS[128], STATIC_TTFT_MS[1], 128)
    assert band.contains(float(df.loc[128, "ttft_avg_ms"])) and float(df.loc[128, "ttft_avg_ms"]) < 0.7 * band.high_ms


def _target(mode: str) -> Target:
    workers = (
        {"worker": Worker(replicas=2, tp_size=1)}
        if mode == "agg"
        else {"prefill": Worker(replicas=4, tp_size=1), "decode": Worker(replicas=1, tp_size=1)}
    )
    return Target("Qwen/Qwen3-32B", "h200_sxm", "vllm", "0.12.0", mode, "bf16", 1024, 256, 0, workers)


@pytest.mark.parametrize("mode, per_replica", [("agg", 8), ("disagg", 4)])
def test_predict_puts_the_lockstep_queue_beside_each_static_estimate(monkeypatch, mode, per_replica):
    """The queue forms on each replica (agg) or prefill worker (disagg), from the batch-1 prefill estimate."""
    from infersweep.recipe import load_recipe

    seen = []

    def estimate(points, cache_only=False):
        seen.extend(points)
        # a prefill of 120 ms alone, a little slower in a bigger batch; decode 20 ms
        return [
            {"ok": True, "ttft_ms": 120.0 + p["batch_size"] - 1, "itl_ms": 20.0, "tok_s_user": 50.0} for p in points
        ], {}

    monkeypatch.setattr(curve, "map_recipe", lambda r, cache_only=False: _target(mode))
    monkeypatch.setattr(curve.aic, "estimate_points", estimate)
    pred = curve.predict_recipe(load_recipe(H200), [16])
    (pt,) = pred.points
    assert any(p["batch_size"] == 1 for p in seen), "the single-request prefill is estimated even without c1"
    assert pt.ttft_lockstep_ms == pytest.approx(120.0 * (per_replica + 1) / 2)
    assert pt.ttft_band().low_ms == pt.ttft_ms and pt.ttft_band().high_ms == pt.ttft_lockstep_ms
    assert "ttft_lockstep_ms" in pred.to_dict()["points"][0]
