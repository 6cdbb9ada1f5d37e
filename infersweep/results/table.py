"""The results table, version 1: one tidy row per (run, recipe, concurrency point, repetition).

Readable with plain pandas (`pd.read_parquet`). Column groups:

- key: run_id, recipe, concurrency, repetition (+ request_rate, arrival: a rate sweep's points share the
  concurrency, their in-flight cap, and differ in request_rate; a closed-loop point has request_rate 0)
- point: status, reason, valid, validity_reasons (infersweep.results.validity), requests_ok, requests_failed, error_rate, duration_s, point_start, point_end
- headline metrics under short names (the names read_point uses: ttft_ms_p50, itl_ms_avg,
  request_latency_ms_p99, output_tok_s, request_per_s, tok_s_per_user_p50, ...)
- derived: tok_s_per_gpu, total_tok_s_per_gpu, tok_s_per_user (= tok_s_per_user_p50), goodput_req_s,
  goodput_fraction, goodput_source, slo_pass, slo_detail
- every statistic AIPerf reported, as `<aiperf metric>__<stat>` (e.g. time_to_first_token__p75,
  overall_usage_prompt_cache_read_pct__avg): nothing AIPerf measured is dropped
- context: schema_version and the run context of context.py (recipe_hash, engine, images, model revision,
  topology, gpu_type, gpu_count, aiperf_version, run_start, run_end, slo, workload)
- v0 aliases (ttft_p50_ms, itl_p50_ms, latency_p99_ms, ...): the column names of the first results table,
  kept so that readers written against it keep working.

A column added later gets a new SCHEMA_VERSION; a reader checks `schema_version` before trusting names.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

# Headline metrics (the flat names of read_point) and their v0 aliases: the metric vocabulary below both the
# recipe and results/.
from infersweep.metrics import HEADLINE, V0_ALIASES
from infersweep.results.evidence import MEASURED_STATUSES, enforce, judge_slo
from infersweep.results.validity import MEASURE_COLUMNS, judge_point, load_thresholds, mark_saturation, point_measures
from infersweep.aiperf import RECORDS_FILE, SUMMARY_FILE, iter_profiling_records

SCHEMA_VERSION = "infersweep.results/v2"
# v2 added the validity verdict (valid, validity_reasons and what the checks measured). A v1 table reads
# as before; its rows have no verdict (unknown validity, which compare and regress keep).
READABLE_VERSIONS = ("infersweep.results/v1", SCHEMA_VERSION)
KEY = ["run_id", "recipe", "concurrency", "repetition"]
OK_STATUSES = MEASURED_STATUSES  # points whose numbers are measurements (see infersweep.aiperf)

# What load a point ran at besides its concurrency: the rate of an open-loop point (0 = closed loop) and its
# arrival pattern (None for closed loop).
LOAD_COLUMNS = ["request_rate", "arrival"]
POINT_COLUMNS = ["status", "reason", "valid", "validity_reasons", "requests_ok", "requests_failed", "error_rate",
                 "duration_s", "point_start", "point_end", "aiperf_version"]
DERIVED_COLUMNS = ["tok_s_per_gpu", "total_tok_s_per_gpu", "tok_s_per_user", "goodput_req_s", "goodput_fraction",
                   "goodput_source", "slo_pass", "slo_detail"]


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


def aiperf_statistics(summary_path: Path) -> dict[str, float]:
    """Every statistic of every metric block in AIPerf's summary, as `<metric>__<stat>` floats."""
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, float] = {}
    for name, block in summary.items() if isinstance(summary, dict) else []:
        if not isinstance(block, dict) or "unit" not in block:
            continue  # input_config, run_info, telemetry, error_summary...: not statistics
        for stat, value in block.items():
            if stat != "unit" and isinstance(value, (int, float)) and not isinstance(value, bool):
                out[f"{name}__{stat}"] = float(value)
    return out


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else math.nan


# ---------------------------------------------------------------- SLOs and goodput


