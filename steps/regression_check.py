"""Step: compare this run's results with the recipe's baseline in S3; fail with a readable report.

The verdict (pass / regressed / improved / inconclusive, noise-aware, tolerances from the recipe) is
`infersweep.results.regression.judge_run`'s job; this step only fetches the baseline, calls it, writes
the report as an artifact and turns "regressed" into a failed step. An empty --baseline-prefix (ad-hoc
runs) skips the check; a recipe without a baseline yet is reported and passes, so the first nightly run
of a new recipe can be promoted to baseline.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from workflows.step_declarations import REGRESSION_CHECK


def fetch_prefix(bucket: str, prefix: str, dest: Path) -> int:
    """Download every object under s3://bucket/prefix/ into dest; return how many."""
    from infersweep.results.s3 import s3_client  # fails in seconds when S3 is unreachable

    s3 = s3_client()
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix.rstrip("/") + "/"):
        for obj in page.get("Contents", []):
            rel = obj["Key"][len(prefix.rstrip("/")) + 1:]
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(target))
            n += 1
    return n


def main(argv: list[str] | None = None) -> int:
    a = REGRESSION_CHECK.parser().parse_args(argv)
    report = Path(a.report)
    report.parent.mkdir(parents=True, exist_ok=True)
    if not a.baseline_prefix:
        report.write_text("regression check skipped: no baseline-prefix was given\n")
        print("regression-check: no baseline-prefix; skipped")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        baseline = Path(tmp)
        if fetch_prefix(a.bucket, a.baseline_prefix, baseline) == 0:
            report.write_text(f"no baseline at s3://{a.bucket}/{a.baseline_prefix}/: nothing to compare; "
                              "promote a good run there to start regression checks\n")
            print(report.read_text().strip())
            return 0
        from infersweep.results.regression import judge_run  # the one verdict logic, shared with the CLI
        from infersweep.results.run import load_run_folder

        verdict = judge_run(load_run_folder(Path(a.run_dir)).table, load_run_folder(baseline).table, a.tolerances)
    report.write_text(verdict.report if verdict.report.endswith("\n") else verdict.report + "\n")
    print(verdict.report)
    if verdict.verdict == "regressed":
        # The last stderr line becomes the step's message in the Argo UI.
        print(f"regression-check: REGRESSED against s3://{a.bucket}/{a.baseline_prefix}/ (report: artifact "
              "regression-report)", file=sys.stderr)
        return 1
    print(f"regression-check: {verdict.verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
