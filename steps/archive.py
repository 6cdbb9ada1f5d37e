"""Step of an experiment: move the run folder aside as the treatment's, keeping an earlier attempt's under
<name>.attempts/N so nothing measured is overwritten (infersweep/experiment/workdir.py archive).

    python -m steps.archive --run-dir /work/run --treatments-dir /work/treatments --treatment NAME
"""

from __future__ import annotations

from pathlib import Path

from infersweep.experiment.workdir import archive
from infersweep.step_declarations import ARCHIVE
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = ARCHIVE.parser().parse_args(argv)
    print(f"run kept at {archive(Path(a.run_dir), Path(a.treatments_dir) / a.treatment)}")
    return 0


if __name__ == "__main__":
    main_of(main, ARCHIVE)
