"""The GPU columns of a point from NVML samples (local GPU runs): the names a cluster run's DCGM queries give.

Samples are JSON lines {t_ns, gpu, power_w, energy_j, sm_util_pct, mem_util_pct, mem_used_mib}
(infersweep.local.gpu.telemetry.NvmlSampler). For a point's profiling window [start_ns, end_ns] (AIPerf's,
from its result.json) each GPU's energy is the difference of its energy counter across the window (or, where
the counter is absent, power integrated over the samples); power, utilisation and memory are averaged (memory:
the maximum). Columns, as params/metrics.yaml names the DCGM ones: gpu_power_w (mean per GPU),
gpu_power_total_w, gpu_utilization_pct, gpu_memory_util_pct, gpu_memory_used_mib, gpu_count,
gpu_energy_j, energy_j_per_output_token, telemetry_samples.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable

GPU_TELEMETRY_ENV = "INFERSWEEP_GPU_TELEMETRY"  # the samples file, when the run had one
COLUMNS = [
    "gpu_power_w",
    "gpu_power_total_w",
    "gpu_utilization_pct",
    "gpu_memory_util_pct",
    "gpu_memory_used_mib",
    "gpu_count",
    "gpu_energy_j",
    "energy_j_per_output_token",
    "telemetry_samples",
]


def read_samples(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in Path(path).read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:  # a line torn by a kill mid-write
            continue
    return out


def _mean(xs: Iterable[float | None]) -> float:
    kept = [x for x in xs if x is not None]
    return sum(kept) / len(kept) if kept else math.nan


def window_columns(
    samples: list[dict[str, Any]], start_ns: int | None, end_ns: int | None, output_tokens: float | None
) -> dict[str, float]:
    """The GPU columns of one window; NaN everywhere when the window has fewer than two samples."""
    nan = {c: math.nan for c in COLUMNS}
    if not start_ns or not end_ns or end_ns <= start_ns:
        return nan
    inside = [s for s in samples if start_ns <= s["t_ns"] <= end_ns]
    gpus = sorted({s["gpu"] for s in inside})
    if not gpus or len(inside) < 2 * len(gpus):
        return nan | {"telemetry_samples": float(len(inside))}
    energy = 0.0
    per_gpu_power = []
    for g in gpus:
        ss = sorted((s for s in inside if s["gpu"] == g), key=lambda s: s["t_ns"])
        span_s = (ss[-1]["t_ns"] - ss[0]["t_ns"]) / 1e9
        if all("energy_j" in s for s in (ss[0], ss[-1])) and ss[-1]["energy_j"] >= ss[0]["energy_j"] and span_s > 0:
            e = ss[-1]["energy_j"] - ss[0]["energy_j"]
        else:  # trapezoids over the power samples
            e = sum(
                (b["t_ns"] - a["t_ns"]) / 1e9 * (a.get("power_w", 0) + b.get("power_w", 0)) / 2
                for a, b in zip(ss, ss[1:], strict=False)
            )
        # Scale the sampled span to the whole window (the first and last sample sit inside it).
        window_s = (end_ns - start_ns) / 1e9
        energy += e * (window_s / span_s if span_s > 0 else 1.0)
        per_gpu_power.append(_mean(s.get("power_w") for s in ss))
    out = {
        "gpu_power_w": _mean(per_gpu_power),
        "gpu_power_total_w": sum(per_gpu_power),
        "gpu_utilization_pct": _mean(s.get("sm_util_pct") for s in inside),
        "gpu_memory_util_pct": _mean(s.get("mem_util_pct") for s in inside),
        "gpu_memory_used_mib": max((s.get("mem_used_mib") or 0) for s in inside),
        "gpu_count": float(len(gpus)),
        "gpu_energy_j": energy,
        "telemetry_samples": float(len(inside)),
    }
    out["energy_j_per_output_token"] = energy / output_tokens if output_tokens else math.nan
    return out


def add_columns(df, points_dir: Path, samples_file: Path):
    """df with the GPU columns filled per point (matched on concurrency, repetition and request rate)."""
    from infersweep.results.table import point_dirs, point_identity, read_result, result_metrics

    samples = read_samples(samples_file) if Path(samples_file).is_file() else []
    by_key = {}
    for d in point_dirs(points_dir):
        result = read_result(d)
        conc, rep = point_identity(d, result)
        start, end = result.get("profiling_start_ns"), result.get("profiling_end_ns")
        tok_s = result_metrics(result).get("output_throughput_tok_s")
        tokens = tok_s * (end - start) / 1e9 if tok_s and start and end else None
        by_key[(conc, rep, float(result.get("request_rate") or 0.0))] = window_columns(samples, start, end, tokens)
    for col in COLUMNS:
        df[col] = [
            by_key.get((r.concurrency, r.repetition, float(r.request_rate or 0.0)), {}).get(col, math.nan)
            for r in df.itertuples()
        ]
    return df
