"""Step of an experiment: record when a treatment's deploy (or reconfigure) starts, for its time-to-ready
(infersweep/experiment/workdir.py mark_start).

    python -m steps.mark_start --out /work/run
"""

from __future__ import annotations

from pathlib import Path

from infersweep.experiment.workdir import mark_start
from infersweep.step_declarations import MARK_START
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = MARK_START.parser().parse_args(argv)
    mark_start(Path(a.out))
    return 0


if __name__ == "__main__":
    main_of(main, MARK_START)
