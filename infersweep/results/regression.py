"""Regression verdicts that noise does not fool.

    from infersweep.results.regression import judge_run
    v = judge_run(current_table, baseline_table, tolerances)   # tolerances: dict, None = defaults
    v.verdict   # "pass" | "regressed" | "improved" | "inconclusive"
    v.report    # the evidence, one line per finding

Method, per (metric, concurrency), the per-point test `compare` uses (infersweep.results.noise,
docs/statistics.md):
1. repetitions are reduced to their median, on each side;
2. d = relative change of the medians, signed so that d > 0 is worse (direction from infersweep.metrics);
3. the noise of d comes from that point's own repetitions (nA + nB - 2 degrees of freedom; never pooled
   with other points, whose request counts and so noise differ), the standard error of a median from the
   exact small-n factor, the p-value of "no change" from Student's t;
4. every cell of the run is one family: Holm's correction keeps the chance of any false "regressed" or
   "improved" among them at 5 %; a change is *regressed* only if it is beyond the tolerance AND rejected
   by that test AND beyond z standard errors (the recipe's `z`, a floor kept from before);
   beyond the tolerance but not told from the noise is *inconclusive* (rerun with more repetitions);
   within the tolerance is *pass*; beyond it in the good direction (and the noise) is *improved*;
5. a point that ran once on a side decides nothing: beyond the tolerance it is *inconclusive*, never
   regressed (one value has no spread to tell a change from noise).
The run verdict: regressed if any cell regressed (or a point measured in the baseline failed now), else
inconclusive if any cell is, else improved if any cell improved, else pass.

Tolerances are a plain dict {metric: relative tolerance} or {metric: {"rel": r, "abs": a}}; "abs" is used
for rates whose baseline can be 0 (error_rate). Defaults: infersweep.metrics.DEFAULT_TOLERANCES; a recipe's `regression:` section (to be wired
into the recipe model) overrides them per metric.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from infersweep.metrics import DEFAULT_Z, direction, normalize_tolerances
from infersweep.results.evidence import counted
from infersweep.results.noise import ADVISED_N, ALPHA, PointTest, holm, point_test
from infersweep.results.table import OK_STATUSES

# se(median) / (sigma / sqrt(n)) for normal noise at large n; the per-point test uses the exact small-n
# factors (infersweep.results.noise.MEDIAN_SD). Kept for the experiment report's older callers.
MEDIAN_SE = 1.2533

VERDICTS = ("pass", "regressed", "improved", "inconclusive")


@dataclass
class Finding:
    metric: str
    concurrency: int
    verdict: str
    baseline: float
    current: float
    change: float  # relative (or absolute for abs tolerances), > 0 = worse
    tolerance: float
    noise: float  # standard error of `change` (nan = unknown)
    n_current: int
    n_baseline: int
    kind: str  # "rel" | "abs"
    p: float = math.nan  # two-sided p-value of "no change" (infersweep.results.noise.point_test)

    def line(self) -> str:
        unit = "%" if self.kind == "rel" else ""
        scale = 100 if self.kind == "rel" else 1
        worse = "worse" if self.change > 0 else "better" if self.change < 0 else "no change"
        noise = (
            f"noise ±{scale * self.noise:.2g}{unit} (1 se, n={self.n_current}/{self.n_baseline}, p={self.p:.2g})"
            if math.isfinite(self.noise)
            else f"noise unknown: one repetition per point (n={self.n_current}/{self.n_baseline}), so nothing is "
            f"decided here; run at least {ADVISED_N} repetitions"
        )
        size = f"{scale * abs(self.change):.2f}{unit} " if self.change else ""
        return (
            f"{self.verdict:>12}  {self.metric} @c{self.concurrency}: {self.baseline:.4g} -> {self.current:.4g} "
            f"({size}{worse}; tolerance {scale * self.tolerance:.3g}{unit}; {noise})"
        )


@dataclass
class Verdict:
    verdict: str
    report: str
    findings: list[Finding] = field(default_factory=list)

    def __str__(self) -> str:
        return self.report


def _pooled_sigma(cells: list[np.ndarray], relative: bool) -> float:
    """The noise of one repetition, pooled over every point of a metric in both runs (nan: no repetitions).

    Pooling matters: 3 repetitions say almost nothing about their own spread (a sample std of 3 values is
    off by 2x easily), and a too-small spread would turn noise into "regressed". Noise is roughly the
    same relative size across the concurrency points of a sweep, so the pooled estimate has the degrees of
    freedom of all points together.
    """
    ss, dof = 0.0, 0
    for values in cells:
        if len(values) < 2:
            continue
        x = values / abs(np.median(values)) if relative and np.median(values) else values
        ss += float(np.sum((x - x.mean()) ** 2))
        dof += len(values) - 1
    return math.sqrt(ss / dof) if dof else math.nan


def _test(metric: str, cur: np.ndarray, base: np.ndarray, tol: dict[str, float]) -> tuple[str, float, PointTest]:
    """(kind, tolerance, the point test of current against baseline); relative unless the baseline is 0."""
    ((kind, tolerance),) = tol.items()
    if kind == "rel" and float(np.median(base)) == 0:
        kind = "abs"  # no relative change from 0: judge the absolute one
    return kind, tolerance, point_test(base, cur, relative=kind == "rel")


def _cell(
    metric: str, conc: int, kind: str, tolerance: float, t: PointTest, rejected: bool, z: float, n: tuple[int, int]
) -> Finding:
    sign = 1.0 if direction(metric) == "lower" else -1.0  # change > 0 means worse
    change = sign * t.change
    beyond_noise = t.known and rejected and abs(change) > z * t.se
    if abs(change) <= tolerance:
        verdict = "pass"
    elif not beyond_noise:
        verdict = "inconclusive"  # not told from noise, or a side ran once (nothing decided)
    else:
        verdict = "regressed" if change > 0 else "improved"
    return Finding(metric, conc, verdict, t.a, t.b, change, tolerance, t.se, n[0], n[1], kind, t.p)


def _levels(df: pd.DataFrame, metrics: list[str]) -> dict[str, dict[int, np.ndarray]]:
    """{metric: {concurrency: the repetitions' values}} of the measured points (one groupby for all)."""
    ok = df[df["status"].isin(OK_STATUSES)].dropna(subset=["concurrency"])
    out: dict[str, dict[int, np.ndarray]] = {m: {} for m in metrics}
    for c, g in ok.groupby(ok["concurrency"].astype("int64")):
        for m in metrics:
            values = g[m].astype("float64").to_numpy()
            values = values[np.isfinite(values)]
            if len(values):
                out[m][int(c)] = values
    return out


def _measured_levels(df: pd.DataFrame) -> set[int]:
    return set(df[df["status"].isin(OK_STATUSES)]["concurrency"].dropna().astype(int))


def judge_run(
    current_table: pd.DataFrame,
    baseline_table: pd.DataFrame,
    tolerances: dict[str, Any] | None = None,
    include_invalid: bool = False,
) -> Verdict:
    """The verdict of a run against its baseline (see the module docstring).

    Metrics are compared over valid points only unless `include_invalid`; the report lists what was left
    out. A point measured in the baseline and not measured now (its status) is a regression either way.
    """
    tols = normalize_tolerances(tolerances)
    z = float((tolerances or {}).get("z", DEFAULT_Z))
    findings: list[Finding] = []
    notes: list[str] = []
    base_measured = _measured_levels(baseline_table)
    cur_measured = _measured_levels(current_table)
    lost = sorted(base_measured - cur_measured)
    for c in lost:
        reasons = current_table[current_table["concurrency"] == c]["reason"].dropna().unique().tolist()
        notes.append(
            f"   regressed  concurrency {c}: measured in the baseline, not now"
            + (f" ({'; '.join(map(str, reasons))[:200]})" if reasons else " (point missing)")
        )
    current_table, left_cur = counted(current_table, include_invalid)
    baseline_table, left_base = counted(baseline_table, include_invalid)
    notes += [f"   left out  current: {line}" for line in left_cur] + [
        f"   left out  baseline: {line}" for line in left_base
    ]
    metrics = [m for m in tols if m in current_table.columns and m in baseline_table.columns]
    for m in tols:
        if m not in metrics:
            notes.append(f"     skipped  {m}: not in both tables")
    cur_all, base_all = _levels(current_table, metrics), _levels(baseline_table, metrics)
    cells = []
    for metric in metrics:
        cur, base = cur_all[metric], base_all[metric]
        for conc in sorted(set(cur) & set(base)):
            cells.append(
                (metric, conc, *_test(metric, cur[conc], base[conc], tols[metric]), (len(cur[conc]), len(base[conc])))
            )
    # The run's cells are one family: Holm keeps the chance of any false verdict among them at ALPHA.
    rejected = holm([cell[4].p for cell in cells], ALPHA)
    for (metric, conc, kind, tolerance, t, n), rej in zip(cells, rejected, strict=True):
        findings.append(_cell(metric, conc, kind, tolerance, t, rej, z, n))
    if not findings and not lost:
        # Nothing valid to judge (infersweep.results.evidence): inconclusive, never pass.
        why = (
            f"no valid concurrency point measured in both runs ({len(left_cur) + len(left_base)} invalid "
            "point(s) left out; --include-invalid judges them)"
            if left_cur or left_base
            else "no concurrency point measured in both runs"
        )
        return Verdict("inconclusive", "\n".join([f"inconclusive: {why}"] + notes), [])
    kinds = {f.verdict for f in findings}
    if lost or "regressed" in kinds:
        verdict = "regressed"
    elif "inconclusive" in kinds:
        verdict = "inconclusive"
    elif "improved" in kinds:
        verdict = "improved"
    else:
        verdict = "pass"
    counts = ", ".join(
        f"{sum(f.verdict == k for f in findings)} {k}" for k in VERDICTS if any(f.verdict == k for f in findings)
    )
    head = (
        f"{verdict}: {len(findings)} checks over {len({f.concurrency for f in findings})} concurrency points "
        f"({counts}); a change counts when beyond its tolerance and beyond the noise of its own point's "
        f"repetitions (Student's t, Holm over the {sum(math.isfinite(f.p) for f in findings)} tested checks: "
        f"at most {ALPHA:.0%} chance of any false verdict; and at least {z:g} standard errors)"
    )
    unknown = sum(not math.isfinite(f.noise) for f in findings)
    if unknown:  # why: the spread of one repetition cannot be measured from one value per point
        head += (
            f"; noise unknown for {unknown} of {len(findings)} checks: their points ran once (n=1), so nothing is "
            f"decided there (a change beyond its tolerance is inconclusive); set the recipe's regression.repetitions "
            f"to at least {ADVISED_N} (the nightly default)"
        )
    order = {"regressed": 0, "inconclusive": 1, "improved": 2, "pass": 3}
    lines = (
        [head] + notes + [f.line() for f in sorted(findings, key=lambda f: (order[f.verdict], f.metric, f.concurrency))]
    )
    return Verdict(verdict, "\n".join(lines), findings)
