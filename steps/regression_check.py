"""Step: compare this run's results with the recipe's baseline in S3; fail with a readable report.

The work is infersweep.results.baseline.check_against_baseline (fetch the baseline, judge_run, write the
report as an artifact); this step turns "regressed" into a failed step. An empty --baseline-prefix (ad-hoc
runs) skips the check; a recipe without a baseline yet is reported and passes.
"""

from __future__ import annotations

import sys
from pathlib import Path

from infersweep.results.baseline import INCOMPARABLE, check_against_baseline
from infersweep.step_declarations import REGRESSION_CHECK
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = REGRESSION_CHECK.parser().parse_args(argv)
    result = check_against_baseline(Path(a.run_dir), a.bucket, a.baseline_prefix, a.tolerances, Path(a.report))
    if result == INCOMPARABLE:
        print(
            f"regression-check: baseline s3://{a.bucket}/{a.baseline_prefix}/ is not comparable with this run "
            "(report: artifact regression-report)",
            file=sys.stderr,
        )
        return 1
    if result == "regressed":
        # The last stderr line becomes the step's message in the Argo UI.
        print(
            f"regression-check: REGRESSED against s3://{a.bucket}/{a.baseline_prefix}/ (report: artifact "
            "regression-report)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    main_of(main, REGRESSION_CHECK)
