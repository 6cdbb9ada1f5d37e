"""Step of an experiment: a treatment's time-to-ready, the seconds since mark-start, into its run folder
(infersweep/experiment/workdir.py record_ready).

    python -m steps.record_ready --out /work/run
"""

from __future__ import annotations

from pathlib import Path

from infersweep.experiment.workdir import record_ready
from infersweep.step_declarations import RECORD_READY
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = RECORD_READY.parser().parse_args(argv)
    print(f"time to ready: {record_ready(Path(a.out)):.1f} s")
    return 0


if __name__ == "__main__":
    main_of(main, RECORD_READY)
