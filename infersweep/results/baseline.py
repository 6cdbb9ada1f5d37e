"""A run judged against its recipe's baseline run in S3: the regression-check step's work
(steps/regression_check.py is `check_against_baseline` behind its argument parsing).

The verdict (pass / regressed / improved / inconclusive, noise-aware, tolerances from the recipe) is
infersweep.results.regression.judge_run's job; this fetches the baseline, calls it and writes the report.
An empty baseline prefix (ad-hoc runs) skips the check; a recipe without a baseline yet is reported and
passes, so the first nightly run of a new recipe can be promoted to baseline. A baseline of another
workload, model, SLOs or source (the recipe changed since it was promoted) is INCOMPARABLE, which fails the
step: a verdict against it would be a difference of workloads, not a regression.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from infersweep.results.comparable import NotComparable, check_comparable
from infersweep.results.regression import judge_run  # the one verdict logic, shared with the CLI
from infersweep.results.run import load_run_folder
from infersweep.results.s3 import download_prefix

SKIPPED = "skipped"  # no baseline prefix was given
NO_BASELINE = "no-baseline"  # nothing under the baseline prefix yet
INCOMPARABLE = "incomparable"  # the baseline measured another workload, model, SLOs or source: a failed check


def check_against_baseline(
    run_dir: Path, bucket: str, baseline_prefix: str, tolerances: dict[str, Any] | None, report: Path
) -> str:
    """Judge the run folder `run_dir` against the run under s3://bucket/baseline_prefix/, write the report to
    `report` and print it. Returns judge_run's verdict ("pass", "regressed", ...), or SKIPPED / NO_BASELINE.
    A verdict other than "regressed" is also printed as the step's last line."""
    report.parent.mkdir(parents=True, exist_ok=True)
    if not baseline_prefix:
        report.write_text("regression check skipped: no baseline-prefix was given\n")
        print("regression-check: no baseline-prefix; skipped")
        return SKIPPED
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp)
        if download_prefix(bucket, baseline_prefix, baseline) == 0:
            report.write_text(
                f"no baseline at s3://{bucket}/{baseline_prefix}/: nothing to compare; "
                "promote a good run there to start regression checks\n"
            )
            print(report.read_text().strip())
            return NO_BASELINE
        current, base = load_run_folder(Path(run_dir)), load_run_folder(baseline)
        try:  # the same workload, model, SLOs and source as the baseline (infersweep.results.comparable)
            notes = check_comparable(
                {f"this run {current.run_id}": current, f"baseline {base.run_id}": base}, lost_points_ok=True
            )
        except NotComparable as e:
            report.write_text(
                f"{INCOMPARABLE}: {e}; promote a run of the recipe as it is now to s3://{bucket}/{baseline_prefix}/\n"
            )
            print(report.read_text().strip())
            return INCOMPARABLE
        verdict = judge_run(current.table, base.table, tolerances)
    if notes:
        verdict.report = "\n".join(
            [verdict.report.splitlines()[0], *(f"note: {n}" for n in notes), *verdict.report.splitlines()[1:]]
        )
    report.write_text(verdict.report if verdict.report.endswith("\n") else verdict.report + "\n")
    print(verdict.report)
    if verdict.verdict != "regressed":
        print(f"regression-check: {verdict.verdict}")
    return verdict.verdict
