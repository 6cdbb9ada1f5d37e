"""Compare runs: per-concurrency percentage changes against the first run, each with its 95 % interval,
verdicts on the metrics the runs are judged on (their SLOs, the experiment's claim or `--metric`), the
concurrency where one configuration overtakes another, and the best configuration meeting the SLOs.

Statistics (infersweep.results.noise, docs/statistics.md): each point is tested on its own repetitions
(medians, Student's t with the degrees of freedom used); the decisions of one candidate against the
baseline are one family, Holm-corrected so the chance of any false "better" among them is at most 5 %;
every other metric is a description (change and interval, no verdict). A point that ran once decides
nothing: no star, no winner, no crossover. Only concurrencies both runs measured are compared (a point one
run lacks is reported, never interpolated); only valid points unless `include_invalid`
(infersweep.results.validity); what was left out is listed in `left_out`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from infersweep.errors import BadArgument
from infersweep.metrics import direction
from infersweep.metrics import label as metric_label
from infersweep.results.evidence import best_point, counted
from infersweep.results.noise import ADVISED_N, ALPHA, holm, point_test, repetitions_to_decide
from infersweep.results.plots import COLORS, _plt, _save, per_point
from infersweep.results.regression import _levels

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
# Judged when the runs have no SLOs and nobody named a metric: the regression check's headline metrics.
DEFAULT_DECISIONS = ["ttft_p50_ms", "itl_p50_ms", "output_throughput_tok_s"]
TIE = 0.005  # relative differences below 0.5% are ties: they neither win nor make a crossover
NOISE = "within noise"  # a judged change not told from noise: no winner, no crossover
UNKNOWN = "n too small"  # a judged change at a point that ran once on a side: nothing decided
DESCRIBED = "described"  # a metric not judged: its change and interval, no verdict
BEST_METRIC = "output_throughput_tok_s_per_gpu"  # what "best under the SLOs" maximizes


@dataclass
class Best:
    """The best configuration meeting the SLOs, decided on the repetitions, not on the medians alone."""

    rows: pd.DataFrame  # per run its best valid point meeting the SLOs (best_meeting_slo), best first
    winner: str | None  # the run told apart from every other run meeting the SLOs (None: none or a tie)
    tied: list[str]  # runs not told apart from the top one (winner is None then)
    line: str  # the sentence the text and the HTML print


@dataclass
class Comparison:
    baseline: str
    changes: pd.DataFrame  # run, concurrency, metric, baseline_value, value, pct_change, ci95_pct, n, verdict ...
    crossovers: pd.DataFrame  # run, metric, concurrency, winner_before, winner_from
    winners: pd.DataFrame  # run, metric, summary ("A better at c1-c4, B better from c8"), judged metrics only
    best: pd.DataFrame  # the best point meeting the SLOs, per run (first row: the top by median)
    missing: list[str]
    left_out: list[str] = field(default_factory=list)  # invalid points not compared (one line each)
    included_invalid: list[str] = field(default_factory=list)  # invalid points compared (--include-invalid)
    decisions: list[str] = field(default_factory=list)  # the judged metrics
    decided_by: str = ""  # where they came from: "the runs' SLOs", "--metric", ...
    best_choice: Best | None = None

    def text(self) -> str:
        return format_comparison(self)


def _pct(a: float, b: float) -> float:
    return (b - a) / a * 100 if a and math.isfinite(a) and math.isfinite(b) else math.nan


def slo_metrics(tables: list[pd.DataFrame]) -> list[str]:
    """The metrics the runs' SLOs bound (the results table's `slo` column, JSON, canonical names)."""
    out: list[str] = []
    for df in tables:
        if "slo" not in df.columns:
            continue
        for text in df["slo"].dropna().unique():
            try:
                slo = json.loads(text) if isinstance(text, str) else dict(text)
            except (ValueError, TypeError):
                continue
            out += [m for m in slo if m not in out]
    return out


def _judged(decide: list[str] | None, decided_by: str | None, runs: dict[str, pd.DataFrame]) -> tuple[list[str], str]:
    if decide:
        return list(dict.fromkeys(decide)), decided_by or "--metric"
    from_slo = [m for m in slo_metrics(list(runs.values())) if _has_direction(m)]
    if from_slo:
        return from_slo, "the runs' SLOs"
    return list(DEFAULT_DECISIONS), "the default (no SLOs, no --metric)"


def _has_direction(metric: str) -> bool:
    try:
        direction(metric)
    except ValueError:
        return False
    return True


def _verdict(metric: str, t, rejected: bool, judged: bool) -> tuple[str, bool | None]:
    """(verdict, better) of one cell: better is True when the candidate is better, False when the
    baseline is, None when nothing was decided."""
    if not judged:
        return DESCRIBED, None
    if not t.known:
        return UNKNOWN, None
    if not rejected:
        return NOISE, None
    if abs(t.change) <= TIE:
        return "tie", None
    b_better = t.change < 0 if direction(metric) == "lower" else t.change > 0
    return ("better" if b_better else "worse"), b_better


def compare_runs(
    runs: dict[str, pd.DataFrame],
    metrics: list[tuple[str, str]] | None = None,
    include_invalid: bool = False,
    decide: list[str] | None = None,
    decided_by: str | None = None,
) -> Comparison:
    """Every run after the first against the first. `decide`: the metrics judged (default: the `metrics`
    named, else the runs' SLOs, else DEFAULT_DECISIONS); `decided_by` says where they came from."""
    if len(runs) < 2:
        raise BadArgument("compare needs at least two runs: give the baseline RUN first, then the runs to compare")
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
    if metrics and not decide:  # a caller that names the metrics shown (the experiment report) judges them
        decide, decided_by = [m for m, _ in metrics], decided_by or "the metrics asked for"
    judged, decided_by = _judged(decide, decided_by, runs)
    metrics = list(metrics or METRICS)
    metrics += [(m, metric_label(m)) for m in judged if m not in dict(metrics)]
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
        cells = []  # (metric, concurrency, a, b, test)
        for metric, _ in metrics:
            if metric not in base.columns or metric not in other.columns:
                continue
            cur_reps, base_reps = reps[label].get(metric, {}), reps[base_label].get(metric, {})
            for c in common:
                a, b = float(base.at[c, metric]), float(other.at[c, metric])  # type: ignore[arg-type]
                cells.append((metric, int(c), a, b, point_test(base_reps.get(int(c), ()), cur_reps.get(int(c), ()))))
        # One family per candidate: its judged cells, Holm-corrected (noise.holm).
        family = [i for i, cell in enumerate(cells) if cell[0] in judged]
        rejected = dict(zip(family, holm([cells[i][4].p for i in family], ALPHA), strict=True))
        seqs: dict[str, list] = {}
        for i, (metric, c, a, b, t) in enumerate(cells):
            verdict, better = _verdict(metric, t, rejected.get(i, False), metric in judged)
            changes.append(
                {
                    "run": label,
                    "baseline": base_label,
                    "concurrency": c,
                    "metric": metric,
                    "baseline_value": a,
                    "value": b,
                    "pct_change": _pct(a, b),
                    "ci95_pct": 100 * t.half_width,
                    "n_baseline": t.n_a,
                    "n": t.n_b,
                    "df": t.df,
                    "sigma_pct": 100 * t.sigma,  # the spread of one repetition, % of the baseline median
                    "p_value": t.p,
                    "judged": metric in judged,
                    "verdict": verdict,
                    "better": better,
                    "valid": not ({base_label, label} & set(invalid_at.get(c, []))),
                }
            )
            if metric in judged:
                who = label if better is True else base_label if better is False else verdict
                seqs.setdefault(metric, []).append((c, who))
        for metric, seq in seqs.items():
            last = None
            for c, w in seq:
                if w not in (label, base_label):
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
    best = decide_best(runs)
    return Comparison(
        base_label,
        pd.DataFrame(changes),
        pd.DataFrame(crossovers, columns=["run", "baseline", "metric", "concurrency", "winner_before", "winner_from"]),
        pd.DataFrame(winners, columns=["run", "metric", "summary"]),
        best.rows,
        missing,
        left_out,
        included,
        judged,
        decided_by,
        best,
    )


def _runs_text(seq: list[tuple[int, str]]) -> str:
    """'A better at c1-c4, B better at c8-c16' from [(1, A), (4, A), (8, B), (16, B)]; cells without a
    winner by their verdict ('within noise', 'n too small', 'tie')."""
    parts: list[list] = []
    for c, w in seq:
        if parts and parts[-1][0] == w:
            parts[-1][2] = c
        else:
            parts.append([w, c, c])
    plain = (NOISE, UNKNOWN, "tie")
    return (
        ", ".join(f"{w}{'' if w in plain else ' better'} at c{a}{'' if a == b else f'-c{b}'}" for w, a, b in parts)
        or "no common points"
    )


def best_meeting_slo(runs: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per run, its best point (infersweep.results.evidence.best_point: valid, meeting every SLO, most tok/s
    per GPU); sorted best first by median. Which run is best is decide_best's answer, not this order's."""
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


def _best_reps(df: pd.DataFrame, concurrency: int) -> np.ndarray:
    kept, _ = counted(df[df["concurrency"] == concurrency])
    return _levels(kept, [BEST_METRIC]).get(BEST_METRIC, {}).get(int(concurrency), np.array([]))


def decide_best(runs: dict[str, pd.DataFrame]) -> Best:
    """The best configuration meeting the SLOs: the top run by median tok/s/GPU at its best point wins
    only when its repetitions tell it apart from every other run meeting the SLOs (noise.point_test,
    Holm over those comparisons); otherwise the runs it is not told apart from are a tie, with the
    repetitions per side that would decide (80 % power at the difference seen)."""
    rows = best_meeting_slo(runs)
    ok = rows[rows["meets_slo"].astype(bool)] if not rows.empty else rows
    if ok.empty:
        return Best(
            rows, None, [], "best configuration meeting the SLOs: none of the runs has a valid point meeting them"
        )
    top = ok.iloc[0]
    head = f"{top['run']} at concurrency {int(top['concurrency'])}"
    if len(ok) == 1:
        return Best(
            rows,
            str(top["run"]),
            [],
            f"best configuration meeting the SLOs: {head} (the only run with a valid "
            f"point meeting them; {_point_text(top)})",
        )
    top_reps = _best_reps(runs[top["run"]], top["concurrency"])
    tests = [(r, point_test(top_reps, _best_reps(runs[r["run"]], r["concurrency"]))) for _, r in ok.iloc[1:].iterrows()]
    rejected = holm([t.p for _, t in tests], ALPHA)
    tied = [(r, t) for (r, t), rej in zip(tests, rejected, strict=True) if not rej or t.change >= 0]
    n_top = len(top_reps)
    if not tied:
        worst = max(tests, key=lambda rt: rt[1].p)[1]
        return Best(
            rows,
            str(top["run"]),
            [],
            f"best configuration meeting the SLOs: {head} ({_point_text(top)}); told apart from every other run "
            f"meeting them (tok/s/GPU, 95 % Holm over {len(tests)} comparison(s); closest "
            f"{100 * worst.change:+.1f} % ±{100 * worst.half_width:.1f}, n={worst.n_a}/{worst.n_b})",
        )
    names = [str(top["run"])] + [str(r["run"]) for r, _ in tied]
    unknown = [t for _, t in tied if not t.known]
    ns = sorted({n_top} | {t.n_b for _, t in tied})
    n_text = "/".join(str(n) for n in ns)
    if unknown:
        why = (
            f"one repetition per point (n = {n_text}) has no spread, so no median tells them apart; run at "
            f"least {ADVISED_N} repetitions per point"
        )
    else:
        need = [repetitions_to_decide(t.change, t.sigma) for _, t in tied]
        close = min(tied, key=lambda rt: abs(rt[1].change))[1]
        why = (
            f"not told apart at n = {n_text} (tok/s/GPU {100 * close.change:+.1f} % ±{100 * close.half_width:.1f}, "
            "95 %); "
            + (
                f"about {max(n for n in need if n is not None)} repetitions per point would decide a difference "
                "this size (80 % power)"
                if all(n is not None for n in need)
                else "more than 100 repetitions per point would be needed: for these purposes they are equal"
            )
        )
    return Best(
        rows,
        None,
        names,
        f"best configuration meeting the SLOs: {' or '.join(names)}: {why}. By median: {head} ({_point_text(top)})",
    )


def _point_text(r) -> str:
    return (
        f"{r['output_throughput_tok_s_per_gpu']:.1f} tok/s/GPU, {r['output_throughput_p50_tok_s_per_user']:.1f} "
        f"tok/s/user, goodput {r['goodput_req_s']:.2f} req/s"
    )


MARK = {True: "*", False: "!"}  # * = the candidate better beyond noise, ! = the baseline better


def family_text(cmp: Comparison, label: str) -> str:
    """The line that states what is judged and the error rate it is judged at."""
    names = dict(METRICS)
    sub = cmp.changes[(cmp.changes["run"] == label) & cmp.changes["judged"]]
    tested = int(sub["p_value"].map(math.isfinite).sum()) if not sub.empty else 0
    judged = ", ".join(names.get(m, m) for m in cmp.decisions)
    return (
        f"judged: {judged} (from {cmp.decided_by}): {tested} test(s) over the common points, Holm-corrected so the "
        f"chance of any false verdict among them is at most {ALPHA:.0%}; the other metrics are described "
        "(change and its own 95 % interval), not judged"
    )


def format_comparison(cmp: Comparison) -> str:
    from infersweep.text_table import table

    out = []
    names = dict(METRICS)
    for label in cmp.changes["run"].unique() if not cmp.changes.empty else []:
        sub = cmp.changes[cmp.changes["run"] == label]
        metrics = list(dict.fromkeys(sub["metric"]))
        judged = set(sub[sub["judged"]]["metric"])
        head = ["concurrency", "valid", "n"] + [names.get(m, m) + (" [judged]" if m in judged else "") for m in metrics]
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
            f"{label} vs {cmp.baseline}: % change per concurrency (+ = higher; ± = 95 % interval, Student's t on the "
            f"point's own repetitions; * = {label} better, ! = {cmp.baseline} better, beyond noise on a judged "
            f"metric; n = repetitions {cmp.baseline}/{label})"
        )
        out.append(table(head, rows))
        out.append(family_text(cmp, label))
        unknown = sub[sub["judged"] & (sub["verdict"] == UNKNOWN)]
        if not unknown.empty:
            where = ", ".join(f"c{c}" for c in sorted(set(unknown["concurrency"])))
            out.append(
                f"nothing decided at {where}: one repetition per point (n = {_n_text(unknown)}) has no spread, so no "
                f"change there is told from run-to-run noise: no verdict, no winner, no crossover. Run at least "
                f"{ADVISED_N} repetitions per point (a recipe's regression.repetitions)" + _plan_text(sub)
            )
        out.append("")
        out.append("who is better, by judged metric:")
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
    best = cmp.best_choice
    if best is not None:
        out.append(best.line)
        for _, r in best.rows.iloc[1:].iterrows():
            out.append(
                f"  {r['run']}: "
                + (
                    f"c{int(r['concurrency'])}, {r['output_throughput_tok_s_per_gpu']:.1f} tok/s/GPU (median)"
                    if r["meets_slo"]
                    else "no valid point meets the SLOs"
                )
            )
    return "\n".join(out)


def _plan_text(sub: pd.DataFrame) -> str:
    """'; about N repetitions ...' from the noise seen at the points that were repeated, if any."""
    seen = sub[sub["judged"] & sub["p_value"].map(math.isfinite)]
    if seen.empty:
        return ""
    # Planning only, never a verdict: the typical spread of one repetition at the repeated points.
    sigma = float(np.median(seen["sigma_pct"])) / 100
    n = repetitions_to_decide(0.10, sigma)
    return f"; with the noise seen at the repeated points, about {n} per point would tell a 10 % change" if n else ""


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
    mark = MARK.get(bool(better), "") if better is not None and not pd.isna(better) else ""
    return f"{pct:+.1f}%" + (f" ±{ci:.1f}" if math.isfinite(ci) else "") + mark


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
