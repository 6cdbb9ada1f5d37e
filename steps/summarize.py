"""Step: turn the sweep's points into the versioned results table, its run record and the run's report.

The work is infersweep.results.summarize.summarize (writes <run-dir>/summary/: results.parquet/.csv/.md,
run.json, report.html); nothing here touches S3.

    python -m steps.summarize --run-dir DIR --gpu-count N [--slo JSON] [--title T] [--context JSON|@FILE] [--run-id ID]
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from infersweep.results.context import parse_context_arg
from infersweep.results.summarize import markdown_table, summarize
from infersweep.step_declarations import SUMMARIZE
from steps.runner import main_of


# An experiment treatment's recipe, for the prediction beside each row. Here, not in results/: experiment/
# imports results/, so results/ must not import experiment/.
def treatment_recipe(ctx: dict[str, Any]):
    """An experiment treatment's recipe (its run context names the experiment and the treatment), else None."""
    if not (ctx.get("experiment") and ctx.get("treatment")):
        return None
    from infersweep.experiment.spec import load_experiment

    return load_experiment(ctx["experiment"]).treatment(ctx["treatment"]).recipe


def main(argv: list[str] | None = None) -> int:
    ap = SUMMARIZE.parser()
    a = ap.parse_args(argv)
    slo = a.slo
    try:
        context = parse_context_arg(a.context)
    except ValueError as e:
        ap.error(str(e))
    if a.run_id:
        context["run_id"] = a.run_id
    # The commit model-cache resolved: as given (--model-commit, or in the context, where an experiment puts
    # each treatment's own cache output), else from the file model-cache wrote into the run dir (a recipe
    # pipeline's summarize runs in the exit handler, which cannot read task outputs).
    commit = a.model_commit or context.get("model_commit")
    if not commit and a.model_commit_file and Path(a.model_commit_file).is_file():
        commit = Path(a.model_commit_file).read_text().strip()
    if commit:
        context["model_commit"] = commit
    df = summarize(Path(a.run_dir), a.gpu_count, slo, a.title, context, recipe_lookup=treatment_recipe)
    print(markdown_table(df))
    if df.empty:
        # Not a failure of this step: the table (empty) and the run record are written and get published;
        # the pipeline's last task (steps/verdict.py) fails the run with the reason.
        print("summarize: no point produced a result", file=sys.stderr)
    return 0


if __name__ == "__main__":
    main_of(main, SUMMARIZE)