def slo_check(row: dict[str, Any], slo: dict[str, float]) -> tuple[bool | None, str]:
    """Point-level SLO verdict and which bound decided it. None: nothing to judge (no SLO / no data)."""
    if row.get("status") not in OK_STATUSES:
        return None, "no measurement"
    bounds = [("ttft_p50_ms", "ttft_ms_p50", "<="), ("ttft_p99_ms", "ttft_ms_p99", "<="),
              ("itl_p50_ms", "itl_ms_p50", "<="), ("tok_s_user_min", "tok_s_per_user", ">=")]
    failed, checked = [], []
    for slo_key, col, op in bounds:
        bound = slo.get(slo_key)
        if not bound:
            continue
        value = row.get(col, math.nan)
        if not math.isfinite(value):
            failed.append(f"{col} missing")
            continue
        ok = value <= bound if op == "<=" else value >= bound
        checked.append(slo_key)
        if not ok:
            failed.append(f"{col}={value:.4g} (bound {op} {bound:g})")
    if not checked and not failed:
        return None, "no SLO"
    return (not failed), ("; ".join(failed) if failed else "meets " + ", ".join(checked))


def request_meets_slo(record: dict, slo: dict[str, float]) -> bool:
    """One request against the SLO bounds that make sense per request.

    TTFT is judged against the p50 bound (the p99 bound where only that is given), ITL against the ITL
    bound, the request's own output rate against tok_s_user_min. A failed request never meets the SLO.
    """
    if record.get("error"):
        return False
    m = record.get("metrics") or {}

    def val(name: str) -> float:
        v = (m.get(name) or {}).get("value")
        return _num(v)

    ttft_bound = slo.get("ttft_p50_ms") or slo.get("ttft_p99_ms")
    if ttft_bound and not val("time_to_first_token") <= ttft_bound:  # NaN fails too
        return False
    if slo.get("itl_p50_ms") and not val("inter_token_latency") <= slo["itl_p50_ms"]:
        return False
    if slo.get("tok_s_user_min"):
        rate = val("output_token_throughput_per_user")
        if math.isnan(rate):
            # All tokens arrived in one chunk (no decode interval): AIPerf has no per-user decode rate, but the
            # user still got osl tokens within the request latency; that end-to-end rate is a lower bound.
            rate = val("e2e_output_token_throughput")
        if not rate >= slo["tok_s_user_min"]:
            return False
    return True


def goodput(point_dir: Path, result: dict, slo: dict[str, float], row: dict[str, Any]) -> tuple[float, float, str]:
    """(requests/s meeting the SLOs, fraction of requests meeting them, where that came from).

    From the per-request records when AIPerf left them ("records"): request_per_s times the share of
    successful requests that met every per-request bound. Without records, the point-level verdict ("point"): all of request_per_s when the point
    meets its SLOs, else 0 (no fraction). Without SLOs, goodput is the successful-request rate ("no-slo").
    """
    if row.get("status") not in OK_STATUSES:
        return math.nan, math.nan, "no measurement"
    rps = row.get("request_per_s", math.nan)
    if not any(slo.get(k) for k in ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "tok_s_user_min")):
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
            # time base as request_per_s, so goodput can never exceed it.
            return rps * good / succeeded, good / total, "records"
        if total:
            return 0.0, good / total, "records"
    passed, _ = slo_check(row, slo)
    return (rps if passed else 0.0), math.nan, "point"


# ---------------------------------------------------------------- the table


def point_row(point_dir: Path, gpu_count: int, slo: dict[str, float], context: dict[str, Any],
              thresholds: dict[str, Any] | None = None) -> dict[str, Any]:
    result = read_result(point_dir)
    conc, rep = point_identity(point_dir, result)
    m = result.get("metrics") or {}
    row: dict[str, Any] = {
        "run_id": context.get("run_id") or "", "recipe": context.get("recipe") or "",
        "concurrency": conc, "repetition": rep,
        # open-loop points (a request_rate sweep) say their rate; closed-loop points have request_rate 0
        "request_rate": _num(result.get("request_rate") or 0.0), "arrival": result.get("arrival"),
        "status": result.get("status", "failed"), "reason": result.get("reason", ""),
        "requests_ok": int(result.get("requests_ok") or 0), "requests_failed": int(result.get("requests_failed") or 0),
        "error_rate": _num(result.get("error_rate")), "duration_s": _num(result.get("duration_s")),
        "point_start": result.get("start_time"), "point_end": result.get("end_time"),
        "aiperf_version": result.get("aiperf_version"),
    }
    for col in HEADLINE:
        row[col] = _num(m.get(col))
    row["tok_s_per_gpu"] = row["output_tok_s"] / gpu_count if gpu_count else math.nan
    row["total_tok_s_per_gpu"] = row["total_tok_s"] / gpu_count if gpu_count else math.nan
    # Per-user speed is the median over requests of AIPerf's per-request output rate: the mean is
    # dominated by requests whose few tokens arrived in one chunk.
    row["tok_s_per_user"] = row["tok_s_per_user_p50"]
    row["goodput_req_s"], row["goodput_fraction"], row["goodput_source"] = goodput(point_dir, result, slo, row)
    row["slo_pass"], row["slo_detail"] = slo_check(row, slo)
    stats = aiperf_statistics(point_dir / "aiperf" / SUMMARY_FILE)
    row.update(stats)
    # The validity verdict (infersweep.results.validity; thresholds in params/validity.yaml).
    t = thresholds or load_thresholds()
    measures = point_measures(point_dir, {**result, "concurrency": conc}, stats)
    row["valid"], reasons = judge_point(measures, t)
    row["validity_reasons"] = "; ".join(reasons)
    row["validity_profile"] = t["profile"]
    # An invalid point meets no SLO (infersweep.results.evidence): its slo_pass is NA, the detail says why.
    row["slo_pass"], row["slo_detail"] = judge_slo(row["slo_pass"], row["slo_detail"], row["valid"],
                                                   row["validity_reasons"])
    for col in MEASURE_COLUMNS[1:]:
        row[col] = measures.get(col)
    return row


