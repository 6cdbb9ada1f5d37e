"""The results table, version 3: one tidy row per (run, recipe, concurrency point, request rate, repetition).

Readable with plain pandas (`pd.read_parquet`). Every column, its type and unit: infersweep/results/columns.py
(docs/columns.md is generated from it); metric names: the registry infersweep/metrics.py (`ttft_p50_ms`,
`output_throughput_tok_s`, `output_throughput_p50_tok_s_per_user`, ...). Column groups:

- key: run_id, recipe, concurrency, repetition, request_rate, arrival (a rate sweep's points share the
  concurrency, their in-flight cap, and differ in request_rate; a closed-loop point has request_rate 0)
- point: status, reason, valid, validity_reasons (infersweep.results.validity), counts, duration, UTC start/end
- metrics: the headline statistics read_point gives (infersweep.aiperf) and the derived ones
  (per-GPU throughput, goodput, error_ratio); slo_pass and slo_detail
- context: the run context of context.py (recipe_hash, engine, images, model revision, topology, gpu_type, ...)

Every statistic AIPerf reported is in the raw table (`raw_table`, summary/results_raw.parquet), long format,
keyed to these rows: nothing AIPerf measured is dropped, and the summary stays a few tens of columns.
Tables of schema v1/v2 are read through infersweep.results.legacy, which maps them to these names.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.aiperf import RECORDS_FILE, SUMMARY_FILE, iter_profiling_records
from infersweep.metrics import ALIASES, HEADLINE, METRICS, normalize_slo, slo_bound_op
from infersweep.results.columns import (
    BY_NAME,
    OPTIONAL,
    RAW,
    RAW_COLUMNS,
    RAW_SCHEMA_VERSION,
    SCHEMA_VERSION,
    SUMMARY,
    SUMMARY_COLUMNS,
)
from infersweep.results.evidence import MEASURED_STATUSES, enforce, judge_slo
from infersweep.results.prompt_repeats import repeated_prompts
from infersweep.results.server_figures import point_figures
from infersweep.results.validity import MEASURE_COLUMNS, judge_point, load_thresholds, mark_saturation, point_measures

KEY = ["run_id", "recipe", "concurrency", "repetition"]
OK_STATUSES = MEASURED_STATUSES  # points whose numbers are measurements (see infersweep.aiperf)
TIMESTAMP_COLUMNS = [c.name for c in BY_NAME.values() if c.dtype.startswith("timestamp")]


# ---------------------------------------------------------------- reading a run's points


def point_dirs(points_dir: Path) -> list[Path]:
    """The point folders of a sweep (earlier attempts under <point>/attempts/ are not points)."""
    return sorted(p.parent for p in Path(points_dir).glob("*/result.json"))


def point_identity(point_dir: Path, result: dict) -> tuple[int | None, int]:
    """(concurrency, repetition): from result.json, else from the folder name `c<N>[-r<K>]`."""
    m = re.fullmatch(r"c(\d+)(?:-r(\d+))?", point_dir.name)
    conc = result.get("concurrency")
    if conc is None and m:
        conc = int(m.group(1))
    rep = result.get("repetition")
    if rep is None:
        rep = int(m.group(2)) if m and m.group(2) else 0
    return (int(conc) if conc is not None else None), int(rep)


def read_result(point_dir: Path) -> dict:
    try:
        data = json.loads((point_dir / "result.json").read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {"status": "failed", "reason": "result.json is not an object"}
    except (OSError, ValueError) as e:
        return {"status": "failed", "reason": f"unreadable result.json: {e}", "metrics": {}}


def result_metrics(result: dict) -> dict[str, float]:
    """read_point's `metrics` under canonical names: a result.json written before schema v3 (ttft_ms_p50,
    output_tok_s, ...) reads the same as a new one."""
    return {ALIASES.get(k, k): v for k, v in (result.get("metrics") or {}).items()}


def aiperf_blocks(summary_path: Path) -> dict[str, dict]:
    """AIPerf's summary metric blocks ({metric: {unit, avg, p50, ...}}); {} when unreadable."""
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    # input_config, run_info, telemetry, error_summary...: not statistics (no unit)
    return (
        {k: v for k, v in summary.items() if isinstance(v, dict) and "unit" in v} if isinstance(summary, dict) else {}
    )


def aiperf_statistics(summary_path: Path) -> dict[str, float]:
    """Every statistic of every metric block in AIPerf's summary, as `<metric>__<stat>` floats (what the
    validity checks read; the raw table carries them as rows)."""
    out: dict[str, float] = {}
    for name, block in aiperf_blocks(summary_path).items():
        for stat, value in block.items():
            if stat != "unit" and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{name}__{stat}"] = float(value)
    return out


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else math.nan


