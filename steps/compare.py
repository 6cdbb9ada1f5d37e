"""Step of an experiment: the experiment report from every treatment's results table, written into the run
folder that publish-report publishes next (infersweep/experiment/compare.py write_report). A treatment
without a results table is reported as missing; the step fails only when it cannot write the report.

    python -m steps.compare --experiment YAML --treatments-dir /work/treatments --out /work/run
"""

from __future__ import annotations

from pathlib import Path

from infersweep.experiment.compare import write_report
from infersweep.step_declarations import COMPARE
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = COMPARE.parser().parse_args(argv)
    print(write_report(a.experiment, Path(a.treatments_dir), Path(a.out)))
    return 0


if __name__ == "__main__":
    main_of(main, COMPARE)
