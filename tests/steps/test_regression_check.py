"""The nightly regression-check step: fetches the baseline run from a real S3 server, judges the current
run with the shared verdict logic, fails the step on a regression with a readable report."""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest

from infersweep.aiperf import read_point
from infersweep.local.standins.s3server import LocalS3
from infersweep.results import summarize
from infersweep.results.publish import publish_tree
from steps import regression_check


def make_run(root, fixture, name, repetitions=1):
    run = root / name
    for rep in range(repetitions):
        point = run / "points" / ("c4" if rep == 0 else f"c4-r{rep}")
        shutil.copytree(fixture, point / "aiperf")
        # As aiperf_point writes it now (seed of its own, cache state recorded); judged with the local validity
        # profile, as the mocker reference run is local (a 0.7 s point is too short for the default one).
        (point / "result.json").write_text(
            json.dumps(
                read_point(point / "aiperf") | {"concurrency": 4, "repetition": rep, "cache_state": "fresh-prompts"}
            )
        )
    os.environ["INFERSWEEP_PLATFORM"] = "local"
    try:
        summarize.summarize(run, 2, {"ttft_p50_ms": 5000}, "demo", {"run_id": name})
    finally:
        os.environ.pop("INFERSWEEP_PLATFORM")
    return run


@pytest.fixture
def s3_env(monkeypatch):
    with LocalS3(buckets=["results"]) as s3:
        for k, v in s3.env().items():
            monkeypatch.setenv(k, v)
        yield s3


def _double_ttft_p50(run):
    table = pd.read_parquet(run / "summary" / "results.parquet")
    for col in [c for c in table.columns if c.startswith("ttft_p50_ms") or c == "ttft_p50_ms"]:
        table[col] = table[col] * 2
    table.to_parquet(run / "summary" / "results.parquet", index=False)


@pytest.mark.parametrize("repetitions, verdict", [(3, "regressed"), (1, "inconclusive")])
def test_same_results_pass_and_doubled_ttft_fails_the_step(tmp_path, aiperf_ref, s3_env, repetitions, verdict):
    """With the nightly's repetitions a doubled TTFT fails the step; with one repetition per point nothing is
    decided (issue 43: n = 1 has no noise estimate), which the report says, and the step does not fail."""
    fixture = aiperf_ref / "dynamo-mocker-c4"
    base = make_run(tmp_path, fixture, "base", repetitions)
    publish_tree(base, bucket="results", prefix="baselines/demo", s3=s3_env.client())
    cur = make_run(tmp_path, fixture, "cur", repetitions)
    report = tmp_path / "report.md"
    args = [
        "--run-dir",
        str(cur),
        "--bucket",
        "results",
        "--baseline-prefix",
        "baselines/demo",
        "--report",
        str(report),
    ]
    assert regression_check.main(args) == 0
    assert "regressed" not in report.read_text().splitlines()[0].lower()

    _double_ttft_p50(cur)
    rc = regression_check.main(args + ["--tolerances", '{"ttft_p50_ms": {"rel": 0.1}}'])
    assert rc == (1 if verdict == "regressed" else 0)
    first = report.read_text().splitlines()[0].lower()
    assert first.startswith(verdict) and "ttft_p50_ms" in report.read_text()


def test_no_baseline_prefix_skips_and_missing_baseline_passes_with_a_note(tmp_path, aiperf_ref, s3_env):
    cur = make_run(tmp_path, aiperf_ref / "dynamo-mocker-c4", "cur")
    report = tmp_path / "r.md"
    assert (
        regression_check.main(
            ["--run-dir", str(cur), "--bucket", "results", "--baseline-prefix", "", "--report", str(report)]
        )
        == 0
    )
    assert "skipped" in report.read_text()
    assert (
        regression_check.main(
            ["--run-dir", str(cur), "--bucket", "results", "--baseline-prefix", "nothing/here", "--report", str(report)]
        )
        == 0
    )
    assert "no baseline" in report.read_text()