# ---------------------------------------------------------------- SLOs and goodput

PER_USER = "output_throughput_p50_tok_s_per_user"


def slo_check(row: dict[str, Any], slo: dict[str, float]) -> tuple[bool | None, str]:
    """Point-level SLO verdict and which bound decided it. None: nothing to judge (no SLO / no data).
    Each SLO key is a metric of the table; its bound is a maximum when lower is better, else a minimum."""
    if row.get("status") not in OK_STATUSES:
        return None, "no measurement"
    failed, checked = [], []
    for col, bound in normalize_slo(slo).items():
        op = slo_bound_op(col)
        value = row.get(col, math.nan)
        if not math.isfinite(value):
            failed.append(f"{col} missing")
            continue
        ok = value <= bound if op == "<=" else value >= bound
        checked.append(col)
        if not ok:
            failed.append(f"{col}={value:.4g} (bound {op} {bound:g})")
    if not checked and not failed:
        return None, "no SLO"
    return (not failed), ("; ".join(failed) if failed else "meets " + ", ".join(checked))


def request_meets_slo(record: dict, slo: dict[str, float]) -> bool:
    """One request against the SLO bounds that make sense per request.

    TTFT is judged against the p50 bound (the p99 bound where only that is given), ITL against the ITL
    bound, the request's own output rate against the per-user bound. A failed request never meets the SLO.
    """
    if record.get("error"):
        return False
    slo = normalize_slo(slo)
    m = record.get("metrics") or {}

    def val(name: str) -> float:
        v = (m.get(name) or {}).get("value")
        return _num(v)

    ttft_bound = slo.get("ttft_p50_ms") or slo.get("ttft_p99_ms")
    if ttft_bound and not val("time_to_first_token") <= ttft_bound:  # NaN fails too
        return False
    if slo.get("itl_p50_ms") and not val("inter_token_latency") <= slo["itl_p50_ms"]:
        return False
    if slo.get(PER_USER):
        rate = val("output_token_throughput_per_user")
        if math.isnan(rate):
            # All tokens arrived in one chunk (no decode interval): AIPerf has no per-user decode rate, but the
            # user still got osl tokens within the request latency; that end-to-end rate is a lower bound.
            rate = val("e2e_output_token_throughput")
        if not rate >= slo[PER_USER]:
            return False
    return True


def goodput(point_dir: Path, result: dict, slo: dict[str, float], row: dict[str, Any]) -> tuple[float, float, str]:
    """(requests/s meeting the SLOs, fraction of requests meeting them, where that came from).

    From the per-request records when AIPerf left them ("records"): request throughput times the share of
    successful requests that met every per-request bound. Without records, the point-level verdict ("point"):
    all of the request throughput when the point meets its SLOs, else 0 (no fraction). Without SLOs, goodput is
    the successful-request rate ("no-slo").
    """
    if row.get("status") not in OK_STATUSES:
        return math.nan, math.nan, "no measurement"
    rps = row.get("request_throughput_req_s", math.nan)
    if not normalize_slo(slo):
        return rps, math.nan, "no-slo"
    records = point_dir / "aiperf" / RECORDS_FILE
    if records.exists():
        total = succeeded = good = 0
        for rec in iter_profiling_records(records):
            total += 1
            succeeded += not rec.get("error")
            good += request_meets_slo(rec, slo)
        if succeeded and math.isfinite(rps):
            # AIPerf's own request rate scaled by the good share of the successful requests: the same
            # time base as the request throughput, so goodput can never exceed it.
            return rps * good / succeeded, good / total, "records"
        if total:
            return 0.0, good / total, "records"
    passed, _ = slo_check(row, slo)
    return (rps if passed else 0.0), math.nan, "point"


# ---------------------------------------------------------------- the table


