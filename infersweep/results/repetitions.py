"""A load's repetitions reduced to what a reader can sign: the mean over its valid repetitions with a 95 %
Student-t confidence interval and n beside it (issue 32 item 4).

Each repetition of a load is one measurement of each headline statistic (a point's TTFT p50 is one number);
the interval is over the repetitions, so it carries run-to-run noise (a new deployment state, a new seed, the
drift over the sweep: repetitions run in interleaved rounds, infersweep.aiperf.point.repeated), not only the
sampling noise inside one window. Only valid repetitions count: a verdict is never drawn from an invalid
point, and the table says how many of the load's repetitions were left out. With n = 1 there is no interval
and the cell says so (`n=1`), as a mocker run's single repetition does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from infersweep.aiperf.adaptive import TARGET_REL
from infersweep.results.evidence import enforce

LEVEL = 0.95
# Two-sided 95 % Student-t critical values t(0.975, df), df = 1..30 (any statistics table; e.g. NIST/SEMATECH
# e-Handbook 1.3.6.7.2); past 30 interpolated in 1/df towards the normal 1.960 (error < 0.002).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z975 = 1.959964


def t_critical(df: int) -> float:
    """t(0.975, df): the half-width of a 95 % interval is this times the standard error."""
    if df < 1:
        raise ValueError(f"a confidence interval needs 2 or more values (df {df})")
    if df <= len(_T975):
        return _T975[df - 1]
    return _Z975 + (_T975[-1] - _Z975) * len(_T975) / df


@dataclass(frozen=True)
class Interval:
    mean: float
    half: float  # half-width of the 95 % interval; nan when n < 2
    n: int

    @property
    def rel(self) -> float:
        """Half-width relative to the mean (nan when undefined)."""
        return self.half / abs(self.mean) if self.n >= 2 and self.mean else math.nan

    def text(self, digits: int = 1) -> str:
        if self.n == 0:
            return "NA (n=0)"
        if self.n == 1:
            return f"{self.mean:.{digits}f} (n=1)"
        return f"{self.mean:.{digits}f} ± {self.half:.{digits}f} (n={self.n})"


def interval(values) -> Interval:
    """Mean and 95 % Student-t interval of independent measurements (NaN dropped)."""
    v = [float(x) for x in values if x is not None and x == x]
    n = len(v)
    if n == 0:
        return Interval(math.nan, math.nan, 0)
    mean = sum(v) / n
    if n == 1:
        return Interval(mean, math.nan, 1)
    sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1))
    return Interval(mean, t_critical(n - 1) * sd / math.sqrt(n), n)


# The statistics the per-load table shows: every mean and percentile of the headline table (summarize.MD_COLUMNS).
METRICS = [
    ("ttft_avg_ms", "TTFT mean ms"),
    ("ttft_p50_ms", "TTFT p50 ms"),
    ("ttft_p99_ms", "TTFT p99 ms"),
    ("itl_avg_ms", "ITL mean ms"),
    ("itl_p50_ms", "ITL p50 ms"),
    ("request_latency_p50_ms", "latency p50 ms"),
    ("output_throughput_tok_s", "output tok/s"),
    ("output_throughput_tok_s_per_gpu", "tok/s/GPU"),
    ("output_throughput_p50_tok_s_per_user", "tok/s/user p50"),
]


def by_load(df: pd.DataFrame) -> pd.DataFrame:
    """One row per load (concurrency, request_rate): `n` valid repetitions, `left_out` (measured but invalid
    or not measured), and for each metric its mean, `<metric>_ci95` (half-width) and the text cell."""
    df = enforce(df)
    rows = []
    keys = ["concurrency", "request_rate"] if "request_rate" in df.columns else ["concurrency"]
    for load, group in df.groupby(keys, sort=True, dropna=False):
        load = load if isinstance(load, tuple) else (load,)
        ok = group[group["valid"].fillna(False).astype(bool)] if "valid" in group.columns else group.iloc[0:0]
        row = dict(zip(keys, load, strict=True)) | {"n": len(ok), "left_out": len(group) - len(ok)}
        for col, _ in METRICS:
            if col not in group.columns:
                continue
            iv = interval(pd.to_numeric(ok[col], errors="coerce"))
            row |= {col: iv.mean, f"{col}_ci95": iv.half, f"{col}_text": iv.text(2 if iv.mean < 100 else 1)}
        rows.append(row)
    return pd.DataFrame(rows)


def stop_text(results: list[dict]) -> str:
    """Why a load's repetitions stopped where they did (their result.json `stop_reason`, infersweep.aiperf.adaptive):
    `target met 3/3`, or `budget spent 3/3 (±22 % in-point; ~132 more requests)` with the widest interval, and
    how far points with a budget were extended (`extended 2/3: +64 to 96 requests`, the longest)."""
    reasons = [str(r.get("stop_reason")) for r in results if r.get("stop_reason")]
    if not reasons:
        return "NA"
    parts = [f"{k} {reasons.count(k)}/{len(results)}" for k in sorted(set(reasons))]
    widths = [r["adaptive_ci_rel"] for r in results if isinstance(r.get("adaptive_ci_rel"), (int, float))]
    more = [r["adaptive_more_requests"] for r in results if r.get("stop_reason") == "budget spent"]
    extended = [r for r in results if isinstance(r.get("requests_extended"), int) and r["requests_extended"] > 0]
    extra = [f"±{max(widths):.0%} in-point"] if widths else []
    if more and any(more):
        extra.append(f"~{max(more)} more requests")
    if extended:  # measured again as one longer window (infersweep.aiperf.point_run)
        top = max(extended, key=lambda r: r["requests_extended"])
        extra.append(
            f"extended {len(extended)}/{len(results)}: +{top['requests_extended']} to {top.get('requests')} requests"
        )
    return ", ".join(parts) + (f" ({'; '.join(extra)})" if extra else "")


def markdown(df: pd.DataFrame, results: list[dict] | None = None) -> str:
    """The per-load table: mean ± 95 % Student-t half-width over the valid repetitions, n in every cell; with
    the points' result.json records, why each load's points stopped (`length`)."""
    t = by_load(df)
    if t.empty:
        return ""
    shown = [(c, label) for c, label in METRICS if f"{c}_text" in t.columns]
    rate = "request_rate" in t.columns and t["request_rate"].fillna(0).astype(float).any()
    stops: dict[tuple, list[dict]] = {}
    for res in results or []:
        key = (int(res.get("concurrency") or 0), float(res.get("request_rate") or 0))
        stops.setdefault(key, []).append(res)
    head = (
        ["concurrency"]
        + (["request_rate"] if rate else [])
        + ["n valid"]
        + [label for _, label in shown]
        + (["length"] if results else [])
    )
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for _, r in t.iterrows():
        n = f"{int(r['n'])}" + (f" ({int(r['left_out'])} left out)" if r["left_out"] else "")
        cells = [str(int(r["concurrency"]))] + ([f"{float(r['request_rate']):g}"] if rate else []) + [n]
        key = (int(r["concurrency"]), float(r.get("request_rate") or 0))
        length = [stop_text(stops.get(key, []))] if results else []
        lines.append("| " + " | ".join(cells + [str(r[f"{c}_text"]) for c, _ in shown] + length) + " |")
    return (
        "Over repetitions: mean ± half-width of the 95 % Student-t confidence interval over the valid "
        "repetitions of each load (n = how many; n=1: no interval, one measurement)."
        + (
            f" `length`: whether each point's own TTFT and latency, as round means, reached a ±{TARGET_REL:.0%} interval "
            "(or the workload's ci95_target; infersweep/aiperf/adaptive.py); a point with a budget "
            "(workload.max_requests_per_concurrency) is measured again as one longer window until it does."
            if results
            else ""
        )
        + "\n\n"
        + "\n".join(lines)
        + "\n"
    )
