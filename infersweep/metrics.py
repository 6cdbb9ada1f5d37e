"""The metric vocabulary: one canonical name per metric, its unit, which way is better, and every old spelling.

This is the name registry every part of infersweep reads metric names from: the results table
(infersweep.results.table and its column dictionary infersweep.results.columns), read_point's `metrics`
(infersweep.aiperf), compare, regress, baseline, reports, predictions, a recipe's `slo:` and
`regression.tolerances` keys and an experiment's claims. Below both the recipe and results/ (rendering imports
this module, never results/). Pure Python, no pandas: a recipe's validation pays nothing for it.

The naming scheme: `<metric>_<stat>_<unit>` for a statistic of a distribution (ttft_p50_ms, itl_avg_ms,
osl_avg_tok, output_throughput_p50_tok_s_per_user) and `<metric>_<unit>` for one number per point
(output_throughput_tok_s, request_throughput_req_s, goodput_req_s, error_ratio). The unit is always the last
part; UNITS says what each suffix means. Keys and labels (run_id, concurrency, status, valid, ...) are not
metrics and carry no unit suffix; the column dictionary (docs/columns.md) gives every column's unit.

Old spellings (ALIASES): the results table v1/v2 names (ttft_ms_p50, output_tok_s, tok_s_per_user, error_rate),
its v0 aliases (latency_p50_ms), AIPerf's own `<metric>__<stat>` columns (time_to_first_token__p50) and the
old SLO key tok_s_user_min. `canonical()` maps them to the one name; readers of old tables and recipes use it.
"""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass
from typing import Any

from infersweep.aiperf import DISTRIBUTIONS, STATS, metric_name
from infersweep.aiperf import SCALARS as AIPERF_SCALARS
from infersweep.errors import UserError

__all__ = [
    "Metric",
    "METRICS",
    "UNITS",
    "ALIASES",
    "HEADLINE",
    "LOWER_IS_BETTER",
    "HIGHER_IS_BETTER",
    "SLO_KEYS",
    "DEFAULT_TOLERANCES",
    "DEFAULT_Z",
    "canonical",
    "direction",
    "normalize_tolerances",
    "normalize_slo",
    "slo_bound_op",
    "STATS",
    "label",
]

# Unit suffix -> what it means (the last part of every metric name).
UNITS = {
    "ms": "milliseconds",
    "s": "seconds",
    "tok": "tokens",
    "tok_s": "tokens per second (whole deployment)",
    "tok_s_per_user": "tokens per second seen by one request (one user)",
    "tok_s_per_gpu": "tokens per second per GPU of the deployment",
    "req_s": "requests per second",
    "ratio": "a fraction between 0 and 1",
    # suffixes of the non-metric columns (GPU telemetry, cache reads): infersweep.results.columns
    "pct": "percent (0-100)",
    "w": "watts",
    "j": "joules",
    "mib": "mebibytes",
}


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str  # a key of UNITS
    better: str | None  # "lower" | "higher" | None (a token length: no better direction)
    description: str
    aiperf: tuple[str, str] | None = None  # (AIPerf summary metric, stat) this is read from, None when derived
    label: str = ""  # short header for printed tables


def _dist(aiperf: str, stats: tuple[str, ...], better: str | None, what: str, label: str) -> list[Metric]:
    short, unit = DISTRIBUTIONS[aiperf]
    return [
        Metric(
            metric_name(short, s, unit),
            unit,
            better,
            f"{what}, {s} over the point's requests",
            (aiperf, s),
            f"{label} {s}",
        )
        for s in stats
    ]


