"""The metric vocabulary: the results metrics' names, which way is better, and the default regression tolerances.

Below both the recipe (a recipe's `regression.tolerances` and an experiment's claims name metrics and need
their direction) and results/ (the table's columns, compare, regress): rendering imports this module, never
results/. Pure Python, no pandas: a recipe's validation pays nothing for it.

The names are those read_point gives (infersweep.aiperf): `<prefix>_<stat>` for each AIPerf
distribution, plus the single numbers of SCALARS.
"""

from __future__ import annotations

from typing import Any

from infersweep.aiperf import DISTRIBUTIONS, STATS
from infersweep.aiperf import SCALARS as AIPERF_SCALARS

__all__ = ["STATS", "SCALARS", "LATENCY_PREFIXES", "LENGTH_PREFIXES", "HEADLINE", "LOWER_IS_BETTER",
           "HIGHER_IS_BETTER", "V0_ALIASES", "DEFAULT_TOLERANCES", "DEFAULT_Z", "direction", "normalize_tolerances"]

# Distributions in ms are latencies (lower is better); the others are token lengths (no better direction).
LATENCY_PREFIXES = tuple(p for p in DISTRIBUTIONS.values() if p.endswith("_ms"))
LENGTH_PREFIXES = tuple(sorted(p for p in DISTRIBUTIONS.values() if not p.endswith("_ms")))
SCALARS = tuple(AIPERF_SCALARS)
HEADLINE = [f"{p}_{s}" for p in LATENCY_PREFIXES + LENGTH_PREFIXES for s in STATS] + list(SCALARS)

# Which way is better, for every metric a comparison or a regression check may look at.
LOWER_IS_BETTER = tuple(f"{p}_{s}" for p in LATENCY_PREFIXES for s in STATS) + ("error_rate",)
HIGHER_IS_BETTER = ("output_tok_s", "request_per_s", "tok_s_per_user_avg", "tok_s_per_user_p50", "tok_s_per_user",
                    "input_tok_s", "total_tok_s", "tok_s_per_gpu", "total_tok_s_per_gpu", "goodput_req_s",
                    "goodput_fraction")

# v0 alias -> v1 name: the column names of the first results table (all latencies).
V0_ALIASES = {f"{short}_{p}_ms": f"{key}_{p}" for short, key in
              {"ttft": "ttft_ms", "itl": "itl_ms", "latency": "request_latency_ms"}.items()
              for p in ("p50", "p90", "p99")}


def direction(metric: str) -> str:
    """'lower' or 'higher' (is better); ValueError for a metric without a known direction."""
    if metric in LOWER_IS_BETTER or metric in V0_ALIASES:
        return "lower"
    if metric in HIGHER_IS_BETTER:
        return "higher"
    raise ValueError(f"{metric}: no known better direction; metrics with one: "
                     f"{sorted(LOWER_IS_BETTER + HIGHER_IS_BETTER)}")


# Regression tolerances when a recipe names none (infersweep.results.regression.judge_run).
DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "ttft_ms_p50": {"rel": 0.10},
    "ttft_ms_p99": {"rel": 0.20},  # tails are noisier than medians
    "itl_ms_p50": {"rel": 0.05},
    "request_latency_ms_p50": {"rel": 0.05},
    "output_tok_s": {"rel": 0.05},
    "error_rate": {"abs": 0.01},
}
DEFAULT_Z = 3.0  # standard errors a change must exceed to count as real (many cells are tested at once)


def normalize_tolerances(tolerances: dict[str, Any] | None) -> dict[str, dict[str, float]]:
    """Defaults overridden per metric by `tolerances`. One clear error for a bad entry."""
    out = {k: dict(v) for k, v in DEFAULT_TOLERANCES.items()}
    for metric, spec in (tolerances or {}).items():
        if metric in ("z",):
            continue
        direction(metric)  # ValueError for a metric without a better direction
        if spec is None or spec is False:
            out.pop(metric, None)  # explicitly not checked
            continue
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            spec = {"rel": float(spec)}
        if not isinstance(spec, dict) or not set(spec) <= {"rel", "abs"} or len(spec) != 1:
            raise ValueError(f"tolerance for {metric}: give a number (relative, 0.05 = 5%) or {{rel: r}} or {{abs: a}}")
        (kind, value), = spec.items()
        if not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"tolerance for {metric}: {kind} must be a positive number, got {value!r}")
        out[metric] = {kind: float(value)}
    return out
