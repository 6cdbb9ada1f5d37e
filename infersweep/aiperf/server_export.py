"""The Dynamo frontend's own prompt-cache count, from the server metrics AIPerf scraped during the point.

AIPerf reads prompt-cache hits from each response's `usage.prompt_tokens_details.cached_tokens`
(aiperf 0.13.0 metrics/types/usage_cache_metrics.py) and, when no response carries it, reports no
prompt-cache metric at all (metrics/cache_reporting_hint.py CACHE_REPORTING_HINT). The Dynamo frontend
(ai-dynamo 1.3.1) leaves `prompt_tokens_details` out of a response whose prompt had no cached tokens, so a
point whose prompts all missed the cache reads as "unknown", not 0 %: the warm-up check could not tell a
clean point from one it never judged. The frontend's `dynamo_frontend_cached_tokens` histogram ("Number of
cached tokens (prefix cache hits) per request") and `dynamo_frontend_input_sequence_tokens` say the same thing
from the server, and AIPerf 0.13 scrapes them into `server_metrics_export.json`, split by phase: `metrics` is
the profiling phase, `warmup_metrics` the warm-up (aiperf 0.13.0 server_metrics/json_exporter.py
`_build_hybrid_metrics` over endpoint_summaries / warmup_endpoint_summaries). On every committed H200 point
with a drained window where both exist they agree exactly (tests/aiperf/test_server_export.py). AIPerf splits by
the phases' time windows, so behind a seamless window (flags.py seamless_warmup) the profiling phase's histograms
also hold up to `concurrency` of the warm-up's last requests (mocker, c4 after 8 warm-up requests: 17-20
observations for 16 measured requests), and the two figures part: on the H200 KV study with seamless windows
(benchmarks/measured/h200-2026-12-04/gpu-kv-vs-rr-seamless) the frontend's read 1.1-4.2 points above AIPerf's
(57.9 -> 59.2 % rr, 79.1 -> 83.2 % kv-5). So this count is only the fallback: a point is judged on AIPerf's
per-response figure wherever a response carried one. Where none did (prompts that all missed), the warm-up's
prompts are as fresh as the measured ones (flags.dataset_entries gives every request a prompt of its own), so
the share is read over requests of the same kind.

Standard library only (this package runs in the AIPerf image)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

SERVER_METRICS_FILE = "server_metrics_export.json"
CACHED = "dynamo_frontend_cached_tokens"
INPUT = "dynamo_frontend_input_sequence_tokens"
SOURCE = f"Dynamo frontend {CACHED} / {INPUT} over the profiling phase (AIPerf {SERVER_METRICS_FILE})"


def _histogram(metrics: dict[str, Any], name: str) -> tuple[float, float] | None:
    """(count, sum) over every series of a histogram in the export; None when the frontend did not export it. A
    histogram nothing was observed into has stats {"count": 0} and no sum: (0, 0)."""
    family = metrics.get(name)
    if not isinstance(family, dict) or family.get("type") != "histogram":
        return None
    count = total = 0.0
    for series in family.get("series") or []:
        stats = series.get("stats") or {}
        if stats.get("count"):
            count += float(stats["count"])
            total += float(stats.get("sum") or 0.0)
    return count, total


def _profiling_metrics(aiperf_dir: Path) -> dict[str, Any] | None:
    """The export's profiling-phase metrics, None without an export (or one of another phase)."""
    try:
        export = json.loads((Path(aiperf_dir) / SERVER_METRICS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(export, dict) or export.get("metrics_phase", "profiling") != "profiling":
        return None
    return export.get("metrics") or {}


def frontend_cache_read_pct(aiperf_dir: Path) -> float:
    """Percent of the measured prompts' tokens the frontend saw served from the prefix cache; NaN when the
    point has no server-metrics export or the frontend exported neither histogram (another server)."""
    metrics = _profiling_metrics(aiperf_dir)
    if metrics is None:
        return math.nan
    cached, prompt = _histogram(metrics, CACHED), _histogram(metrics, INPUT)
    if cached is None or prompt is None or not prompt[1]:
        return math.nan
    return 100.0 * cached[1] / prompt[1]


TTFT = "dynamo_frontend_time_to_first_token_seconds"
ITL = "dynamo_frontend_inter_token_latency_seconds"


def frontend_token_figures(aiperf_dir: Path) -> dict[str, float] | None:
    """The frontend's own first-token and inter-token means over AIPerf's profiling phase, as AIPerf scraped them
    (its server-metrics manager fetches the frontend's /metrics about 3 times a second and splits by the
    phases' time ranges, as for the cache count above): {ttft_avg_ms, itl_avg_ms, first_tokens}, None when the
    export holds no first token. Run-level Prometheus series are read first (infersweep.results.server_figures);
    this is their fallback for a window Prometheus has no sample after, the run's last point, whose frontend the
    exit handler's teardown stops beside the scrape.

    No token count: behind a seamless window AIPerf's profiling phase opens before the first measured request
    (infersweep/aiperf/phase_overlap.py), so the export's output-token total also holds the warm-up's tails over
    a span the records do not delimit (H200 SGLang c64: 180,604 tokens for 163,840 measured, 703 first tokens
    for 640 requests). The two means are those of the same steady loop, and first_tokens says how many."""
    metrics = _profiling_metrics(aiperf_dir)
    if metrics is None:
        return None
    first_tokens, ttft_sum = _histogram(metrics, TTFT) or (0.0, 0.0)
    if not first_tokens:
        return None
    out: dict[str, float] = {"ttft_avg_ms": 1000.0 * ttft_sum / first_tokens, "first_tokens": first_tokens}
    itl_n, itl_sum = _histogram(metrics, ITL) or (0.0, 0.0)
    if itl_n:
        out["itl_avg_ms"] = 1000.0 * itl_sum / itl_n
    return out
