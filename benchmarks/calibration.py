"""The error rates of `compare` on synthetic repetitions of known noise (issue 43, docs/statistics.md):
the issue's table, measured through compare_runs on results tables (infersweep.results.calibration), for
the method of this checkout and, with `--old REV`, for the method of an older commit on the same data.

    .venv/bin/python benchmarks/calibration.py [--trials 200] [--old d38ca3f]

Rows: A/A (nothing changed) TTFT mean and TTFT p99 called better or worse, per point when the sweep has
several; A/A any of the 11 metrics called; A/B (B's TTFT +10 %) detected with the right sign at every
point and the 95 % interval covering +10 %; a winner named for TTFT mean at n = 1; "best under the SLOs"
naming a run in an A/A comparison. New method: each question judged alone (compare --metric M: Holm over
its points); "any of 11": all 11 judged at once (one Holm family). Old method: whatever it starred.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import REPO, Figure, report

from infersweep.results.calibration import FOUR_POINTS, METRIC_NAMES, ONE_POINT, binomial_upper, run_table


def old_compare(rev: str):
    """compare_runs of commit `rev` (its compare.py, importing this checkout's helpers it still names)."""
    src = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:infersweep/results/compare.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_compare.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("old_compare", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["old_compare"] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return lambda runs, metric: mod.compare_runs(runs)


def new_compare(runs, metric):
    from infersweep.results.compare import compare_runs

    return compare_runs(runs, decide=[metric] if metric else METRIC_NAMES)


def _verdicts(ch, metric: str | None):
    v = ch["better"].notna()
    if "judged" in ch.columns:
        v &= ch["judged"].astype(bool)
    return v if metric is None else v & (ch["metric"] == metric)


def case(compare, trials: int, n: int, points: dict, shift: float, seed: int, questions: list[str | None]) -> dict:
    """Counts over `trials` comparisons, per question (a metric judged alone; None: all 11 at once)."""
    rng = np.random.default_rng(seed)
    out = {"called": {}, "at": {}, "covered": 0, "cells": 0, "detected": 0, "winner": 0}
    for _ in range(trials):
        a, b = run_table(rng, "a", n, points), run_table(rng, "b", n, points, shift)
        for q in questions:
            cmp = compare({"a": a, "b": b}, q)
            ch = cmp.changes
            v = _verdicts(ch, q)
            out["called"][q] = out["called"].get(q, 0) + bool(v.any())
            if q is None:
                best = getattr(cmp, "best_choice", None)
                out["winner"] += bool(best.winner) if best is not None else bool(cmp.best["meets_slo"].any())
                continue
            rows = ch[ch["metric"] == q]
            for _, r in rows.iterrows():
                key = (q, int(r["concurrency"]))
                out["at"][key] = out["at"].get(key, 0) + bool(v[r.name])
            if q == "ttft_avg_ms":
                for _, r in rows.iterrows():
                    out["cells"] += 1
                    out["covered"] += bool(
                        math.isfinite(r["ci95_pct"]) and abs(r["pct_change"] - 100 * shift) <= r["ci95_pct"]
                    )
                out["detected"] += bool(len(rows)) and all(
                    v[i] and r["better"] is not None and not bool(r["better"]) for i, r in rows.iterrows()
                )
    return out


def table(compare, trials: int, label: str) -> tuple[list[str], list[Figure]]:
    q_all = ["ttft_avg_ms", "ttft_p99_ms", None]
    cases = {
        "n = 3": (3, ONE_POINT),
        "n = 5": (5, ONE_POINT),
        "4 points x n = 3": (3, FOUR_POINTS),
    }
    rows: dict[str, list[str]] = {
        k: []
        for k in (
            "A/A: TTFT mean called better or worse",
            "A/A: TTFT p99 called better or worse",
            "A/A: at least one of 11 metrics called",
            "A/A: best under the SLOs names a run",
            "A/B (TTFT +10 %): detected, right sign",
            "A/B: 95 % interval covers the true change (TTFT mean)",
        )
    }
    figures = []

    def pct(x: float) -> str:
        return f"{100 * x:.1f} %"

    for name, (n, points) in cases.items():
        aa = case(compare, trials, n, points, 0.0, seed=100 + n + len(points), questions=q_all)
        ab = case(compare, trials, n, points, 0.10, seed=200 + n + len(points), questions=["ttft_avg_ms"])
        for key, metric in (
            ("A/A: TTFT mean called better or worse", "ttft_avg_ms"),
            ("A/A: TTFT p99 called better or worse", "ttft_p99_ms"),
        ):
            text = pct(aa["called"][metric] / trials)
            if len(points) > 1:
                text += " (" + ", ".join(f"c{c} {pct(aa['at'][(metric, c)] / trials)}" for c in points) + ")"
            rows[key].append(text)
            figures.append(
                Figure(
                    "calibration",
                    f"{label} {name} {key}",
                    round(aa["called"][metric] / trials, 4),
                    "rate",
                    f"<= {binomial_upper(0.05, trials):.3f}" if label == "new" else "",
                )
            )
        rows["A/A: at least one of 11 metrics called"].append(pct(aa["called"][None] / trials))
        rows["A/A: best under the SLOs names a run"].append(pct(aa["winner"] / trials))
        rows["A/B (TTFT +10 %): detected, right sign"].append(pct(ab["detected"] / trials))
        cov = ab["covered"] / ab["cells"]
        rows["A/B: 95 % interval covers the true change (TTFT mean)"].append(pct(cov))
        figures.append(
            Figure(
                "calibration", f"{label} {name} coverage", round(cov, 4), "rate", ">= 0.93" if label == "new" else ""
            )
        )
        figures.append(Figure("calibration", f"{label} {name} detection", round(ab["detected"] / trials, 4), "rate"))
    once = case(compare, trials, 1, ONE_POINT, 0.0, seed=301, questions=["ttft_avg_ms", None])
    n1 = [pct(once["called"]["ttft_avg_ms"] / trials), pct(once["winner"] / trials)]
    lines = [
        f"| {label} method, {trials} trials per case | target | " + " | ".join(cases) + " |",
        "| --- | --- | " + " | ".join("---" for _ in cases) + " |",
    ]
    targets = ["5 %", "5 %", "5 % (stated)", "5 %", "reported", ">= 93 %"]
    for (key, vals), target in zip(rows.items(), targets, strict=True):
        lines.append(f"| {key} | {target} | " + " | ".join(vals) + " |")
    lines.append(f"| A/A at n = 1: TTFT mean called / best names a run | never | {n1[0]} / {n1[1]} | | |")
    figures.append(
        Figure(
            "calibration",
            f"{label} n=1 winner named",
            once["winner"] / trials,
            "rate",
            "<= 0" if label == "new" else "",
        )
    )
    return lines, figures


def main(argv: list[str] | None = None) -> list[Figure]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=200)
    ap.add_argument("--old", metavar="REV", help="also measure compare.py of this commit on the same data")
    a = ap.parse_args(argv)
    t0 = time.time()
    figures: list[Figure] = []
    for label, compare in [("new", new_compare)] + ([(f"old ({a.old})", old_compare(a.old))] if a.old else []):
        lines, figs = table(compare, a.trials, label)
        print("\n".join(lines) + "\n", flush=True)
        figures += figs
    print(f"({time.time() - t0:.0f} s)")
    return report("calibration", figures)


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
