"""The server's own first-token figures of a point, beside the client's (issue 32, item 1).

The client's TTFT is when the first text chunk reached AIPerf; the server's is when the first token left the
engine (or the Dynamo frontend). They should agree within a tolerance, and where they do not, the client's
number does not mean what its column says. Each figure is a window mean: the difference of a cumulative
histogram's _sum and _count between the point's start and its end (AIPerf's profiling phase, result.json),
read from the run's scraped series (metrics/server_metrics.parquet; params/metrics.yaml `frontend_ttft_sum_s`
... `engine_output_tokens`, which cite the metric names).

Source, strongest first: the engine's histograms (vLLM `vllm:time_to_first_token_seconds`, SGLang's
`sglang:...`), else the Dynamo frontend's (`dynamo_frontend_time_to_first_token_seconds`). Local mode's
Prometheus scrapes the frontend only, so its figures are the frontend's. Where Prometheus has no sample after
a window (a run's last point: the exit handler stops the frontend beside the scrape, and the staleness marker
Prometheus writes for a target that stops answering ends the series: prometheus docs/querying/basics.md,
"Staleness"), the frontend's histograms as AIPerf scraped them over its profiling phase
(infersweep.aiperf.server_export.frontend_token_figures) stand in, and the source says so.

Precision: a Prometheus sample at time t is the last scrape at or before t, so the start is exact to one scrape
interval (local mode: 1 s): tokens of the warm-up's last scrape interval can count in the window (its first
tokens came long before). The end is read after the window, when nothing runs. A counter that went down
inside the window (a restarted process) gives no figure.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.aiperf.server_export import frontend_token_figures
from infersweep.results.files import SERVER_METRICS_FILE

COLUMNS = ("server_ttft_avg_ms", "server_itl_avg_ms", "server_output_tokens", "server_figures_source")
SOURCES = ("engine", "frontend")  # strongest first
EDGE_S = 1e-3  # a sample at the window's edge, to float rounding of the range query's step grid
# The scrape pads each window by one query step (params/metrics.yaml step_s: 5 s; server_metrics.scrape_windows):
# the end is read from the last sample of that pad, so the tokens of the window's last scrape interval count.
# Nothing runs then: the next point's AIPerf has not started (a new step and an AIPerf start take longer).
END_PAD_S = 5.0


def window_delta(samples: pd.DataFrame, metric: str, start_s: float, end_s: float) -> float | None:
    """A cumulative series' growth over [start_s, end_s]: from its last sample at or before the start to its last
    within END_PAD_S after the end (summed over label sets), None without both or when it went down (a reset)."""
    s = samples[samples["metric"] == metric]
    if s.empty:
        return None
    by_ts = s.groupby("ts")["value"].sum().sort_index()
    before = by_ts[by_ts.index <= start_s + EDGE_S]
    after = by_ts[(by_ts.index >= end_s - EDGE_S) & (by_ts.index <= end_s + END_PAD_S + EDGE_S)]
    if before.empty or after.empty:
        return None
    delta = float(after.iloc[-1]) - float(before.iloc[-1])
    return delta if delta >= 0 and math.isfinite(delta) else None


def figures(samples: pd.DataFrame, start_s: float, end_s: float) -> dict[str, Any]:
    """The server figures of one window: the first source whose TTFT histogram counted requests in it."""
    empty = dict.fromkeys(COLUMNS)
    if samples is None or samples.empty or not (end_s > start_s):
        return empty
    for source in SOURCES:
        count = window_delta(samples, f"{source}_ttft_count", start_s, end_s)
        total = window_delta(samples, f"{source}_ttft_sum_s", start_s, end_s)
        if not count or total is None:
            continue
        itl_n = window_delta(samples, f"{source}_itl_count", start_s, end_s)
        itl_sum = window_delta(samples, f"{source}_itl_sum_s", start_s, end_s)
        # Output tokens as the Dynamo frontend streamed them, wherever it was scraped: an engine's own counter may
        # count a request's tokens only when it finishes (SGLang 0.5.14: sglang:generation_tokens_total grows in
        # TokenizerMetricsCollector.observe_one_finished_request, srt/observability/metrics_collector.py, called
        # from tokenizer_manager.py for finished requests), so its window holds whole the warm-up requests that
        # finished after the counter's last sample before the window: on the H200 (2026-12-05, SGLang c2-c8) it read
        # exactly concurrency x 256 tokens above the client at every point, while the frontend's counter read the
        # client's count within 0.4-2.2 %. vLLM's vllm:generation_tokens counts each step's tokens, as the frontend.
        # A frontend scraped without a sample after this window (the run's last point: the teardown stopped it)
        # gives no count, not the engine's.
        tokens = window_delta(samples, "frontend_output_tokens", start_s, end_s)
        if tokens is None and not (samples["metric"] == "frontend_output_tokens").any():
            tokens = window_delta(samples, f"{source}_output_tokens", start_s, end_s)
        return {
            "server_ttft_avg_ms": 1000.0 * total / count,
            "server_itl_avg_ms": 1000.0 * itl_sum / itl_n if itl_n and itl_sum is not None else None,
            "server_output_tokens": int(round(tokens)) if tokens is not None else None,
            "server_figures_source": f"{source} ({int(round(count))} first tokens in the window)",
        }
    return empty


_CACHE: dict[Path, tuple[float, pd.DataFrame]] = {}


def run_samples(run_dir: Path) -> pd.DataFrame | None:
    """The run's scraped series (metrics/server_metrics.parquet), None when the run has none."""
    path = Path(run_dir) / SERVER_METRICS_FILE
    try:
        mtime = path.stat().st_mtime
    except OSError:
        return None
    cached = _CACHE.get(path)
    if cached is None or cached[0] != mtime:
        _CACHE[path] = (mtime, pd.read_parquet(path))
    return _CACHE[path][1]


def point_figures(point_dir: Path, result: dict) -> dict[str, Any]:
    """The server figures of the point in point_dir (<run>/points/<point>), from its run's scraped series."""
    start, end = result.get("profiling_start_ns"), result.get("profiling_end_ns")
    samples = run_samples(Path(point_dir).parent.parent)
    found = figures(samples, start / 1e9, end / 1e9) if samples is not None and start and end else {}
    if found.get("server_ttft_avg_ms") is not None:
        return found
    return aiperf_export_figures(Path(point_dir) / "aiperf") or found or dict.fromkeys(COLUMNS)


def aiperf_export_figures(aiperf_dir: Path) -> dict[str, Any] | None:
    """The frontend's figures from AIPerf's own server-metrics export of the point (the fallback: Prometheus
    had no sample after the window, as for a run's last point, whose frontend the exit handler's teardown stops
    beside the scrape; H200, SGLang c1 r2 of benchmarks/measured/h200-2026-12-04/sglang-qwen3-32b-bf16-c1-c64)."""
    got = frontend_token_figures(aiperf_dir)
    if got is None:
        return None
    return {
        "server_ttft_avg_ms": got["ttft_avg_ms"],
        "server_itl_avg_ms": got.get("itl_avg_ms"),
        "server_output_tokens": None,  # the export's phase is not the records' window (frontend_token_figures)
        "server_figures_source": f"frontend via AIPerf's export ({int(round(got['first_tokens']))} first tokens "
        "in the profiling phase)",
    }