def point_row(
    point_dir: Path,
    gpu_count: int,
    slo: dict[str, float],
    context: dict[str, Any],
    thresholds: dict[str, Any] | None = None,
    repeats: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """One results row. `repeats`: the point's measured requests whose prompt the run had sent before
    (infersweep.results.prompt_repeats), which the cache check names."""
    result = read_result(point_dir)
    conc, rep = point_identity(point_dir, result)
    m = result_metrics(result)
    row: dict[str, Any] = {
        "run_id": context.get("run_id") or "",
        "recipe": context.get("recipe") or "",
        "concurrency": conc,
        "repetition": rep,
        # open-loop points (a request_rate sweep) say their rate; closed-loop points have request_rate 0
        "request_rate": _num(result.get("request_rate") or 0.0),
        "arrival": result.get("arrival"),
        "status": result.get("status", "failed"),
        "reason": result.get("reason", ""),
        "requests_ok": int(result.get("requests_ok") or 0),
        "requests_failed": int(result.get("requests_failed") or 0),
        # why it measured no more, and by how much it was extended (the point step's adaptive length)
        "stop_reason": result.get("stop_reason"),
        "requests_extended": result.get("requests_extended"),
        # how the window followed its warm-up (infersweep/aiperf/flags.py seamless_warmup); older points: NA
        "warmup_requests": result.get("warmup"),
        "warmup_mode": result.get("warmup_mode"),
        "error_ratio": _num(result.get("error_rate")),
        "duration_s": _num(result.get("duration_s")),
        "point_start": result.get("start_time"),
        "point_end": result.get("end_time"),
        "aiperf_version": result.get("aiperf_version"),
    }
    for col in HEADLINE:
        row[col] = _num(m.get(col))
    row["output_throughput_tok_s_per_gpu"] = row["output_throughput_tok_s"] / gpu_count if gpu_count else math.nan
    row["total_throughput_tok_s_per_gpu"] = row["total_throughput_tok_s"] / gpu_count if gpu_count else math.nan
    row["goodput_req_s"], row["goodput_ratio"], row["goodput_source"] = goodput(point_dir, result, slo, row)
    row["slo_pass"], row["slo_detail"] = slo_check(row, slo)
    stats = aiperf_statistics(point_dir / "aiperf" / SUMMARY_FILE)
    # The validity verdict (infersweep.results.validity; thresholds in params/validity.yaml).
    t = thresholds or load_thresholds()
    # the server's own TTFT / ITL / output tokens over the window, for the checks and the row (server_figures)
    server = point_figures(point_dir, result)
    measures = point_measures(point_dir, {**result, "concurrency": conc}, stats) | server
    measures["kv_cache_state"] = context.get("kv_cache_state")  # an experiment treatment's inherited cache
    measures["point"], measures["prompt_repeats"] = Path(point_dir).name, repeats or []
    row |= server
    row["valid"], reasons = judge_point(measures, t)
    row["validity_reasons"] = "; ".join(reasons)
    row["validity_profile"] = t["profile"]
    # An invalid point meets no SLO (infersweep.results.evidence): its slo_pass is NA, the detail says why.
    row["slo_pass"], row["slo_detail"] = judge_slo(
        row["slo_pass"], row["slo_detail"], row["valid"], row["validity_reasons"]
    )
    for col in MEASURE_COLUMNS[1:]:
        row[col] = measures.get(col)
    return row


def build_table(
    points_dir: Path,
    gpu_count: int,
    slo: dict[str, float],
    context: dict[str, Any],
    thresholds: dict[str, Any] | None = None,
) -> pd.DataFrame:
    t = thresholds or load_thresholds()
    dirs = point_dirs(points_dir)
    repeats = repeated_prompts(dirs)  # across the run's points: a prompt may repeat one an earlier point sent
    rows = [point_row(d, gpu_count, slo, context, t, repeats.get(d.name)) for d in dirs]
    df = finish_table(pd.DataFrame(rows), context)
    return enforce(mark_saturation(df, t))  # a point marked saturated is invalid: no SLO verdict either


def utc_timestamps(values: pd.Series) -> pd.Series:
    """ISO times as timezone-aware UTC timestamps. AIPerf writes its start_time/end_time without an offset:
    `datetime.fromtimestamp(start_ns / 1e9)`, the local time of the AIPerf process
    (aiperf/exporters/metrics_json_exporter.py, MetricsJsonExporter, AIPerf 0.13), and its image and the local
    runner run in UTC (no TZ set), so a naive time is read as UTC; an offset, when present, is honoured."""
    if isinstance(values.dtype, pd.DatetimeTZDtype):
        return values.dt.tz_convert("UTC")
    return pd.to_datetime(
        values.astype("object").where(values.notna(), None), utc=True, errors="coerce", format="ISO8601"
    )


def apply_types(df: pd.DataFrame) -> pd.DataFrame:
    """Each column as the dictionary types it (infersweep.results.columns): Int64/boolean with NA, UTC
    timestamps, floats; text stays text."""
    for name in df.columns:
        col = BY_NAME.get(name)
        if col is None:
            continue
        if col.dtype.startswith("timestamp"):
            df[name] = utc_timestamps(df[name])
        elif col.dtype in ("Int64", "boolean"):
            # pandas-stubs has no overload for a nullable dtype given by name; pandas takes it (Int64, boolean)
            df[name] = pd.array(df[name].astype("object").where(df[name].notna(), None), dtype=col.dtype)  # type: ignore[call-overload]
        elif col.dtype == "float64":
            df[name] = pd.to_numeric(df[name], errors="coerce").astype("float64")
    return df


def finish_table(df: pd.DataFrame, context: dict[str, Any]) -> pd.DataFrame:
    """Exactly the dictionary's columns, in its order and types, with the run context (also for an empty
    sweep). Optional columns (telemetry, predictions) are added by their own steps."""
    if "request_rate" not in df.columns:  # a table of closed-loop points only (or read by an older writer)
        df["request_rate"] = 0.0
    ctx = context_columns(context)
    for col, value in ctx.items():
        if col in BY_NAME and col not in ("run_id", "recipe", "aiperf_version") and col not in OPTIONAL:
            df[col] = value
    df["schema_version"] = SCHEMA_VERSION
    for col in SUMMARY_COLUMNS:
        if col not in df.columns and col not in OPTIONAL:
            df[col] = pd.Series([None] * len(df), index=df.index, dtype="object")
    df = apply_types(df[[c for c in SUMMARY_COLUMNS if c in df.columns]].copy())
    return df.sort_values(["concurrency", "request_rate", "repetition"], kind="stable").reset_index(drop=True)


def order_columns(df: pd.DataFrame) -> pd.DataFrame:
    """The dictionary's column order, after optional columns were added (telemetry, predictions)."""
    return df[[c for c in SUMMARY_COLUMNS if c in df.columns]]


def context_columns(context: dict[str, Any]) -> dict[str, Any]:
    """Run context as flat columns: scalars as they are, mappings/lists as JSON text (parquet-safe); the SLO
    under canonical metric names."""
    out = {}
    for key, value in context.items():
        if key == "slo" and isinstance(value, dict):
            value = normalize_slo(value)
        out[key] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
    return out


# ---------------------------------------------------------------- the raw table


def raw_table(points_dir: Path, context: dict[str, Any]) -> pd.DataFrame:
    """Every statistic AIPerf reported, one row per (point, metric, stat), keyed to the summary's rows by
    run_id, concurrency, repetition, request_rate; `column` names the summary column with the same number."""
    summary_of = {m.aiperf: name for name, m in METRICS.items() if m.aiperf}
    rows = []
    for d in point_dirs(points_dir):
        result = read_result(d)
        conc, rep = point_identity(d, result)
        key = {
            "run_id": context.get("run_id") or "",
            "concurrency": conc,
            "repetition": rep,
            "request_rate": _num(result.get("request_rate") or 0.0),
        }
        for metric, block in aiperf_blocks(d / "aiperf" / SUMMARY_FILE).items():
            for stat, value in block.items():
                if stat != "unit" and isinstance(value, (int, float)) and not isinstance(value, bool):
                    rows.append(
                        {
                            **key,
                            "metric": metric,
                            "stat": stat,
                            "value": float(value),
                            "unit": str(block.get("unit") or ""),
                            "column": summary_of.get((metric, stat)),
                        }
                    )
    return finish_raw(pd.DataFrame(rows, columns=RAW_COLUMNS[:-1]))


def finish_raw(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    df["schema_version"] = RAW_SCHEMA_VERSION
    df["concurrency"] = df["concurrency"].astype("Int64")
    df["repetition"] = df["repetition"].astype("Int64")
    df["request_rate"] = df["request_rate"].astype("float64")
    df["value"] = df["value"].astype("float64")
    for c in ("run_id", "metric", "stat", "unit", "column", "schema_version"):
        df[c] = df[c].astype("object")
    return df[RAW_COLUMNS].reset_index(drop=True)


def write_parquet(df: pd.DataFrame, path: Path, schema_version: str = SCHEMA_VERSION) -> None:
    """The table as parquet with its schema version in the file's key-value metadata too (a reader that
    never loads the rows can still tell the version)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    cols = {c.name: c for c in (RAW if schema_version == RAW_SCHEMA_VERSION else SUMMARY)}
    arrow = {
        "string": pa.string(),
        "Int64": pa.int64(),
        "float64": pa.float64(),
        "boolean": pa.bool_(),
        "timestamp[UTC]": pa.timestamp("us", tz="UTC"),
    }
    # every column as the dictionary types it: an all-NA column is still a string (or int, ...) column, never
    # parquet's null type; a column the dictionary does not know keeps what pyarrow infers
    schema = pa.schema(
        [
            pa.field(c, arrow[cols[c].dtype])
            if c in cols
            else pa.Schema.from_pandas(df[[c]], preserve_index=False).field(c)
            for c in df.columns
        ]
    )
    table = pa.Table.from_pandas(df, schema=schema, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[b"infersweep.schema_version"] = schema_version.encode()
    pq.write_table(table.replace_schema_metadata(meta), path)


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """Rows whose numbers are measurements (ok or partial points)."""
    return df[df["status"].isin(OK_STATUSES)]