# The metrics of the results table, in column order. Every other statistic AIPerf reported is in the raw table
# (results_raw.parquet), under AIPerf's own metric and stat names.
_METRICS: list[Metric] = [
    *_dist("time_to_first_token", ("avg", "p50", "p90", "p99"), "lower", "time to first token", "TTFT ms"),
    *_dist("time_to_second_token", ("avg", "p50"), "lower", "time from the first to the second token", "TTST ms"),
    *_dist("inter_token_latency", ("avg", "p50", "p90", "p99"), "lower", "inter-token latency", "ITL ms"),
    *_dist(
        "request_latency", ("avg", "p50", "p90", "p99"), "lower", "request latency (send to last token)", "latency ms"
    ),
    *_dist("input_sequence_length", ("avg",), None, "input tokens per request", "ISL"),
    *_dist("output_sequence_length", ("avg",), None, "output tokens per request", "OSL"),
    *_dist(
        "output_token_throughput_per_user",
        ("avg", "p50"),
        "higher",
        "output tokens/s of one request (AIPerf output_token_throughput_per_user; p50 is the per-user speed "
        "SLOs and the Pareto use: the mean is dominated by requests whose few tokens arrived in one chunk)",
        "tok/s/user",
    ),
    Metric(
        "output_throughput_tok_s",
        "tok_s",
        "higher",
        "output tokens/s of the whole deployment",
        AIPERF_SCALARS["output_throughput_tok_s"],
        "output tok/s",
    ),
    Metric(
        "input_throughput_tok_s",
        "tok_s",
        "higher",
        "input tokens/s of the whole deployment",
        AIPERF_SCALARS["input_throughput_tok_s"],
        "input tok/s",
    ),
    Metric(
        "total_throughput_tok_s",
        "tok_s",
        "higher",
        "input + output tokens/s of the whole deployment",
        AIPERF_SCALARS["total_throughput_tok_s"],
        "total tok/s",
    ),
    Metric(
        "request_throughput_req_s",
        "req_s",
        "higher",
        "successful requests/s",
        AIPERF_SCALARS["request_throughput_req_s"],
        "req/s",
    ),
    Metric(
        "output_throughput_tok_s_per_gpu",
        "tok_s_per_gpu",
        "higher",
        "output_throughput_tok_s / the deployment's GPU count",
        None,
        "tok/s/GPU",
    ),
    Metric(
        "total_throughput_tok_s_per_gpu",
        "tok_s_per_gpu",
        "higher",
        "total_throughput_tok_s / the deployment's GPU count",
        None,
        "total tok/s/GPU",
    ),
    Metric(
        "goodput_req_s",
        "req_s",
        "higher",
        "requests/s that met every SLO bound (goodput_source says how)",
        None,
        "goodput req/s",
    ),
    Metric(
        "goodput_ratio", "ratio", "higher", "share of the point's requests that met every SLO bound", None, "good share"
    ),
    Metric("error_ratio", "ratio", "lower", "failed / (successful + failed) requests", None, "error share"),
]
METRICS: dict[str, Metric] = {m.name: m for m in _METRICS}
HEADLINE = [m.name for m in _METRICS if m.aiperf]  # what read_point gives the table (the rest is derived)
LOWER_IS_BETTER = tuple(m.name for m in _METRICS if m.better == "lower")
HIGHER_IS_BETTER = tuple(m.name for m in _METRICS if m.better == "higher")

# The SLO bounds a recipe may set: the bound is a maximum for a lower-is-better metric, a minimum otherwise.
SLO_KEYS = ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "output_throughput_p50_tok_s_per_user")


def _old_spellings() -> dict[str, str]:
    out: dict[str, str] = {}
    # results table v1/v2 (read_point's names until schema v3): `<prefix>_<stat>` with the unit in the prefix
    v1_prefix = {
        "time_to_first_token": "ttft_ms",
        "time_to_second_token": "ttst_ms",
        "inter_token_latency": "itl_ms",
        "request_latency": "request_latency_ms",
        "output_sequence_length": "osl",
        "input_sequence_length": "isl",
        "output_token_throughput_per_user": "tok_s_per_user",
    }
    for aiperf, (short, unit) in DISTRIBUTIONS.items():
        for s in STATS:
            new = metric_name(short, s, unit)
            out[f"{v1_prefix[aiperf]}_{s}"] = new
            out[f"{aiperf}__{s}"] = new  # AIPerf's own statistic, as the v1/v2 table spelled it
    for new, (aiperf, s) in AIPERF_SCALARS.items():
        out[f"{aiperf}__{s}"] = new
    out.update(
        {
            "output_tok_s": "output_throughput_tok_s",
            "request_per_s": "request_throughput_req_s",
            "input_tok_s": "input_throughput_tok_s",
            "total_tok_s": "total_throughput_tok_s",
            "tok_s_per_gpu": "output_throughput_tok_s_per_gpu",
            "total_tok_s_per_gpu": "total_throughput_tok_s_per_gpu",
            # v1/v2 had both tok_s_per_user (= the p50) and tok_s_per_user_avg: two columns that disagreed
            "tok_s_per_user": "output_throughput_p50_tok_s_per_user",
            "goodput_fraction": "goodput_ratio",
            "error_rate": "error_ratio",
            "tok_s_user_min": "output_throughput_p50_tok_s_per_user",  # the SLO key until schema v3
            "output_tok_s_per_gpu": "output_throughput_tok_s_per_gpu",  # a recipe baseline's key until schema v3
        }
    )
    for p in ("p50", "p90", "p99"):  # v0 aliases of the first results table
        out[f"latency_{p}_ms"] = f"request_latency_{p}_ms"
    return {old: new for old, new in out.items() if old != new}


ALIASES: dict[str, str] = _old_spellings()
_EVERY_STAT = {metric_name(s, st, u) for s, u in DISTRIBUTIONS.values() for st in STATS}


