"""What changes when the measured window follows the warm-up without a drain (flags.py seamless_warmup): AIPerf's
phase window, which its throughputs divide by, opens before the first measured request. read_point
(artifacts.py) reads them over the requests' own span instead. (The warm-up's last requests also run inside the
window: steadiness.read_window gives the delivered load those.)

Standard library only: this file is copied into the AIPerf image (images/aiperf.Dockerfile).
"""

from __future__ import annotations

import math

# What a point's throughputs (artifacts.SCALARS) are divided by. AIPerf 0.13 divides all four by the phase's
# window (metrics/metric_dicts.py MetricResultsDict.observation_duration: window_end_ns - window_start_ns, set
# from the export context's phase start and end in metrics/accumulator.py _summarize_for_export_context; the
# metrics: metrics/types/request_throughput_metric.py, output_token_throughput_metrics.py,
# input_token_throughput_metric.py, total_token_throughput.py). Drained, the profiling phase opens as its first
# request is sent, and that window and the requests' span agree (mocker: 9.084 vs 9.086 req/s). A seamless
# phase opens when the warm-up finished sending, while its first request still waits for a warm-up request to
# return: measured on the mocker, a phase window of 21.75 s around requests spanning 20.26 s, so AIPerf's req/s
# and tok/s read 6.8 % low (docs/seamless-warmup.md). Such a point's throughputs are its totals over the
# requests' own span instead: AIPerf's benchmark_duration, "from the first request to the last response"
# (metrics/types/benchmark_duration_metric.py), over the same profiling records.
THROUGHPUT_OVER_PHASE = "aiperf: totals over the profiling phase's window"
THROUGHPUT_OVER_REQUESTS = "totals over the measured requests' span (first request's start to last response)"
THROUGHPUT_TOTALS = {  # our scalar -> the AIPerf totals it divides by benchmark_duration
    "request_throughput_req_s": ("request_count",),
    "output_throughput_tok_s": ("total_osl",),
    "input_throughput_tok_s": ("total_isl",),
    "total_throughput_tok_s": ("total_isl", "total_osl"),
}


def seamless_profiling(summary: dict) -> bool:
    """Whether the profiling phase of this AIPerf summary ran seamless (its input_config, as AIPerf 0.13 dumps
    the phases: `seamless` appears only when true)."""
    phases = ((summary.get("input_config") or {}).get("phases")) or []
    return any(
        isinstance(p, dict) and (p.get("kind") or p.get("name")) == "profiling" and p.get("seamless") is True
        for p in (phases if isinstance(phases, list) else [])
    )


def _avg(summary: dict, name: str) -> float | None:
    block = summary.get(name)
    value = block.get("avg") if isinstance(block, dict) else None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def throughputs_over_requests(metrics: dict, summary: dict) -> None:
    """Replace the throughputs AIPerf gave with its totals over benchmark_duration (THROUGHPUT_OVER_REQUESTS); a
    throughput AIPerf did not give stays absent."""
    duration = _avg(summary, "benchmark_duration")
    if not duration:
        return
    for ours, names in THROUGHPUT_TOTALS.items():
        totals = [_avg(summary, name) for name in names]
        if ours in metrics and all(v is not None for v in totals):
            metrics[ours] = sum(v or 0.0 for v in totals) / duration
