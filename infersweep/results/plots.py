"""The figures a report and a comparison share. Each takes one or more labelled results tables and writes a
PNG; repetitions of a point are reduced to their median first, so a plot shows one value per point."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from infersweep.results.evidence import per_point  # noqa: F401  (its home; plots and reports use it)

COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:olive"]


def _plt():
    import matplotlib

    matplotlib.use("Agg")  # no display in a step container or CI
    import matplotlib.pyplot as plt

    return plt


X, Y = "output_throughput_p50_tok_s_per_user", "output_throughput_tok_s_per_gpu"  # the Pareto plot's axes


def pareto_frontier(points: pd.DataFrame, x: str = X, y: str = Y) -> pd.DataFrame:
    """The points no other point beats on both x and y (higher is better on both), sorted by x."""
    pts = points.dropna(subset=[x, y]).sort_values([x, y], ascending=[False, False])
    keep, best_y = [], -math.inf
    for idx, row in pts.iterrows():
        if row[y] > best_y:
            keep.append(idx)
            best_y = row[y]
    return pts.loc[keep].sort_values(x)


def valid_frontier(df: pd.DataFrame) -> pd.DataFrame:
    """A run's frontier drawn from its valid points only (infersweep.results.evidence.counted), as `compare
    --html` draws it: an unsteady or client-bound point is shown, never joined into the frontier (issue 38)."""
    from infersweep.results.evidence import counted

    return pareto_frontier(per_point(counted(df)[0]))


def invalid_levels(df: pd.DataFrame) -> set[int]:
    """The concurrencies with a measured repetition that does not count (shown hollow-crossed, labelled)."""
    from infersweep.results.evidence import counted

    kept, _ = counted(df)
    left = df.drop(kept.index)
    return {int(c) for c in left["concurrency"].dropna()} if "concurrency" in left else set()


def slo_of(df: pd.DataFrame) -> dict[str, float]:
    if "slo" in df.columns and df["slo"].notna().any():
        value = df["slo"].dropna().iloc[0]
        return json.loads(value) if isinstance(value, str) else dict(value)
    return {}


def pareto_plot(runs: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """tok/s/GPU against tok/s/user, one curve per run, frontier bold, the SLO region shaded.

    The region is where tok/s/user meets its bound; points that miss another bound (TTFT, ITL) are
    drawn hollow, so "inside the region" never hides a TTFT miss.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 5.2), dpi=110)
    slo: dict[str, float] = {}
    for i, (label, df) in enumerate(runs.items()):
        slo = slo or slo_of(df)
        pts = per_point(df)
        if pts.empty:
            continue
        color = COLORS[i % len(COLORS)]
        ax.plot(pts[X], pts[Y], "-", color=color, alpha=0.35)
        front = valid_frontier(df)
        invalid = invalid_levels(df)
        ax.plot(front[X], front[Y], "-", color=color, lw=2.2, label=f"{label} (frontier)")
        for _, r in pts.iterrows():
            passed = r["slo_pass"] is True
            bad = int(r["concurrency"]) in invalid
            ax.plot(
                r[X],
                r[Y],
                "x" if bad else "o",
                color=color,
                markerfacecolor=color if passed and not bad else "white",
                markersize=7,
            )
            ax.annotate(
                f"c={int(r['concurrency'])}" + (" (invalid)" if bad else ""),
                (r[X], r[Y]),
                textcoords="offset points",
                xytext=(5, 5),
                fontsize=8,
            )
    if slo.get("output_throughput_p50_tok_s_per_user"):
        lo = slo["output_throughput_p50_tok_s_per_user"]
        ax.axvspan(
            lo,
            max(ax.get_xlim()[1], lo * 1.1),
            color="tab:green",
            alpha=0.08,
            label=f"SLO region: tok/s/user >= {lo:g}",
        )
        ax.axvline(lo, color="tab:green", linestyle="--", lw=1)
    bounds = ", ".join(f"{k}={v:g}" for k, v in slo.items() if k != "output_throughput_p50_tok_s_per_user")
    ax.set_xlabel("output tok/s per user (p50)")
    ax.set_ylabel("output tok/s per GPU")
    ax.set_title(
        title
        + (f"\nfilled: meets all SLOs ({bounds})" if bounds else "\nfilled: meets all SLOs")
        + "; x: invalid, not on the frontier",
        fontsize=10,
    )
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize=8)
    return _save(fig, path)


def latency_plot(runs: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """TTFT, ITL and request latency against concurrency: p50 solid, p99 dashed, mean dotted."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.2), dpi=110)
    for ax, (prefix, name) in zip(
        axes, [("ttft", "TTFT"), ("itl", "ITL"), ("request_latency", "request latency")], strict=False
    ):
        for i, (label, df) in enumerate(runs.items()):
            pts = per_point(df)
            if pts.empty:
                continue
            color = COLORS[i % len(COLORS)]
            ax.plot(pts["concurrency"], pts[f"{prefix}_p50_ms"], "o-", color=color, label=f"{label} p50")
            ax.plot(pts["concurrency"], pts[f"{prefix}_p99_ms"], "s--", color=color, alpha=0.7, label=f"{label} p99")
            ax.plot(pts["concurrency"], pts[f"{prefix}_avg_ms"], ":", color=color, alpha=0.7, label=f"{label} mean")
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrency")
        ax.set_ylabel(f"{name} (ms)")
        ax.set_title(name)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def error_plot(runs: dict[str, pd.DataFrame], path: Path, title: str) -> Path:
    """Failed-request rate per concurrency; points without a measurement are marked with their status."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 3.8), dpi=110)
    width = 0.8 / max(1, len(runs))
    levels = sorted({int(c) for df in runs.values() for c in df["concurrency"].dropna()})
    pos = {c: i for i, c in enumerate(levels)}
    for i, (label, df) in enumerate(runs.items()):
        rows = df.dropna(subset=["concurrency"]).groupby(df["concurrency"].dropna().astype("int64"))
        for c, g in rows:
            rate = g["error_ratio"].astype("float64").median()
            x = pos[int(c)] + (i - (len(runs) - 1) / 2) * width
            ax.bar(
                x,
                100 * (0 if math.isnan(rate) else rate),
                width,
                color=COLORS[i % len(COLORS)],
                label=label if c == levels[0] else None,
            )
            bad = sorted(set(g["status"]) - {"ok"})
            if bad:
                ax.annotate(
                    "/".join(bad),
                    (x, 100 * (0 if math.isnan(rate) else rate)),
                    ha="center",
                    va="bottom",
                    fontsize=7,
                    color="tab:red",
                    rotation=90,
                )
    ax.set_xticks(range(len(levels)), [str(c) for c in levels])
    ax.set_xlabel("concurrency")
    ax.set_ylabel("failed requests (%)")
    ax.set_ylim(bottom=0, top=max(5.0, ax.get_ylim()[1]))
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)


def server_metrics_plot(metrics: pd.DataFrame, path: Path, title: str, max_series: int = 6) -> Path:
    """Each scraped server metric over time (seconds from the first sample), one panel per metric, with
    the benchmark points' windows shaded and labelled by concurrency."""
    plt = _plt()
    names = sorted(metrics["metric"].unique())
    fig, axes = plt.subplots(len(names), 1, figsize=(10, 2.4 * len(names)), dpi=100, sharex=True, squeeze=False)
    t0 = metrics["ts"].min()
    windows = metrics.groupby("concurrency")["ts"].agg(["min", "max"])
    for ax, name in zip(axes[:, 0], names, strict=False):
        sub = metrics[metrics["metric"] == name]
        for j, (labels, series) in enumerate(sub.groupby("labels")):
            if j >= max_series:
                break
            series = series.sort_values("ts")
            ax.plot(series["ts"] - t0, series["value"], lw=1, label=_short_labels(labels))
        for k, (conc, w) in enumerate(windows.iterrows()):
            ax.axvspan(w["min"] - t0, w["max"] - t0, color="grey", alpha=0.08 if k % 2 else 0.16)
            ax.annotate(
                f"c={conc}",
                ((w["min"] + w["max"]) / 2 - t0, 1.0),
                xycoords=("data", "axes fraction"),
                ha="center",
                va="top",
                fontsize=7,
            )
        ax.set_ylabel(name, fontsize=8)
        ax.grid(True, alpha=0.3)
        if sub["labels"].nunique() > 1:
            ax.legend(fontsize=6, loc="upper left")
    axes[-1, 0].set_xlabel("seconds since the first sample")
    fig.suptitle(title, fontsize=10)
    return _save(fig, path)


def _short_labels(labels: str) -> str:
    try:
        d = json.loads(labels)
    except ValueError:
        return labels[:40]
    d = {k: v for k, v in d.items() if k not in ("__name__", "job", "instance", "namespace")}
    return ",".join(f"{k}={v}" for k, v in sorted(d.items()))[:50] or "all"


def _save(fig, path: Path) -> Path:
    plt = _plt()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
