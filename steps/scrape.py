"""Step: Prometheus range queries over each benchmark point's window, saved as parquet beside the results.

The windows come from the points' own result files (AIPerf's profiling phase start/end), so warmup and
the gaps between points are left out. With no Prometheus URL the step records why and succeeds: metrics
enrich a run, they never fail one.
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import yaml

from infersweep.paths import params_dir


def point_windows(points_dir: Path) -> list[tuple[int, float, float]]:
    wins = []
    for f in sorted(points_dir.glob("*/result.json")):
        p = json.loads(f.read_text())
        s, e = p.get("profiling_start_ns"), p.get("profiling_end_ns")
        if s and e:
            wins.append((int(p["concurrency"]), s / 1e9, e / 1e9))
    return wins


def range_query(base: str, query: str, start: float, end: float, step: float, timeout: float = 30) -> list[dict]:
    qs = urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"})
    with urllib.request.urlopen(f"{base.rstrip('/')}/api/v1/query_range?{qs}", timeout=timeout) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError(f"{query}: {body.get('error', body)}")
    return body["data"]["result"]


def scrape(base: str, windows: list[tuple[int, float, float]], queries: dict[str, str], step: float) -> pd.DataFrame:
    rows = []
    for conc, start, end in windows:
        # Pad by one step so that a short point still gets a sample at both edges.
        for name, q in queries.items():
            for series in range_query(base, q, start - step, end + step, step):
                labels = json.dumps(series.get("metric", {}), sort_keys=True)
                for ts, val in series.get("values", []):
                    rows.append({"concurrency": conc, "metric": name, "labels": labels,
                                 "ts": float(ts), "value": float(val)})
    return pd.DataFrame(rows, columns=["concurrency", "metric", "labels", "ts", "value"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.scrape")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--prometheus-url", default="")
    ap.add_argument("--queries", default=str(params_dir() / "metrics.yaml"))
    a = ap.parse_args(argv)
    run = Path(a.run_dir)
    out = run / "metrics"
    out.mkdir(parents=True, exist_ok=True)
    if not a.prometheus_url:
        (out / "SKIPPED").write_text("no Prometheus URL was given (parameter prometheus-url)\n")
        print("scrape: no Prometheus URL; server metrics skipped")
        return 0
    spec = yaml.safe_load(Path(a.queries).read_text())
    windows = point_windows(run / "points")
    try:
        df = scrape(a.prometheus_url, windows, spec["queries"], float(spec.get("step_s", 5)))
    except Exception as e:  # Prometheus down: keep the run, say why metrics are missing
        (out / "SKIPPED").write_text(f"Prometheus at {a.prometheus_url} failed: {e}\n")
        print(f"scrape: Prometheus failed, metrics skipped: {e}", file=sys.stderr)
        return 0
    df.to_parquet(out / "server_metrics.parquet", index=False)
    print(f"scrape: {len(df)} samples of {df['metric'].nunique() if len(df) else 0} metrics over {len(windows)} points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
