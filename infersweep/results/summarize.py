"""Turn a sweep's points into the versioned results table, its run record and the run's report.

Writes into <run-dir>/summary/:
  results.parquet   the results table (infersweep.results.table, one row per point and repetition; its
                    columns: docs/columns.md)
  results_raw.parquet  every statistic AIPerf reported, long format, keyed to the table's rows
  results.csv/.md   the same table for eyes and spreadsheets (results.md: first each load's mean over its valid
                    repetitions with a 95 % Student-t interval and n, then every repetition's headline columns,
                    valid and why)
  results_by_load.csv  the per-load means, interval half-widths and n (infersweep.results.repetitions)
  columns.md        what every column of these tables means, with its unit (docs/columns.md, the same text)
  run.json          the run context, SLOs and schema version: what the run index is built from
  report.html       the self-contained report, with pareto.png, latency.png, errors.png[, server_metrics.png]

Failed points are rows too (with their status and reason), so a partial sweep still shows what it
measured and why the rest is missing. Publishing (and the manifest that marks the run complete) is the
next step's job: nothing here touches S3. Used by the summarize step (steps/summarize.py) and by
`infersweep import` (infersweep.results.importer).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.predict.beside import annotate
from infersweep.predict.source import banner
from infersweep.results.columns import RAW_SCHEMA_VERSION, SCHEMA_VERSION
from infersweep.results.context import RUN_FILE, build_context, engine_ran_from_env
from infersweep.results.evidence import enforce
from infersweep.results.gpu_telemetry import GPU_TELEMETRY_ENV
from infersweep.results.gpu_telemetry import add_columns as add_gpu_columns
from infersweep.results.import_aggregate import markdown as aggregate_markdown
from infersweep.results.import_context import provenance_text
from infersweep.results.repetitions import by_load
from infersweep.results.repetitions import markdown as load_markdown
from infersweep.results.report import write_report
from infersweep.results.run import load_run_folder
from infersweep.results.table import (
    apply_types,
    build_table,
    order_columns,
    point_dirs,
    raw_table,
    read_result,
    write_parquet,
)

MD_COLUMNS = [
    "concurrency",
    "request_rate",
    "repetition",
    "status",
    "valid",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "itl_p50_ms",
    "request_latency_p50_ms",
    "output_throughput_tok_s",
    "output_throughput_tok_s_per_gpu",
    "output_throughput_p50_tok_s_per_user",
    "request_throughput_req_s",
    "goodput_req_s",
    "error_ratio",
    "requests_extended",  # NA (so not shown) unless a point had a budget to extend (workload.max_requests_per_concurrency)
    "slo_pass",
    "predicted_itl_avg_ms",
    "implausible",
    "gpu_power_total_w",
    "energy_j_per_output_token",
    "validity_reasons",
]
ALWAYS = ("valid", "validity_reasons")  # every printed table says whether a point counts and why not


def _cell(v) -> str:
    """A table cell: NA (None, NaN, pd.NA) as NA, floats to 2 decimals, text with its pipes escaped."""
    if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v):
        return "NA"
    if isinstance(v, float):
        return f"{v:.2f}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown_table(df: pd.DataFrame) -> str:
    """The results table as Markdown: every row with its validity verdict (`valid`) and, last, why a point is
    not valid (`validity_reasons`); an invalid point's slo_pass is NA (infersweep.results.evidence)."""
    df = enforce(df)
    cols = [c for c in MD_COLUMNS if c in df.columns or c in ALWAYS]
    # A column with no value in any row says nothing (a local run has no prediction, no GPU power): left out
    # of this table for eyes, and named under it; results.csv and results.parquet keep every column.
    empty = [c for c in cols if c not in ALWAYS and c in df.columns and len(df) and df[c].map(_cell).eq("NA").all()]
    cols = [c for c in cols if c not in empty]
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = ""
    for _, r in df.iterrows():
        body += "| " + " | ".join(_cell(r.get(c)) for c in cols) + " |\n"
    tail = f"\nNo value in any row (left out here, kept in results.csv): {', '.join(empty)}\n" if empty else ""
    return head + body + tail


