"""Step of an experiment, its last: fail when any treatment had a failed point or measured nothing, each
treatment judged as a recipe run is (infersweep/experiment/workdir.py experiment_verdict). It runs after
the report is published, so a failed treatment turns the experiment red only once its results are out.

    python -m steps.experiment_verdict --treatments-dir /work/treatments --points '{"NAME": [...]}'
"""

from __future__ import annotations

import sys
from pathlib import Path

from infersweep.experiment.workdir import experiment_verdict
from infersweep.step_declarations import EXPERIMENT_VERDICT
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = EXPERIMENT_VERDICT.parser().parse_args(argv)
    ok, lines = experiment_verdict(Path(a.treatments_dir), a.points)
    print("verdict: " + "; ".join(lines), file=None if ok else sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    main_of(main, EXPERIMENT_VERDICT)
