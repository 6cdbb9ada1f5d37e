"""Step: turn the sweep's points into the versioned results table, its run record and the run's report.

The work is infersweep.results.summarize.summarize (writes <run-dir>/summary/: results.parquet/.csv/.md,
run.json, report.html); nothing here touches S3.

    python -m steps.summarize --run-dir DIR --gpu-count N [--slo JSON] [--title T] [--context JSON|@FILE] [--run-id ID]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from infersweep.results.context import parse_context_arg
from infersweep.results.summarize import markdown_table, summarize
from steps.outputs import json_object


# An experiment treatment's recipe, for the prediction beside each row. Here, not in results/: experiment/
# imports results/, so results/ must not import experiment/.
def treatment_recipe(ctx: dict[str, Any]):
    """An experiment treatment's recipe (its run context names the experiment and the treatment), else None."""
    if not (ctx.get("experiment") and ctx.get("treatment")):
        return None
    from infersweep.experiment.spec import load_experiment

    return load_experiment(ctx["experiment"]).treatment(ctx["treatment"]).recipe


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.summarize")
    ap.add_argument("--run-dir", required=True)
    ap.add_argument("--gpu-count", type=int, required=True)
    ap.add_argument("--slo", type=json_object, default={}, help="JSON object of SLO bounds")
    ap.add_argument("--title", default="infersweep", help="the recipe name (plot titles, and the context's recipe)")
    ap.add_argument("--context", default=None,
                    help="run context as JSON or @FILE (infersweep.results.context.recipe_context); optional")
    ap.add_argument("--run-id", default=None, help="the run's id (the workflow name); optional")
    ap.add_argument("--model-commit", default="", help="the commit the model-cache step resolved; optional")
    ap.add_argument("--model-commit-file", default="",
                    help="file holding the commit model-cache resolved (used when --model-commit is not given)")
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
    df = summarize(Path(a.run_dir), a.gpu_count, slo, a.title, context, recipe_lookup=treatment_recipe)
    print(markdown_table(df))
    if df.empty:
        # Not a failure of this step: the table (empty) and the run record are written and get published;
        # the pipeline's last task (steps/verdict.py) fails the run with the reason.
        print("summarize: no point produced a result", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
