"""Step: turn the sweep's point results into the results table (parquet + CSV + Markdown) and a Pareto plot.

One row per concurrency point, failed points included (with their status and reason) so that a partial
sweep still shows what it measured and why the rest is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

PERCENTILES = ("p50", "p90", "p99")
LATENCIES = {"ttft": "ttft_ms", "itl": "itl_ms", "latency": "request_latency_ms"}
COLUMNS = (["concurrency", "status"]
           + [f"{short}_{p}_ms" for short in LATENCIES for p in PERCENTILES]
           + ["output_tok_s", "tok_s_per_gpu", "tok_s_per_user", "request_per_s", "error_rate",
              "requests_ok", "requests_failed", "slo_pass", "reason"])


def load_points(points_dir: Path) -> list[dict[str, Any]]:
    results = []
    for f in sorted(points_dir.glob("*/result.json")):
        try:
            results.append(json.loads(f.read_text()))
        except (OSError, json.JSONDecodeError) as e:
            results.append({"concurrency": _concurrency_from_dir(f.parent), "status": "failed",
                            "reason": f"unreadable result file {f.name}: {e}", "metrics": {}})
    return results


def _concurrency_from_dir(d: Path) -> int | None:
    digits = "".join(ch for ch in d.name if ch.isdigit())
    return int(digits) if digits else None


def slo_pass(row: dict[str, Any], slo: dict[str, float]) -> bool | None:
    if row["status"] not in ("ok", "partial"):
        return None
    checks = []
    if slo.get("ttft_p50_ms"):
        checks.append(row["ttft_p50_ms"] <= slo["ttft_p50_ms"])
    if slo.get("ttft_p99_ms"):
        checks.append(row["ttft_p99_ms"] <= slo["ttft_p99_ms"])
    if slo.get("itl_p50_ms"):
        checks.append(row["itl_p50_ms"] <= slo["itl_p50_ms"])
    if slo.get("tok_s_user_min"):
        checks.append(row["tok_s_per_user"] >= slo["tok_s_user_min"])
    return all(checks) if checks else None


def to_row(point: dict[str, Any], gpu_count: int, slo: dict[str, float]) -> dict[str, Any]:
    m = point.get("metrics") or {}
    nan = float("nan")
    row: dict[str, Any] = {"concurrency": point.get("concurrency"), "status": point.get("status", "failed")}
    for short, key in LATENCIES.items():
        for p in PERCENTILES:
            row[f"{short}_{p}_ms"] = m.get(f"{key}_{p}", nan)
    row["output_tok_s"] = m.get("output_tok_s", nan)
    row["tok_s_per_gpu"] = row["output_tok_s"] / gpu_count if gpu_count else nan
    # Per-user speed is the median over requests of AIPerf's per-request output rate: the mean is
    # dominated by requests whose few tokens arrived in one chunk.
    row["tok_s_per_user"] = m.get("tok_s_per_user_p50", nan)
    row["request_per_s"] = m.get("request_per_s", nan)
    row["error_rate"] = point.get("error_rate", nan)
    row["requests_ok"] = point.get("requests_ok", 0)
    row["requests_failed"] = point.get("requests_failed", 0)
    row["slo_pass"] = slo_pass(row, slo)
    row["reason"] = point.get("reason", "")
    return row


def build_table(points: list[dict[str, Any]], gpu_count: int, slo: dict[str, float]) -> pd.DataFrame:
    df = pd.DataFrame([to_row(p, gpu_count, slo) for p in points], columns=list(COLUMNS))
    df["slo_pass"] = df["slo_pass"].astype("boolean")
    return df.sort_values("concurrency", kind="stable").reset_index(drop=True)


def pareto_plot(df: pd.DataFrame, path: Path, title: str, slo: dict[str, float]) -> None:
    import matplotlib

    matplotlib.use("Agg")  # no display in a step container or CI
    import matplotlib.pyplot as plt

    ok = df[df["status"].isin(["ok", "partial"])]
    fig, ax = plt.subplots(figsize=(7, 5), dpi=110)
    ax.plot(ok["tok_s_per_user"], ok["tok_s_per_gpu"], "o-", color="tab:blue")
    for _, r in ok.iterrows():
        ax.annotate(f"c={int(r['concurrency'])}", (r["tok_s_per_user"], r["tok_s_per_gpu"]),
                    textcoords="offset points", xytext=(5, 5), fontsize=8)
    if slo.get("tok_s_user_min"):
        ax.axvline(slo["tok_s_user_min"], color="tab:green", linestyle="--", label=f"SLO tok/s/user >= {slo['tok_s_user_min']:g}")
        ax.legend(loc="best")
    ax.set_xlabel("output tok/s per user")
    ax.set_ylabel("output tok/s per GPU")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def markdown_table(df: pd.DataFrame) -> str:
    cols = ["concurrency", "status", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "latency_p50_ms",
            "output_tok_s", "tok_s_per_gpu", "tok_s_per_user", "request_per_s", "error_rate", "slo_pass"]
    view = df[cols].copy()
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = ""
    for _, r in view.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.2f}" if isinstance(v, float) else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def summarize(run_dir: Path, gpu_count: int, slo: dict[str, float], title: str) -> pd.DataFrame:
    df = build_table(load_points(run_dir / "points"), gpu_count, slo)
    out = run_dir / "summary"
    out.mkdir(parents=True, exist_ok=True)
    df.to_parquet(out / "results.parquet", index=False)
    df.to_csv(out / "results.csv", index=False)
    (out / "results.md").write_text(f"# {title}\n\n" + markdown_table(df))
    pareto_plot(df, out / "pareto.png", title, slo)
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.summarize")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--gpu-count", type=int, required=True)
    ap.add_argument("--slo", default="{}", help="JSON object of SLO bounds")
    ap.add_argument("--title", default="infersweep")
    a = ap.parse_args(argv)
    df = summarize(Path(a.run_dir), a.gpu_count, json.loads(a.slo), a.title)
    print(markdown_table(df))
    if df.empty:
        print("summarize: no point produced a result", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