def label(name: str) -> str:
    """The short header of a metric in printed tables (the name itself for a non-metric column)."""
    m = METRICS.get(name)
    return m.label if m and m.label else name


class MetricNameError(UserError, ValueError):
    """A metric name (a --metric, --tolerance, --slo, an SLO key) that is not one of the results table's, or
    not one that fits there; the message names the closest names and docs/columns.md. A ValueError too: a
    pydantic validator that calls canonical() reports it at its field."""


def canonical(name: str, where: str = "", *, warn: bool = False) -> str:
    """The canonical name of `name` (itself, or the new name of an old spelling). `warn`: say that an old
    spelling is deprecated (a recipe's keys); ValueError naming the nearest names for an unknown one."""
    if name in METRICS:
        return name
    if name in ALIASES:
        new = ALIASES[name]
        if warn:
            warnings.warn(
                f"{where or 'metric'}: {name!r} is the old spelling of {new!r}; write {new!r} (the old one will be "
                "refused in a later version; docs/columns.md lists the names)",
                FutureWarning,
                stacklevel=3,
            )
        return new
    near = difflib.get_close_matches(name, list(METRICS) + list(ALIASES), n=3, cutoff=0.6)
    near = list(dict.fromkeys(ALIASES.get(n, n) for n in near))
    hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    extra = (
        " (that statistic is in the raw table results_raw.parquet, not the results table)"
        if name in _EVERY_STAT
        else ""
    )
    head = f"{where}: unknown metric {name!r}" if where else f"{name}: unknown metric"
    raise MetricNameError(f"{head}{extra}{hint} Metrics: docs/columns.md")


def direction(metric: str) -> str:
    """'lower' or 'higher' (is better); ValueError for a metric without a known direction."""
    name = canonical(metric)
    better = METRICS[name].better
    if better is None:
        raise MetricNameError(
            f"{metric}: no known better direction; metrics with one: {sorted(LOWER_IS_BETTER + HIGHER_IS_BETTER)}"
        )
    return better


def slo_bound_op(metric: str) -> str:
    """'<=' for a lower-is-better SLO metric (the bound is a maximum), '>=' otherwise (a minimum)."""
    return "<=" if direction(metric) == "lower" else ">="


def normalize_slo(slo: dict[str, Any] | None, where: str = "slo", *, warn: bool = False) -> dict[str, float]:
    """An SLO mapping under canonical keys, empty bounds dropped (old spellings mapped: old runs' contexts)."""
    out: dict[str, float] = {}
    for key, bound in (slo or {}).items():
        if bound is None or bound is False:
            continue
        name = canonical(key, f"{where}.{key}", warn=warn)
        if name not in SLO_KEYS:
            raise MetricNameError(f"{where}.{key}: not an SLO metric; SLO keys: {list(SLO_KEYS)}")
        out[name] = float(bound)
    return out


# Regression tolerances when a recipe names none (infersweep.results.regression.judge_run).
DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "ttft_p50_ms": {"rel": 0.10},
    "ttft_p99_ms": {"rel": 0.20},  # tails are noisier than medians
    "itl_p50_ms": {"rel": 0.05},
    "request_latency_p50_ms": {"rel": 0.05},
    "output_throughput_tok_s": {"rel": 0.05},
    "error_ratio": {"abs": 0.01},
}
DEFAULT_Z = 3.0  # standard errors a change must exceed to count as real (many cells are tested at once)


def normalize_tolerances(tolerances: dict[str, Any] | None, *, warn: bool = False) -> dict[str, dict[str, float]]:
    """Defaults overridden per metric by `tolerances` (keys: canonical metric names; old spellings mapped, with
    a deprecation message when `warn`). One clear error for a bad entry."""
    out = {k: dict(v) for k, v in DEFAULT_TOLERANCES.items()}
    for key, spec in (tolerances or {}).items():
        if key in ("z",):
            continue
        metric = canonical(key, f"regression.tolerances.{key}", warn=warn)
        direction(metric)  # ValueError for a metric without a better direction
        if spec is None or spec is False:
            out.pop(metric, None)  # explicitly not checked
            continue
        if isinstance(spec, (int, float)) and not isinstance(spec, bool):
            spec = {"rel": float(spec)}
        if not isinstance(spec, dict) or not set(spec) <= {"rel", "abs"} or len(spec) != 1:
            raise ValueError(f"tolerance for {key}: give a number (relative, 0.05 = 5%) or {{rel: r}} or {{abs: a}}")
        ((kind, value),) = spec.items()
        if not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"tolerance for {key}: {kind} must be a positive number, got {value!r}")
        out[metric] = {kind: float(value)}
    return out
