"""A run as llm-d benchmark reports (version 0.2.1), so its results compare with other tools' in llm-d's
tooling (llm-d-benchmark's analysis, llm-d-prism): `infersweep export --format llm-d RUN`.

The format: github.com/llm-d/llm-d-benchmark, llmdbenchmark/analysis/benchmark_report/ (schema_v0_2.py,
schema_v0_2_1.py, br_v0_2_1_json_schema.json; README.md there: new consumers should read 0.2.1). Vendored
with its commit under tests/fixtures/llmd_benchmark_report/, where tests/results/test_llmd_export.py validates
every report written here against both their JSON Schema and their pydantic model.

One report per measured point (load and repetition), as llm-d writes one per harness stage. The mapping
of AIPerf's statistics is llm-d's own AIPerf importer's (native_to_br0_2.py `import_aiperf` and
`_aiperf_percentiles`): AIPerf's avg/min/pN/max become mean/min/pN/max, milliseconds become seconds (TTFT,
request latency in `s`; inter-token latency in `s/token`), lengths are `count`, token rates `tokens/s`,
the request rate `queries/s`, the workload generator is `aiperf` with `source: random` (a trace:
`sampled`) and fixed input/output lengths at their measured mean. `run.eid` is uuid5(NAMESPACE_URL, run
id), as llm-d derives it from its experiment id (`_populate_run_identity`); `run.uid` is uuid5 of the run,
recipe, load and repetition, so an export is reproducible.

Only valid points are exported by default (infersweep.results.evidence: a tool reading these reports has
no `valid` field to tell an invalid point from a measurement); `include_invalid` exports them too, each
saying INVALID and why in `run.description`. Failed points have no numbers and are listed, not exported.
A shared prefix is left in `scenario.load.native.config`: llm-d's standardized `prefix` needs user groups
(num_groups, num_users_per_group) that an AIPerf prefix pool does not have.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.results.evidence import MEASURED_STATUSES, is_invalid
from infersweep.results.import_context import provenance_text

VERSION = "0.2.1"
SOURCE = "https://github.com/llm-d/llm-d-benchmark/tree/8bc9f1ddd873a24f1657d6cca2e0d0fb6947dd36/llmdbenchmark/analysis/benchmark_report"
# AIPerf statistic -> llm-d Statistics field (native_to_br0_2.py _aiperf_percentiles; std -> stddev as the
# schema names it).
STATS = {
    "avg": "mean",
    "min": "min",
    "p1": "p1",
    "p5": "p5",
    "p10": "p10",
    "p25": "p25",
    "p50": "p50",
    "p75": "p75",
    "p90": "p90",
    "p95": "p95",
    "p99": "p99",
    "max": "max",
    "std": "stddev",
}
# Our role names (infersweep.recipe topology roles) -> llm-d HostType.
ROLES = {"prefill": "prefill", "decode": "decode"}  # anything else (worker, aggregated) serves both: replica


def _f(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def aiperf_stats(row: pd.Series, metric: str, scale: float = 1.0) -> dict[str, float] | None:
    """One AIPerf metric's statistics from a results row (its raw `<metric>__<stat>` columns, AIPerf's own
    names in profile_export_aiperf.json), scaled; None without a mean."""
    out = {}
    for stat, name in STATS.items():
        v = _f(row.get(f"{metric}__{stat}"))
        if v is not None:
            out[name] = v * (scale if stat != "count" else 1.0)
    return out if "mean" in out else None


def _stat(units: str, stats: dict[str, float] | None) -> dict[str, Any] | None:
    return {"units": units, **stats} if stats else None


def _mean(units: str, value: Any) -> dict[str, Any] | None:
    v = _f(value)
    return {"units": units, "mean": v} if v is not None else None


def _drop_none(d: dict) -> dict:
    return {k: v for k, v in d.items() if v is not None}


def simulated_source(row: pd.Series, ctx: dict[str, Any]) -> str | None:
    """The row's source when no GPU measured it (local mode's mocker, fake GPUs: infersweep.predict.source)."""
    from infersweep.predict.source import is_simulated

    source = row.get("source") if isinstance(row.get("source"), str) else ctx.get("source")
    return str(source) if is_simulated(source) else None


def stack(ctx: dict[str, Any], simulated: str | None = None) -> list[dict[str, Any]]:
    """scenario.stack: one inference_engine component per worker role of the topology ('2xworker(tp=1)',
    '1xprefill(tp=2) + 2xdecode(tp=1)': infersweep.recipe_context.topology_text), and the frontend's router.
    `simulated`: no GPU ran; the accelerator names the recipe's GPU as simulated, never as if it were measured."""
    engine, image = str(ctx.get("engine") or "unknown"), str(ctx.get("engine_image") or "unknown")
    model, gpu = str(ctx.get("model") or "unknown"), str(ctx.get("gpu_type") or "unknown")
    if simulated:
        gpu = f"{gpu} (simulated: no GPU ran)"
    cfg = str(
        ctx.get("recipe_hash") or hashlib.sha256(json.dumps(ctx, sort_keys=True, default=str).encode()).hexdigest()
    )
    out = []
    for replicas, role, tp in re.findall(r"(\d+)x([\w-]+)\(tp=(\d+)\)", str(ctx.get("topology") or "")):
        out.append(
            {
                "metadata": {
                    "schema_version": "0.0.1",
                    "label": f"{engine}-{role}",
                    "cfg_id": cfg[:32],
                    "description": f"Dynamo {engine} workers, role {role} ({ctx.get('recipe')})",
                },
                "standardized": {
                    "kind": "inference_engine",
                    "tool": engine,
                    "tool_version": image,
                    "role": ROLES.get(role, "replica"),
                    "replicas": int(replicas),
                    "model": {"name": model},
                    "accelerator": {"model": gpu, "count": int(replicas) * int(tp), "parallelism": {"tp": int(tp)}},
                },
                "native": {},
            }
        )
    if ctx.get("router"):
        out.append(
            {
                "metadata": {
                    "schema_version": "0.0.1",
                    "label": "dynamo-frontend",
                    "cfg_id": cfg[:32],
                    "description": "Dynamo frontend (OpenAI API and router)",
                },
                "standardized": {
                    "kind": "generic",
                    "tool": "dynamo-frontend",
                    "tool_version": image,
                    "router": str(ctx["router"]),
                },
                "native": {},
            }
        )
    return out