def build_table(points_dir: Path, gpu_count: int, slo: dict[str, float], context: dict[str, Any],
                thresholds: dict[str, Any] | None = None) -> pd.DataFrame:
    t = thresholds or load_thresholds()
    rows = [point_row(d, gpu_count, slo, context, t) for d in point_dirs(points_dir)]
    df = finish_table(pd.DataFrame(rows), context)
    return enforce(mark_saturation(df, t))  # a point marked saturated is invalid: no SLO verdict either


def finish_table(df: pd.DataFrame, context: dict[str, Any]) -> pd.DataFrame:
    """Column order, context columns, v0 aliases and dtypes (also for an empty sweep)."""
    base = KEY + LOAD_COLUMNS + POINT_COLUMNS + HEADLINE + DERIVED_COLUMNS
    if "request_rate" not in df.columns:  # a table of closed-loop points only (or read by an older writer)
        df["request_rate"] = 0.0
    for col in base:
        if col not in df.columns:
            df[col] = pd.Series(dtype="float64" if col in HEADLINE else "object")
    for alias, name in V0_ALIASES.items():
        df[alias] = df[name]
    ctx = context_columns(context)
    for col, value in ctx.items():
        if col not in ("run_id", "recipe", "aiperf_version"):
            df[col] = value
    df["schema_version"] = SCHEMA_VERSION
    stats = sorted(c for c in df.columns if "__" in c)
    rest = [c for c in df.columns if c not in base and c not in stats]
    df = df[base + rest + stats]
    df["slo_pass"] = df["slo_pass"].astype("boolean")
    df["valid"] = df["valid"].astype("boolean")
    df["concurrency"] = df["concurrency"].astype("Int64")
    df["repetition"] = df["repetition"].astype("Int64")
    return df.sort_values(["concurrency", "request_rate", "repetition"], kind="stable").reset_index(drop=True)


def context_columns(context: dict[str, Any]) -> dict[str, Any]:
    """Run context as flat columns: scalars as they are, mappings/lists as JSON text (parquet-safe)."""
    out = {}
    for key, value in context.items():
        out[key] = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else value
    return out


def check_table(df: pd.DataFrame, where: str = "results table") -> None:
    """Refuse a table this code cannot read correctly: one clear error naming what is wrong."""
    if "schema_version" not in df.columns:
        raise ValueError(f"{where}: no schema_version column; written before {SCHEMA_VERSION} "
                         "(re-run `python -m steps.summarize` on the run folder to rebuild it)")
    versions = set(df["schema_version"].dropna().unique())
    if versions and not versions <= set(READABLE_VERSIONS):
        raise ValueError(f"{where}: schema_version {sorted(versions)}, this reader knows {list(READABLE_VERSIONS)}")
    missing = [c for c in KEY + ["status"] if c not in df.columns]
    if missing:
        raise ValueError(f"{where}: missing key columns {missing}")


def measured(df: pd.DataFrame) -> pd.DataFrame:
    """Rows whose numbers are measurements (ok or partial points)."""
    return df[df["status"].isin(OK_STATUSES)]

