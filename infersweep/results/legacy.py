"""Reading a results table of any schema version this code knows: v7 as it is, v1/v2 mapped to its names, v3
with the server figures v4 added (server_figures.py) as NA, v3/v4 with v5's stop_reason and requests_extended
(the point's adaptive length) as NA, v3-v5 with v6's warmup_requests and warmup_mode as NA, v3-v6 with v7's
steadiness trend p-values (steady_throughput_trend_p, steady_ttft_trend_p) as NA.

v1/v2 tables (summary/results.parquet written before schema v3: tests/fixtures, benchmarks/measured/) carry
~800 columns: read_point's names (ttft_ms_p50, output_tok_s), v0 aliases (ttft_p50_ms, latency_p50_ms),
every AIPerf statistic as `<metric>__<stat>` and timestamps as text. `upgrade_table` renames them to the
canonical names of infersweep.metrics (one column per metric), moves the AIPerf statistics out
(`raw_from_wide` gives them as a v3 raw table), types the columns and reads the times as UTC, so every
reader (compare, regress, report, experiment report) sees one shape.
"""

from __future__ import annotations

import json

import pandas as pd

from infersweep.errors import UserError
from infersweep.metrics import ALIASES, normalize_slo
from infersweep.results.columns import OPTIONAL, RAW_COLUMNS, SCHEMA_VERSION, SUMMARY_COLUMNS

OLD_VERSIONS = (
    "infersweep.results/v1",
    "infersweep.results/v2",
    "infersweep.results/v3",
    "infersweep.results/v4",
    "infersweep.results/v5",
    "infersweep.results/v6",
)
READABLE_VERSIONS = OLD_VERSIONS + (SCHEMA_VERSION,)
# Non-metric columns renamed in v3 (metrics: infersweep.metrics.ALIASES).
RENAMED = {
    "send_delay_ms_p99": "send_delay_p99_ms",
    "predicted_ttft_ms": "predicted_ttft_avg_ms",
    "predicted_itl_ms": "predicted_itl_avg_ms",
    "predicted_output_tok_s": "predicted_output_throughput_tok_s",
}
KEY = ["run_id", "recipe", "concurrency", "repetition", "status"]


class TableVersionError(UserError, ValueError):
    """A results table this reader cannot read (no or an unknown schema_version, key columns missing): the
    message names the file and how to rebuild it."""


def table_version(df: pd.DataFrame, where: str) -> str:
    """The table's schema version; ValueError naming what is wrong for a table this code cannot read."""
    if "schema_version" not in df.columns:
        raise TableVersionError(
            f"{where}: no schema_version column; written before infersweep.results/v1 "
            "(re-run `python -m steps.summarize` on the run folder to rebuild it)"
        )
    versions = set(df["schema_version"].dropna().unique())
    if versions and not versions <= set(READABLE_VERSIONS):
        raise TableVersionError(
            f"{where}: schema_version {sorted(versions)}, this reader knows {list(READABLE_VERSIONS)}"
        )
    missing = [c for c in KEY if c not in df.columns]
    if missing:
        raise TableVersionError(f"{where}: missing key columns {missing}")
    return sorted(versions)[0] if versions else SCHEMA_VERSION


def _renames(columns: list[str]) -> dict[str, str]:
    """old column -> canonical name, one source per target: read_point's own name first, then a v0 alias,
    then AIPerf's `<metric>__<stat>` (all three hold the same number in a v2 table)."""
    out: dict[str, str] = {}
    taken: set[str] = set(c for c in columns if c in SUMMARY_COLUMNS)
    for rank in (0, 1):
        for c in columns:
            new = ALIASES.get(c) or RENAMED.get(c)
            # a statistic the v3 summary does not carry (ttft_ms_p95) lives in the raw table only
            if not new or new not in SUMMARY_COLUMNS or new in taken or ("__" in c) != bool(rank):
                continue
            out[c] = new
            taken.add(new)
    return out


def upgrade_table(df: pd.DataFrame, where: str = "results table") -> pd.DataFrame:
    """A table of any readable version, as a v3 table (its old version in df.attrs['upgraded_from'])."""
    from infersweep.results.table import apply_types

    version = table_version(df, where)
    if version == SCHEMA_VERSION:
        return apply_types(df.copy())
    renames = _renames(list(df.columns))
    keep = [c for c in df.columns if c in renames or (c not in ALIASES and "__" not in c)]
    out = df[keep].rename(columns=renames)
    if "slo" in out.columns:
        out["slo"] = [_slo_json(v) for v in out["slo"]]
    out["schema_version"] = SCHEMA_VERSION
    for col in SUMMARY_COLUMNS:  # a column v3 added (osl_requested, ...): NA, so every reader sees one shape
        if col not in out.columns and col not in OPTIONAL:
            out[col] = None
    known = [c for c in SUMMARY_COLUMNS if c in out.columns]
    out = apply_types(out[known + [c for c in out.columns if c not in SUMMARY_COLUMNS]].copy())
    out.attrs["upgraded_from"] = version
    return out


def _slo_json(value):
    if not isinstance(value, str) or not value:
        return value
    try:
        return json.dumps(normalize_slo(json.loads(value)), sort_keys=True)
    except (ValueError, TypeError, AttributeError):
        return value


def raw_from_wide(df: pd.DataFrame) -> pd.DataFrame:
    """The `<metric>__<stat>` columns of a v1/v2 table as a v3 raw table (units unknown there: '')."""
    from infersweep.metrics import METRICS
    from infersweep.results.table import finish_raw

    summary_of = {m.aiperf: name for name, m in METRICS.items() if m.aiperf}
    stats = [c for c in df.columns if "__" in c]
    rows = []
    for _, r in df.iterrows():
        key = {
            "run_id": r.get("run_id") or "",
            "concurrency": r.get("concurrency"),
            "repetition": r.get("repetition"),
            "request_rate": float(r.get("request_rate") or 0.0),
        }
        for c in stats:
            if pd.notna(r[c]):
                metric, stat = c.split("__", 1)
                rows.append(
                    {
                        **key,
                        "metric": metric,
                        "stat": stat,
                        "value": float(r[c]),
                        "unit": "",
                        "column": summary_of.get((metric, stat)),
                    }
                )
    return finish_raw(pd.DataFrame(rows, columns=RAW_COLUMNS[:-1]))
