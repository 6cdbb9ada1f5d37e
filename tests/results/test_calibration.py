"""The error rates `compare` and `regress` promise, measured on synthetic repetitions of known noise
(infersweep.results.calibration; issue 43). Fixed seeds, a few seconds: the per-point test and Holm run on
the repetitions directly (what compare_runs calls per cell), and a few trials go through compare_runs to
show it calls the same. benchmarks/calibration.py prints the full table (old method against new)."""

from __future__ import annotations

import numpy as np
import pytest

from infersweep.results.calibration import FOUR_POINTS, METRIC_NAMES, binomial_upper, cell_rates, run_table
from infersweep.results.compare import compare_runs
from infersweep.results.noise import holm, point_test

TRIALS = 200
UPPER = binomial_upper(0.05, TRIALS)  # 8.0 %: the top of the 95 % band of a true 5 % rate over 200 trials


@pytest.mark.parametrize("n", [3, 5])
def test_a_a_false_claims_stay_at_5_percent_and_the_interval_covers(n):
    aa = cell_rates(TRIALS, n, seed=10 + n)
    assert aa["called"]["ttft_avg_ms"] <= UPPER and aa["called"]["ttft_p99_ms"] <= UPPER, aa["called"]
    assert max(aa["called"].values()) <= UPPER, aa["called"]
    assert aa["family"] <= UPPER, aa["family"]  # all 11 metrics judged at once: Holm holds the family at 5 %
    ab = cell_rates(TRIALS, n, ttft_shift=0.10, seed=20 + n)
    assert ab["coverage"] >= 0.93, ab["coverage"]
    print(f"n={n}: A/A TTFT mean {aa['called']['ttft_avg_ms']:.1%}, detection of +10 % TTFT {ab['detected']:.0%}")
    if n == 5:  # reported in docs/statistics.md (67 % measured); a floor so a loss of power fails here
        assert ab["detected"] >= 0.5, ab["detected"]


def test_each_point_keeps_its_rate_whatever_its_request_count():
    # c4 (58 requests) is noisier than c32 (460): with the noise pooled over the sweep c4 was called at 9-14 %
    aa = cell_rates(TRIALS, 3, points=FOUR_POINTS, seed=30)
    for c in FOUR_POINTS:
        for m in ("ttft_avg_ms", "ttft_p99_ms"):
            assert aa["alone_at"][(m, c)] <= UPPER, (m, c, aa["alone_at"][(m, c)])
    assert aa["family"] <= UPPER


def test_compare_runs_calls_what_the_per_point_test_calls():
    rng = np.random.default_rng(40)
    for _ in range(8):
        a, b = run_table(rng, "a", 3, FOUR_POINTS), run_table(rng, "b", 3, FOUR_POINTS, ttft_shift=0.10)
        ch = compare_runs({"a": a, "b": b}, decide=["ttft_avg_ms"]).changes
        tt = ch[ch["metric"] == "ttft_avg_ms"].sort_values("concurrency")
        tests = [
            point_test(a[a["concurrency"] == c]["ttft_avg_ms"], b[b["concurrency"] == c]["ttft_avg_ms"])
            for c in FOUR_POINTS
        ]
        assert list(tt["p_value"]) == pytest.approx([t.p for t in tests])
        assert list(tt["better"].map(lambda v: v is False)) == holm([t.p for t in tests])  # B's TTFT worse
        assert (ch[ch["metric"] != "ttft_avg_ms"]["verdict"] == "described").all()
    assert set(METRIC_NAMES) <= set(ch["metric"])


def test_one_repetition_names_no_winner():
    rng = np.random.default_rng(50)
    for _ in range(10):
        a, b = run_table(rng, "a", 1), run_table(rng, "b", 1)
        cmp = compare_runs({"a": a, "b": b}, decide=["ttft_avg_ms"])
        assert cmp.changes["better"].isna().all() and cmp.crossovers.empty
        assert cmp.best_choice.winner is None and "one repetition per point" in cmp.best_choice.line