COLUMNS_FILE = "columns.md"


def _write_atomic(path: Path, write) -> None:
    # A summarize killed mid-write must not leave a torn file a later reader would trust.
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def summarize(
    run_dir: Path,
    gpu_count: int,
    slo: dict[str, float],
    title: str,
    context: dict[str, Any] | None = None,
    recipe_lookup=None,
) -> pd.DataFrame:
    """Write <run_dir>/summary/ from <run_dir>/points/ (see the module docstring); return the table.

    `recipe_lookup(context)` gives the recipe a prediction is made for when the context alone does not name
    it (an experiment treatment's, steps/summarize.py); None: the context's recipe."""
    points = [read_result(d) for d in point_dirs(run_dir / "points")]
    ctx = build_context(run_dir, given=dict(context or {}), title=title, gpu_count=gpu_count, slo=slo, points=points)
    df = build_table(run_dir / "points", gpu_count, slo, ctx)
    if os.environ.get(GPU_TELEMETRY_ENV):  # a local GPU run's NVML samples: DCGM's columns
        df = add_gpu_columns(df, run_dir / "points", Path(os.environ[GPU_TELEMETRY_ENV]))
    # The prediction beside each row and the physics check (infersweep.predict.beside); never fails the step.
    df, ctx["prediction"] = annotate(df, ctx, lookup=recipe_lookup)
    df["prediction"] = ctx["prediction"]
    df = apply_types(order_columns(df).copy())
    raw = raw_table(run_dir / "points", ctx)
    out = run_dir / "summary"
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / "results.parquet", lambda p: write_parquet(df, p))
    _write_atomic(out / "results_raw.parquet", lambda p: write_parquet(raw, p, RAW_SCHEMA_VERSION))
    _write_atomic(out / "results.csv", lambda p: df.to_csv(p, index=False))
    note = banner(ctx.get("source"))  # simulated runs say so above their numbers (infersweep.predict.source)
    _write_atomic(
        out / "results.md",
        lambda p: p.write_text(
            f"# {title}\n\n"
            + (f"> {note}\n\n" if note else "")
            + (f"> {imported}\n\n" if (imported := provenance_text(ctx.get("imported"))) else "")
            + (f"{loads}\n" if (loads := load_markdown(df, points)) else "")
            + (
                f"{aiperf}\n"
                if (aiperf := aggregate_markdown(df, (ctx.get("imported") or {}).get("aiperf_aggregate")))
                else ""
            )
            + ("Each repetition:\n\n" if loads else "")
            + markdown_table(df)
        ),
    )
    # the per-load means with their 95 % intervals and n, for spreadsheets (infersweep.results.repetitions)
    _write_atomic(out / "results_by_load.csv", lambda p: by_load(df).to_csv(p, index=False))
    # what each column means, beside the tables it describes: a results folder read away from a checkout
    # (a downloaded store, a colleague's copy) has no docs/columns.md
    from infersweep.results.columns import markdown as columns_markdown

    _write_atomic(out / COLUMNS_FILE, lambda p: p.write_text(columns_markdown(), encoding="utf-8"))
    record = {
        "schema_version": SCHEMA_VERSION,
        "context": ctx,
        "title": title,
        "points": len(df),
        "measured_points": int(df["status"].isin(["ok", "partial"]).sum()),
    }
    ran = engine_ran_from_env()
    if ran:  # local GPU workers: the Dynamo release, wheels and interpreter that ran instead of the image
        record["engine_ran"] = {
            k: ran.get(k) for k in ("engine_release", "engine_wheels", "engine_python", "rendered_image")
        }
    _write_atomic(
        out / RUN_FILE, lambda p: p.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n")
    )
    write_report(load_run_folder(run_dir), out, title)
    return df
