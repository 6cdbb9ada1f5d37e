"""Step: the run's verdict, the last task of the pipeline: fail when any point failed or nothing was measured.

Why a step of its own: Argo judges a DAG by its leaf tasks (argo-workflows v4.1.2 workflow/controller/
dag.go assessDAGPhase: the DAG's phase is that of its target tasks, the leaves, with omitted tasks
inheriting their branch's phase). The points fail on their own, but the tasks after them (summarize,
publish) run whatever happened and succeed, so without this leaf a sweep where every point failed ends
Succeeded. It runs after publish, so the measured points are summarised and published before the run
turns red; its message (last stderr line) says which points failed and why.

    python -m steps.verdict --run-dir DIR --points JSON
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from infersweep.results.verdict import verdict
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
    print(f"verdict: {message}", file=None if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    main_of(main, VERDICT)
