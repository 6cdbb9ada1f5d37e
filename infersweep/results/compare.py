"""Compare runs: per-concurrency percentage changes against the first run, the concurrency where one
configuration overtakes another on each metric, and the best configuration meeting the SLOs.

Repetitions are reduced to their median per point first, and only concurrencies both runs measured are
compared (a point one run lacks is reported, never interpolated). Only valid points are used unless
`include_invalid` (infersweep.results.validity); what was left out is listed in `left_out`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from infersweep.metrics import direction
from infersweep.results.evidence import best_point, counted
from infersweep.results.plots import COLORS, _plt, _save, per_point
from infersweep.results.regression import MEDIAN_SE, _levels, _pooled_sigma  # the regression judge's noise model

METRICS = [
    ("ttft_avg_ms", "TTFT mean"),
    ("ttft_p50_ms", "TTFT p50"),
    ("ttft_p99_ms", "TTFT p99"),
    ("itl_avg_ms", "ITL mean"),
    ("itl_p50_ms", "ITL p50"),
    ("request_latency_avg_ms", "latency mean"),
    ("request_latency_p50_ms", "latency p50"),
    ("output_throughput_tok_s", "output tok/s"),
    ("request_throughput_req_s", "req/s"),
    ("output_throughput_p50_tok_s_per_user", "tok/s/user"),
    ("goodput_req_s", "goodput req/s"),
]
TIE = 0.005  # relative differences below 0.5% are ties: they neither win nor make a crossover
Z95 = 1.96  # the confidence interval shown beside a change: 95 %, normal
NOISE = "within noise"  # a change inside its confidence interval: no winner, no crossover


@dataclass
class Comparison:
    baseline: str
    changes: (
        pd.DataFrame
    )  # run, concurrency, metric, baseline_value, value, pct_change, ci95_pct, n_baseline, n, better
    crossovers: pd.DataFrame  # run, metric, concurrency, winner_before, winner_from
    winners: pd.DataFrame  # run, metric, summary ("A better at c1-c4, B better from c8")
    best: pd.DataFrame  # the best point meeting the SLOs, per run (first row: overall best)
    missing: list[str]
    left_out: list[str] = field(default_factory=list)  # invalid points not compared (one line each)
    included_invalid: list[str] = field(default_factory=list)  # invalid points compared (--include-invalid)

    def text(self) -> str:
        return format_comparison(self)


def _pct(a: float, b: float) -> float:
    return (b - a) / a * 100 if a and math.isfinite(a) and math.isfinite(b) else math.nan


def _winner(metric: str, a: float, b: float, la: str, lb: str) -> str | None:
    if not (math.isfinite(a) and math.isfinite(b)) or abs(b - a) <= TIE * max(abs(a), abs(b)):
        return None
    b_better = b < a if direction(metric) == "lower" else b > a
    return lb if b_better else la


def compare_runs(
    runs: dict[str, pd.DataFrame], metrics: list[tuple[str, str]] | None = None, include_invalid: bool = False
) -> Comparison:
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    left_out: list[str] = []
    included: list[str] = []
    invalid_at: dict[int, list[str]] = {}
    kept = {}
    for label, df in runs.items():
        kept[label], lines = counted(df, include_invalid)
        left_out += [f"{label}: {line}" for line in lines]
        if include_invalid:  # compared anyway: every table row still says which points are not valid
            valid_only, bad = counted(df)
            included += [f"{label}: {line.replace('left out ', '', 1)}" for line in bad]
            for c in sorted(
                set(df["concurrency"].dropna().astype(int)) - set(valid_only["concurrency"].dropna().astype(int))
            ):
                invalid_at.setdefault(int(c), []).append(label)
    runs = kept
    metrics = metrics or METRICS
    labels = list(runs)
    base_label = labels[0]
    points = {label: per_point(df).set_index("concurrency") for label, df in runs.items()}
    names = [m for m, _ in metrics]
    reps = {label: _levels(df, [m for m in names if m in df.columns]) for label, df in runs.items()}
    base = points[base_label]
    changes, crossovers, winners, missing = [], [], [], []
    for label in labels[1:]:
        other = points[label]
        common = sorted(set(base.index) & set(other.index))
        for only, who in (
            (set(base.index) - set(other.index), label),
            (set(other.index) - set(base.index), base_label),
        ):
            if only:
                missing.append(f"{who} has no valid measured point at concurrency {sorted(int(c) for c in only)}")
        for metric, _ in metrics:
            if metric not in base.columns or metric not in other.columns:
                continue
            seq = []
            cur_reps, base_reps = reps[label].get(metric, {}), reps[base_label].get(metric, {})
            # The noise of one repetition, pooled over every point of the metric in both runs (as regress
            # judges it, infersweep.results.regression); unknown (nan) with one repetition per point.
            sigma = _pooled_sigma(list(cur_reps.values()) + list(base_reps.values()), relative=True)
            for c in common:
                a, b = float(base.at[c, metric]), float(other.at[c, metric])
                na, nb = len(base_reps.get(int(c), ())), len(cur_reps.get(int(c), ()))
                ci = (
                    100 * Z95 * MEDIAN_SE * sigma * math.sqrt(1 / na + 1 / nb)
                    if na and nb and math.isfinite(sigma)
                    else math.nan
                )
                w = _winner(metric, a, b, base_label, label)
                if w is not None and math.isfinite(ci) and abs(_pct(a, b)) <= ci:
                    w = NOISE  # beyond a tie, inside the confidence interval: not a winner
                changes.append(
                    {
                        "run": label,
                        "baseline": base_label,
                        "concurrency": int(c),
                        "metric": metric,
                        "baseline_value": a,
                        "value": b,
                        "pct_change": _pct(a, b),
                        "ci95_pct": ci,
                        "n_baseline": na,
                        "n": nb,
                        "better": None if w in (None, NOISE) else w == label,
                        "valid": not ({base_label, label} & set(invalid_at.get(int(c), []))),
                    }
                )
                seq.append((int(c), w))
            last = None
            for c, w in seq:
                if w is None or w == NOISE:
                    continue
                if last is not None and w != last:
                    crossovers.append(
                        {
                            "run": label,
                            "baseline": base_label,
                            "metric": metric,
                            "concurrency": c,
                            "winner_before": last,
                            "winner_from": w,
                        }
                    )
                last = w
            winners.append({"run": label, "metric": metric, "summary": _runs_text(seq)})
    return Comparison(
        base_label,
        pd.DataFrame(changes),
        pd.DataFrame(crossovers, columns=["run", "baseline", "metric", "concurrency", "winner_before", "winner_from"]),
        pd.DataFrame(winners),
        best_meeting_slo(runs),
        missing,
        left_out,
        included,
    )


def _runs_text(seq: list[tuple[int, str | None]]) -> str:
    """'A better at c1-c4, B better at c8-c16' from [(1, A), (4, A), (8, B), (16, B)] (ties as 'tie')."""
    parts: list[list] = []
    for c, w in seq:
        who = w or "tie"
        if parts and parts[-1][0] == who:
            parts[-1][2] = c
        else:
            parts.append([who, c, c])
    return (
        ", ".join(
            f"{w} {'better' if w not in ('tie', NOISE) else ''} at c{a}{'' if a == b else f'-c{b}'}".replace("  ", " ")
            for w, a, b in parts
        )
        or "no common points"
    )


def best_meeting_slo(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per run, its best point (infersweep.results.evidence.best_point: valid, meeting every SLO, most tok/s
    per GPU); sorted best first."""
    rows = []
    for label, df in runs.items():
        top = best_point(df)  # valid points only (infersweep.results.evidence)
        if top is None:
            rows.append(
                {
                    "run": label,
                    "concurrency": None,
                    "output_throughput_tok_s_per_gpu": math.nan,
                    "output_throughput_p50_tok_s_per_user": math.nan,
                    "goodput_req_s": math.nan,
                    "meets_slo": False,
                }
            )
            continue
        rows.append(
            {
                "run": label,
                "concurrency": int(top["concurrency"]),
                "output_throughput_tok_s_per_gpu": top["output_throughput_tok_s_per_gpu"],
                "output_throughput_p50_tok_s_per_user": top["output_throughput_p50_tok_s_per_user"],
                "goodput_req_s": top["goodput_req_s"],
                "meets_slo": True,
            }
        )
    df = pd.DataFrame(rows)
    return df.sort_values(["meets_slo", "output_throughput_tok_s_per_gpu"], ascending=False).reset_index(drop=True)


