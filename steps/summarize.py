"""Step: turn the sweep's points into the versioned results table, its run record and the run's report.

Writes into <run-dir>/summary/:
  results.parquet   the results table (infersweep.results.schema, one row per point and repetition)
  results.csv/.md   the same table for eyes and spreadsheets
  run.json          the run context, SLOs and schema version: what the run index is built from
  report.html       the self-contained report, with pareto.png, latency.png, errors.png[, server_metrics.png]

Failed points are rows too (with their status and reason), so a partial sweep still shows what it
measured and why the rest is missing. Publishing (and the manifest that marks the run complete) is the
next step's job: nothing here touches S3.

    python -m steps.summarize --run-dir DIR --gpu-count N [--slo JSON] [--title T] [--context JSON|@FILE] [--run-id ID]
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.predict.beside import annotate
from infersweep.predict.source import banner
from infersweep.results.context import RUN_FILE, build_context, parse_context_arg
from infersweep.results.report import write_report
from infersweep.results.run import load_run_folder
from infersweep.results.schema import SCHEMA_VERSION, build_table, point_dirs, read_result
from infersweep.step_declarations import SUMMARIZE

MD_COLUMNS = ["concurrency", "request_rate", "repetition", "status", "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "latency_p50_ms",
              "output_tok_s", "tok_s_per_gpu", "tok_s_per_user", "request_per_s", "goodput_req_s", "error_rate",
              "slo_pass", "predicted_itl_ms", "implausible"]


def markdown_table(df: pd.DataFrame) -> str:
    cols = [c for c in MD_COLUMNS if c in df.columns]
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    body = ""
    for _, r in df.iterrows():
        cells = []
        for c in cols:
            v = r[c]
            cells.append(f"{v:.2f}" if isinstance(v, float) else str(v))
        body += "| " + " | ".join(cells) + " |\n"
    return head + body


def treatment_recipe(ctx: dict[str, Any]):
    """An experiment treatment's recipe (its run context names the experiment and the treatment), else None."""
    if not (ctx.get("experiment") and ctx.get("treatment")):
        return None
    from infersweep.experiment.spec import load_experiment

    return load_experiment(ctx["experiment"]).treatment(ctx["treatment"]).recipe


def _write_atomic(path: Path, write) -> None:
    # A summarize killed mid-write must not leave a torn file a later reader would trust.
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


def summarize(run_dir: Path, gpu_count: int, slo: dict[str, float], title: str,
              context: dict[str, Any] | None = None) -> pd.DataFrame:
    points = [read_result(d) for d in point_dirs(run_dir / "points")]
    ctx = build_context(run_dir, given=dict(context or {}), title=title, gpu_count=gpu_count, slo=slo, points=points)
    df = build_table(run_dir / "points", gpu_count, slo, ctx)
    # The prediction beside each row and the physics check (infersweep.predict.beside); never fails the step.
    df, ctx["prediction"] = annotate(df, ctx, lookup=treatment_recipe)
    df["prediction"] = ctx["prediction"]
    out = run_dir / "summary"
    out.mkdir(parents=True, exist_ok=True)
    _write_atomic(out / "results.parquet", lambda p: df.to_parquet(p, index=False))
    _write_atomic(out / "results.csv", lambda p: df.to_csv(p, index=False))
    note = banner(ctx.get("source"))  # simulated runs say so above their numbers (infersweep.predict.source)
    _write_atomic(out / "results.md", lambda p: p.write_text(f"# {title}\n\n" + (f"> {note}\n\n" if note else "")
                                                             + markdown_table(df)))
    record = {"schema_version": SCHEMA_VERSION, "context": ctx, "title": title, "points": len(df),
              "measured_points": int(df["status"].isin(["ok", "partial"]).sum())}
    _write_atomic(out / RUN_FILE, lambda p: p.write_text(json.dumps(record, indent=2, sort_keys=True, default=str) + "\n"))
    write_report(load_run_folder(run_dir), out, title)
    return df


def main(argv: list[str] | None = None) -> int:
    ap = SUMMARIZE.parser()
    a = ap.parse_args(argv)
    if not a.model_commit and a.model_commit_file and Path(a.model_commit_file).is_file():
        a.model_commit = Path(a.model_commit_file).read_text().strip()
    slo = a.slo
    try:
        context = parse_context_arg(a.context)
    except ValueError as e:
        ap.error(str(e))
    if a.run_id:
        context["run_id"] = a.run_id
    if a.model_commit:
        context["model_commit"] = a.model_commit
    df = summarize(Path(a.run_dir), a.gpu_count, slo, a.title, context)
    print(markdown_table(df))
    if df.empty:
        # Not a failure of this step: the table (empty) and the run record are written and get published;
        # the pipeline's last task (steps/verdict.py) fails the run with the reason.
        print("summarize: no point produced a result", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
