"""Calibration of `compare`'s error rates on synthetic repetitions of known noise (issue 43,
docs/statistics.md): how often it calls a change where there is none (A/A), how often its 95 % interval
covers a known change, how often it detects one (A/B), and whether it names a winner.

The synthetic points are results-table rows (the shape `compare` reads after `infersweep import`), one per
(concurrency, repetition), computed from simulated requests the way AIPerf summarizes a point (mean, p50,
p99 over the requests of the profiling phase; throughput over its duration):
- a closed loop at concurrency c of `requests[c]` requests, 128 output tokens each;
- per repetition, TTFT scaled by LogNormal(0, 4 %) and ITL by LogNormal(0, 2 %) (the run-to-run noise);
- per request on top, TTFT x LogNormal(0, 30 %) and ITL x LogNormal(0, 10 %) (the request-to-request noise,
  which averages down with more requests: a c4 point of 58 requests is noisier than a c32 point of 460).
Every point is valid and meets the SLOs, so only the statistics decide.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import pandas as pd

OSL = 128
TTFT_MS, ITL_MS = 200.0, 20.0
REP_NOISE = {"ttft": 0.04, "itl": 0.02}
REQ_NOISE = {"ttft": 0.30, "itl": 0.10}
ONE_POINT = {16: 230}  # the "closed loop at c16"
FOUR_POINTS = {4: 58, 8: 115, 16: 230, 32: 460}


METRIC_NAMES = [
    "ttft_avg_ms",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_avg_ms",
    "itl_p50_ms",
    "request_latency_avg_ms",
    "request_latency_p50_ms",
    "output_throughput_tok_s",
    "request_throughput_req_s",
    "output_throughput_p50_tok_s_per_user",
    "goodput_req_s",
]


def simulate_point(rng: np.random.Generator, c: int, requests: int, n: int, ttft_shift: float = 0.0) -> dict:
    """`n` repetitions of one point: {metric: array of n values}, as AIPerf summarizes each repetition."""
    out: dict[str, list[float]] = {m: [] for m in METRIC_NAMES}
    for _ in range(n):
        f_ttft = math.exp(rng.normal(0, REP_NOISE["ttft"])) * (1 + ttft_shift)
        f_itl = math.exp(rng.normal(0, REP_NOISE["itl"]))
        ttft = TTFT_MS * f_ttft * np.exp(rng.normal(0, REQ_NOISE["ttft"], requests))
        itl = ITL_MS * f_itl * np.exp(rng.normal(0, REQ_NOISE["itl"], requests))
        latency = ttft + (OSL - 1) * itl
        duration_s = float(latency.sum()) / c / 1000  # c requests in flight at a time
        per_user = 1000 / itl  # tokens per second of one request's decode
        tok_s = requests * OSL / duration_s
        ttft_p = np.percentile(ttft, [50, 99])
        for m, v in (
            ("ttft_avg_ms", ttft.mean()),
            ("ttft_p50_ms", ttft_p[0]),
            ("ttft_p99_ms", ttft_p[1]),
            ("itl_avg_ms", itl.mean()),
            ("itl_p50_ms", np.percentile(itl, 50)),
            ("request_latency_avg_ms", latency.mean()),
            ("request_latency_p50_ms", np.percentile(latency, 50)),
            ("output_throughput_tok_s", tok_s),
            ("request_throughput_req_s", requests / duration_s),
            ("output_throughput_p50_tok_s_per_user", np.percentile(per_user, 50)),
            ("goodput_req_s", requests / duration_s),
        ):
            out[m].append(float(v))
    return {m: np.array(v) for m, v in out.items()}


def run_table(
    rng: np.random.Generator,
    label: str,
    n: int,
    points: dict[int, int] = ONE_POINT,
    ttft_shift: float = 0.0,
) -> pd.DataFrame:
    """One synthetic run as a results table: `n` repetitions of each point; TTFT x (1 + ttft_shift)."""
    rows = []
    for c, requests in points.items():
        reps = simulate_point(rng, c, requests, n, ttft_shift)
        for rep in range(n):
            row = {
                "run_id": f"wf-{label}",
                "recipe": label,
                "concurrency": c,
                "repetition": rep,
                "request_rate": 0.0,
                "status": "ok",
                "reason": "",
                "valid": True,
                "validity_reasons": "",
                "requests_ok": requests,
                "error_ratio": 0.0,
                "slo_pass": True,
                "slo": '{"ttft_p50_ms": 5000}',
            }
            row.update({m: float(v[rep]) for m, v in reps.items()})
            row["output_throughput_tok_s_per_gpu"] = row["output_throughput_tok_s"]
            rows.append(row)
    return pd.DataFrame(rows)


def cell_rates(
    trials: int,
    n: int,
    points: dict[int, int] = ONE_POINT,
    ttft_shift: float = 0.0,
    seed: int = 0,
    judged: list[str] | None = None,
) -> dict:
    """The per-point test and Holm (infersweep.results.noise, what compare_runs calls per cell) on the
    synthetic repetitions directly, without building tables: fast enough for the test suite.
    Returns {"called": {metric: rate}, "called_at": {(metric, c): rate}, "alone_at": {(metric, c): rate of
    p < 5 % at that point alone}, "family": rate of any verdict
    among `judged` x points (Holm), "coverage": TTFT mean, "detected": TTFT mean, right sign, every point}."""
    from infersweep.results.noise import ALPHA, holm, point_test

    judged = judged or METRIC_NAMES
    rng = np.random.default_rng(seed)
    called = dict.fromkeys(METRIC_NAMES, 0)
    called_at = {(m, c): 0 for m in METRIC_NAMES for c in points}
    alone_at = {(m, c): 0 for m in METRIC_NAMES for c in points}
    family = covered = cells = detected = 0
    for _ in range(trials):
        a = {c: simulate_point(rng, c, r, n) for c, r in points.items()}
        b = {c: simulate_point(rng, c, r, n, ttft_shift) for c, r in points.items()}
        tests = {(m, c): point_test(a[c][m], b[c][m]) for m in METRIC_NAMES for c in points}
        keys = [k for k in tests if k[0] in judged]
        rejected = holm([tests[k].p for k in keys], ALPHA)
        family += any(rejected)
        for m in METRIC_NAMES:  # each metric judged alone over the sweep (one question): its own family
            own = holm([tests[(m, c)].p for c in points], ALPHA)
            called[m] += any(own)
            for c, rej in zip(points, own, strict=True):
                called_at[(m, c)] += rej
                alone_at[(m, c)] += tests[(m, c)].p < ALPHA  # the point judged alone, no correction
        ttft = [tests[("ttft_avg_ms", c)] for c in points]
        for t in ttft:
            cells += 1
            covered += bool(t.known and abs(t.change - ttft_shift) <= t.half_width)
        own = holm([t.p for t in ttft], ALPHA)
        detected += all(rej and t.change > 0 for rej, t in zip(own, ttft, strict=True))
    return {
        "called": {m: k / trials for m, k in called.items()},
        "called_at": {k: v / trials for k, v in called_at.items()},
        "alone_at": {k: v / trials for k, v in alone_at.items()},
        "family": family / trials,
        "coverage": covered / cells,
        "detected": detected / trials,
    }


@dataclass
class Rates:
    """What fraction of `trials` comparisons did what (each a rate in [0, 1])."""

    trials: int
    called: dict[str, float]  # per metric: a verdict (either direction) at any point
    called_at: dict[int, float]  # TTFT mean: a verdict, per point
    any_metric: float  # at least one judged metric called, over the sweep
    coverage: float  # TTFT mean: the 95 % interval covers the true change (every point counted)
    detected: float  # TTFT mean: a verdict with the right sign (B worse), at every point
    winner: float  # "best under the SLOs" named a run


def measure(
    compare: Callable[..., Any],
    trials: int,
    n: int,
    points: dict[int, int] = ONE_POINT,
    ttft_shift: float = 0.0,
    seed: int = 0,
    metrics: list[tuple[str, str]] | None = None,
    ttft_metric: str = "ttft_avg_ms",
) -> Rates:
    """Run `trials` comparisons of two synthetic runs (B's TTFT x (1 + ttft_shift)) through `compare`
    (compare_runs or an older one with the same output columns) and count what it called."""
    rng = np.random.default_rng(seed)
    called: dict[str, int] = {}
    called_at = dict.fromkeys(points, 0)
    any_metric = covered = cells = detected = winner = 0
    true_pct = 100 * ttft_shift
    for _ in range(trials):
        a, b = run_table(rng, "a", n, points), run_table(rng, "b", n, points, ttft_shift)
        cmp = compare({"a": a, "b": b}, metrics)
        ch = cmp.changes
        verdict = ch["better"].notna()
        if "judged" in ch.columns:  # described metrics carry no verdict (the new method)
            verdict &= ch["judged"].astype(bool)
        any_metric += bool(verdict.any())
        for m in set(ch["metric"]):
            called[m] = called.get(m, 0) + bool(verdict[ch["metric"] == m].any())
        tt = ch[ch["metric"] == ttft_metric]
        for _, r in tt.iterrows():
            called_at[int(r["concurrency"])] += bool(pd.notna(r["better"]) and r.get("judged", True))
            ci = r["ci95_pct"]
            cells += 1
            covered += bool(math.isfinite(ci) and abs(r["pct_change"] - true_pct) <= ci)
        detected += bool(len(tt) and (tt["better"].map(lambda v: v is False or v == False)).all())  # noqa: E712
        best = getattr(cmp, "best_choice", None)
        winner += bool(best.winner) if best is not None else bool(cmp.best["meets_slo"].any())
    return Rates(
        trials,
        {m: k / trials for m, k in sorted(called.items())},
        {c: k / trials for c, k in called_at.items()},
        any_metric / trials,
        covered / cells if cells else math.nan,
        detected / trials,
        winner / trials,
    )


def binomial_upper(p: float, trials: int) -> float:
    """The upper end of the 95 % band of an observed rate when the true rate is p (normal approximation)."""
    return p + 1.96 * math.sqrt(p * (1 - p) / trials)
