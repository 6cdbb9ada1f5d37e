"""Where a window's start transient ends (infersweep.aiperf.steadiness.start_transient_cycles, MSER): the cut
benchmarks/kv_vs_rr_steady_window.py reads the steady part of the H200 KV-vs-RR windows after."""

from __future__ import annotations

import random
from pathlib import Path

from infersweep.aiperf.steadiness import read_requests, start_transient_cycles, whole_cycles

KV_STUDY = Path(__file__).resolve().parents[2] / "benchmarks" / "measured" / "h200-2026-12-04" / "gpu-kv-vs-rr"


def _after_cut(series: list[float]) -> float:
    cut = start_transient_cycles(series)
    return sum(series[cut:]) / len(series[cut:])


def test_a_steady_series_reads_its_own_mean_after_the_cut():
    # MSER may drop a noisy cycle or two of a steady series (it trades data for precision), never bias it
    rng = random.Random(1)
    for _ in range(200):
        series = [250 * rng.uniform(0.9, 1.1) for _ in range(12)]
        assert abs(_after_cut(series) / (sum(series) / 12) - 1) < 0.05, series


def test_a_burst_that_echoes_for_three_cycles_is_cut_away_whole():
    rng = random.Random(2)
    for _ in range(200):
        series = [1000, 600, 420] + [250 * rng.uniform(0.9, 1.1) for _ in range(9)]
        assert start_transient_cycles(series) >= 3, series
        assert abs(_after_cut(series) / 250 - 1) < 0.06, series


def test_the_cut_never_takes_more_than_half_the_window():
    # a series still falling at its end (a ramp, not a transient) is not cut down to a few cycles
    assert start_transient_cycles([1000 - 50 * i for i in range(12)]) < 6


def test_every_h200_kv_study_window_opens_on_a_transient_of_two_to_four_cycles():
    # the committed records of 2026-12-04: every profiling window opens on the burst AIPerf's drained warm-up
    # leaves (aiperf/timing/phase/runner.py:698-704), first cycle 1.3-4x the rest
    runs = sorted(KV_STUDY.glob("treatments/*/points/c16/aiperf/profile_export.jsonl"))
    assert len(runs) == 12
    for rec in runs:
        groups = whole_cycles(read_requests(rec), 16)
        means = [sum(g[2] for g in cyc) / len(cyc) for cyc in groups]
        assert len(groups) == 12 and 2 <= start_transient_cycles(means[:-1]) <= 4, (rec.parts[-5], means)
        assert means[0] > 1.3 * sum(means[4:-1]) / len(means[4:-1]), (rec.parts[-5], means)
