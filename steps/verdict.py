"""Step: the run's verdict, the last task of the pipeline: fail when any point failed or nothing was measured.

Why a step of its own: Argo judges a DAG by its leaf tasks (argo-workflows v4.1.2 workflow/controller/
dag.go assessDAGPhase: the DAG's phase is that of its target tasks, the leaves, with omitted tasks
inheriting their branch's phase). The points fail on their own, but the tasks after them (summarize,
publish) run whatever happened and succeed, so without this leaf a sweep where every point failed ends
Succeeded. It runs after publish, so the measured points are summarised and published before the run
turns red; its message (last stderr line) says which points failed and why.

It also fails when an earlier step of the exit handler did not succeed (--exit-steps, Argo's phases of
scrape and regression-check): those are not leaves, so their failure alone would not fail the run.

    python -m steps.verdict --run-dir DIR --points JSON [--exit-steps JSON]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from infersweep.results.verdict import exit_step_failures, verdict
from infersweep.step_declarations import VERDICT
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = VERDICT.parser().parse_args(argv)
    try:
        points = json.loads(a.points)
        assert isinstance(points, list) and all(isinstance(p, dict) and "concurrency" in p for p in points)
    except (ValueError, AssertionError):
        print("verdict: --points is not a JSON list of {concurrency, ...} objects", file=sys.stderr)
        return 2
    ok, message = verdict(Path(a.run_dir), points)
    earlier = exit_step_failures({str(k): str(v) for k, v in a.exit_steps.items()})
    if earlier:  # the run fails for these too; the points' message stays beside them
        ok, message = False, f"{'; '.join(earlier)} (see those steps' logs); {message}"
    print(f"verdict: {message}", file=None if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    main_of(main, VERDICT)