def _iso(v: Any) -> str | None:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NaT:
        return None
    try:
        t = pd.Timestamp(v)
    except (TypeError, ValueError):
        return None
    return None if pd.isna(t) else t.isoformat()


def point_report(row: pd.Series, ctx: dict[str, Any]) -> dict[str, Any]:
    """One llm-d benchmark report (a dict, version 0.2.1) of one results row."""
    run_id, recipe = (
        str(row.get("run_id") or ctx.get("run_id") or ""),
        str(row.get("recipe") or ctx.get("recipe") or ""),
    )
    c, rate, rep = int(row["concurrency"]), _f(row.get("request_rate")) or 0.0, int(row.get("repetition") or 0)
    load = f"c{c}" + (f" at {rate:g} req/s" if rate else "") + f" repetition {rep}"
    invalid = is_invalid(row.get("valid"))
    simulated = simulated_source(row, ctx)
    description = (
        (f"SIMULATED, not a measurement ({simulated}): " if simulated else "")
        + f"{recipe} [{run_id}] {load}"
        + (f"; INVALID measurement: {row.get('validity_reasons') or 'invalid'}" if invalid else "")
    )
    if imported := provenance_text(ctx.get("imported")):  # an import says so, and what was not known
        description += f"; {imported}"
    duration = _f(row.get("duration_s"))
    workload = dict(ctx.get("workload") or {})
    isl, osl = aiperf_stats(row, "input_sequence_length"), aiperf_stats(row, "output_sequence_length")

    def seq(stats: dict[str, float] | None) -> dict[str, Any] | None:
        if not stats:
            return None
        return _drop_none(
            {
                "distribution": "fixed",
                "value": stats["mean"],
                "min": int(stats["min"]) if "min" in stats else None,
                "max": max(1, int(stats["max"])) if "max" in stats else None,
            }
        )

    ok, failed = _f(row.get("requests_ok")), _f(row.get("requests_failed"))
    total = (ok or 0) + (failed or 0) if ok is not None else _f(row.get("request_count__avg"))
    report = {
        "version": VERSION,
        "run": _drop_none(
            {
                "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"infersweep:{run_id}:{recipe}:c{c}:rate{rate:g}:r{rep}")),
                "eid": str(uuid.uuid5(uuid.NAMESPACE_URL, run_id)) if run_id else None,
                "time": _drop_none(
                    {
                        "start": _iso(row.get("point_start")),
                        "end": _iso(row.get("point_end")),
                        "duration": f"PT{duration:g}S" if duration is not None else None,
                    }
                )
                or None,
                "description": description,
            }
        ),
        "scenario": _drop_none(
            {
                "stack": stack(ctx, simulated) or None,
                "load": {
                    "metadata": {
                        "schema_version": "0.0.1",
                        "cfg_id": hashlib.sha256(json.dumps(workload, sort_keys=True).encode()).hexdigest()[:32],
                        "description": f"infersweep {recipe}: AIPerf {load}",
                    },
                    "standardized": _drop_none(
                        {
                            "tool": "aiperf",
                            "tool_version": str(row.get("aiperf_version") or ctx.get("aiperf_version") or "unknown"),
                            "source": "sampled" if workload.get("trace") else "random",
                            "input_seq_len": seq(isl) or {"distribution": "other", "value": 0},
                            "output_seq_len": seq(osl),
                            "concurrency": c,
                            "rate_qps": rate or None,
                        }
                    ),
                    "native": {
                        "config": {
                            "workload": workload,
                            "concurrency": c,
                            "request_rate": rate,
                            "repetition": rep,
                            "seed": int(seed) if (seed := _f(row.get("seed"))) is not None else None,
                        }
                    },
                },
            }
        ),
        "results": {
            "request_performance": {
                "aggregate": _drop_none(
                    {
                        "requests": _drop_none(
                            {
                                "total": int(total or 0),
                                "failures": int(failed) if failed is not None else None,
                                "input_length": _stat("count", isl),
                                "output_length": _stat("count", osl),
                            }
                        ),
                        "latency": _drop_none(
                            {
                                "time_to_first_token": _stat("s", aiperf_stats(row, "time_to_first_token", 1e-3)),
                                "inter_token_latency": _stat("s/token", aiperf_stats(row, "inter_token_latency", 1e-3)),
                                "request_latency": _stat("s", aiperf_stats(row, "request_latency", 1e-3)),
                            }
                        )
                        or None,
                        "throughput": _drop_none(
                            {
                                "input_token_rate": _mean("tokens/s", row.get("input_token_throughput__avg")),
                                "output_token_rate": _mean("tokens/s", row.get("output_token_throughput__avg")),
                                "total_token_rate": _mean("tokens/s", row.get("total_token_throughput__avg")),
                                "request_rate": _mean("queries/s", row.get("request_throughput__avg")),
                            }
                        )
                        or None,
                    }
                )
            }
        },
    }
    return report