def format_comparison(cmp: Comparison) -> str:
    from infersweep.text_table import table

    out = []
    names = dict(METRICS)
    for label in cmp.changes["run"].unique() if not cmp.changes.empty else []:
        sub = cmp.changes[cmp.changes["run"] == label]
        metrics = list(dict.fromkeys(sub["metric"]))
        head = ["concurrency", "valid", "n"] + [names.get(m, m) for m in metrics]
        rows = []
        for c, g in sub.groupby("concurrency"):
            by = g.set_index("metric")
            valid = "yes" if "valid" not in g or bool(g["valid"].all()) else "NO (see below)"
            rows.append(
                (
                    str(c),
                    valid,
                    _n_text(g),
                    *(_pct_text(by.at[m, "pct_change"], by.at[m, "better"], by.at[m, "ci95_pct"]) for m in metrics),
                )
            )
        out.append(
            f"{label} vs {cmp.baseline}: % change per concurrency (+ = higher; ± = 95 % confidence interval; "
            f"* = {label} better beyond it; n = repetitions {cmp.baseline}/{label})"
        )
        out.append(table(head, rows))
        if not sub["ci95_pct"].map(math.isfinite).any():
            out.append(
                f"noise unknown: {_n_text(sub)} repetition(s) per point, so no change here is told from "
                "run-to-run noise (no confidence interval); 'better' only means beyond a 0.5 % tie. Run "
                "each point more than once (a recipe's regression.repetitions) for intervals"
            )
        out.append("")
        out.append("who is better, by metric:")
        for _, w in cmp.winners[cmp.winners["run"] == label].iterrows():
            out.append(f"  {names.get(w['metric'], w['metric']):<14} {w['summary']}")
        xs = cmp.crossovers[cmp.crossovers["run"] == label]
        out.append(
            "crossovers: "
            + (
                "none"
                if xs.empty
                else "; ".join(
                    f"{names.get(r['metric'], r['metric'])}: {r['winner_from']} overtakes {r['winner_before']} at c{r['concurrency']}"
                    for _, r in xs.iterrows()
                )
            )
        )
        out.append("")
    for note in cmp.missing:
        out.append(f"note: {note}")
    if cmp.included_invalid:
        out.append(f"compared {len(cmp.included_invalid)} invalid point(s) too (--include-invalid); not valid because:")
        out += [f"  {line}" for line in cmp.included_invalid]
    if cmp.left_out:
        out.append(f"left out {len(cmp.left_out)} invalid point(s) (--include-invalid compares them too):")
        out += [f"  {line}" for line in cmp.left_out]
    best = cmp.best
    if best.empty or not best.iloc[0]["meets_slo"]:
        out.append("best configuration meeting the SLOs: none of the runs has a valid point meeting them")
    else:
        b = best.iloc[0]
        out.append(
            f"best configuration meeting the SLOs: {b['run']} at concurrency {int(b['concurrency'])} "
            f"({b['output_throughput_tok_s_per_gpu']:.1f} tok/s/GPU, {b['output_throughput_p50_tok_s_per_user']:.1f} tok/s/user, "
            f"goodput {b['goodput_req_s']:.2f} req/s)"
        )
        for _, r in best.iloc[1:].iterrows():
            out.append(
                f"  {r['run']}: "
                + (
                    f"c{int(r['concurrency'])}, {r['output_throughput_tok_s_per_gpu']:.1f} tok/s/GPU"
                    if r["meets_slo"]
                    else "no valid point meets the SLOs"
                )
            )
    return "\n".join(out)