def raw_statistics(raw: pd.DataFrame | None) -> dict[tuple[int, int, float], dict[str, float]]:
    """The raw table's AIPerf statistics per point, as AIPerf names them (`<metric>__<stat>`), which is what
    llm-d's importer maps from (its native_to_br0_2.py import_aiperf)."""
    out: dict[tuple[int, int, float], dict[str, float]] = {}
    if raw is None or raw.empty:
        return out
    for (c, rep, rate), group in raw.groupby(["concurrency", "repetition", "request_rate"], dropna=False):
        key = (int(c), int(rep), float(rate) if rate == rate else 0.0)  # type: ignore[call-overload,arg-type]
        out[key] = {f"{m}__{st}": v for m, st, v in zip(group["metric"], group["stat"], group["value"], strict=True)}
    return out


def export_run(run, *, include_invalid: bool = False) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """({file name: report}, one line per point not exported and why) for a Run (.table, .context)."""
    df, ctx = run.table, dict(run.context or {})
    stats = raw_statistics(getattr(run, "raw", None))
    reports, skipped = {}, []
    for _, summary in df.iterrows():
        c, rate, rep = (
            int(summary["concurrency"]),
            _f(summary.get("request_rate")) or 0.0,
            int(summary.get("repetition") or 0),
        )
        # AIPerf's own statistics live in the raw table since results v3 (infersweep.results.columns RAW)
        row = pd.Series({**summary.to_dict(), **stats.get((c, rep, rate), {})})
        name = f"benchmark_report_c{c}" + (f"-rate{rate:g}" if rate else "") + (f"-r{rep}" if rep else "") + ".yaml"
        if row.get("status") not in MEASURED_STATUSES:
            skipped.append(f"{name}: not exported: the point {row.get('status')}: {str(row.get('reason') or '')[:160]}")
            continue
        if is_invalid(row.get("valid")) and not include_invalid:
            skipped.append(
                f"{name}: not exported: invalid measurement ({row.get('validity_reasons') or 'invalid'}); "
                "--include-invalid exports it marked INVALID"
            )
            continue
        reports[name] = point_report(row, ctx)
    return reports, skipped


def write_reports(reports: dict[str, dict[str, Any]], out: Path) -> list[Path]:
    import yaml

    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, report in reports.items():
        (out / name).write_text(yaml.safe_dump(report, sort_keys=False), encoding="utf-8")
        paths.append(out / name)
    return paths