def _n_text(g: pd.DataFrame) -> str:
    """'3/3' (repetitions baseline/run) of a row of changes, or '1-3/3' when the metrics' counts differ
    (a metric a point did not measure, NA, is not counted)."""
    measured = g[(g["n"] > 0) & (g["n_baseline"] > 0)]
    g = measured if not measured.empty else g

    def span(col: str) -> str:
        lo, hi = int(g[col].min()), int(g[col].max())
        return str(lo) if lo == hi else f"{lo}-{hi}"

    return f"{span('n_baseline')}/{span('n')}"


def _pct_text(pct: float, better, ci: float = math.nan) -> str:
    if not math.isfinite(pct):
        return "NA"
    return (
        f"{pct:+.1f}%"
        + (f" ±{ci:.1f}" if math.isfinite(ci) else "")
        + ("*" if better is not None and not pd.isna(better) and bool(better) else "")
    )


def comparison_plot(runs: dict[str, pd.DataFrame], cmp: Comparison, path: Path) -> Path:
    """Absolute values vs concurrency for the main metrics, one line per run, crossovers marked."""
    plt = _plt()
    shown = [
        ("ttft_avg_ms", "TTFT mean (ms)"),
        ("itl_avg_ms", "ITL mean (ms)"),
        ("request_latency_avg_ms", "latency mean (ms)"),
        ("output_throughput_tok_s", "output tok/s"),
        ("output_throughput_p50_tok_s_per_user", "tok/s/user (p50)"),
        ("goodput_req_s", "goodput (req/s)"),
    ]
    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5), dpi=100)
    for ax, (metric, name) in zip(axes.flat, shown, strict=False):
        for i, (label, df) in enumerate(runs.items()):
            pts = per_point(df)
            if not pts.empty and metric in pts.columns:
                ax.plot(pts["concurrency"], pts[metric], "o-", color=COLORS[i % len(COLORS)], label=label)
        for _, x in cmp.crossovers[cmp.crossovers["metric"] == metric].iterrows():
            ax.axvline(x["concurrency"], color="grey", linestyle=":", lw=1)
        ax.set_xscale("log", base=2)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("concurrency")
        ax.grid(True, alpha=0.3)
    axes.flat[0].legend(fontsize=8)
    fig.suptitle("comparison against " + cmp.baseline + " (dotted: crossover)", fontsize=11)
    return _save(fig, path)
