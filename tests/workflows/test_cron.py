"""The nightly regression: CronWorkflows as Argo accepts them, and the regression-check step's contract
(skip without a baseline prefix, pass-and-say-so without a baseline yet), against a real S3-compatible
server (moto_server via LocalS3). Verdict logic is issue 5's (infersweep.results.regression)."""

from __future__ import annotations

import os

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.standins.s3server import LocalS3
from infersweep.recipe import load_recipe
from infersweep.schemas import validate_argo
from steps import regression_check
from workflows.cron import cron_name, nightly_cron

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


@pytest.fixture(scope="module")
def cron():
    return nightly_cron(load_recipe(RECIPE), load_cluster_settings())


def test_cron_validates_under_both_argo_versions(cron):
    for v in ("v4.1.2", "v3.7.18"):
        validate_argo(cron, v)


def test_cron_is_a_forbid_concurrency_schedule_list_with_history(cron):
    spec = cron["spec"]
    assert spec["schedules"] == load_cluster_settings().nightly.schedules and "schedule" not in spec
    assert spec["timezone"] == "Etc/UTC" and spec["concurrencyPolicy"] == "Forbid"
    assert (
        spec["successfulJobsHistoryLimit"] >= 1 and spec["failedJobsHistoryLimit"] >= spec["successfulJobsHistoryLimit"]
    )


def test_each_night_is_an_ordinary_pipeline_run_with_its_gpu_locks_and_checked_against_its_baseline(cron):
    ws = cron["spec"]["workflowSpec"]
    assert ws["workflowTemplateRef"] == {"name": "infersweep-vllm-agg"}
    params = {p["name"]: p["value"] for p in ws["arguments"]["parameters"]}
    assert params["baseline-prefix"] == f"baselines/{RECIPE}"
    # The GPU guard sits on the pipeline's gpu-span template, not on the Workflow (a Workflow-level lock is
    # skipped by a UI submit of the template); the night only carries its lane's keys (an 8-GPU H100 run).
    assert "synchronization" not in ws
    assert [params[f"gpu-lock-{i}"] for i in range(1, 5)] == [
        "h100-8gpu",
        "h100-8gpu-pad2",
        "h100-8gpu-pad3",
        "h100-8gpu-pad4",
    ]
    assert ws["workflowMetadata"]["labels"]["infersweep.io/recipe"] == RECIPE


def test_cron_names_fit_argos_52_characters():
    long = "a" * 52
    assert len(cron_name(long)) <= 52 and cron_name(long) != cron_name("a" * 51 + "b")
    assert cron_name("short") == "nightly-short"


def test_regression_check_skips_without_a_baseline_prefix(tmp_path, capsys):
    rc = regression_check.main(
        ["--run-dir", str(tmp_path), "--bucket", "b", "--baseline-prefix", "", "--report", str(tmp_path / "r.md")]
    )
    assert rc == 0 and "skipped" in (tmp_path / "r.md").read_text()


def test_regression_check_passes_and_says_so_when_no_baseline_exists_yet(tmp_path, monkeypatch):
    with LocalS3(buckets=["results"]) as s3:
        for k, v in s3.env().items():
            monkeypatch.setenv(k, v)
        rc = regression_check.main(
            [
                "--run-dir",
                str(tmp_path),
                "--bucket",
                "results",
                "--baseline-prefix",
                f"baselines/{RECIPE}",
                "--report",
                str(tmp_path / "r.md"),
            ]
        )
    assert rc == 0
    assert f"no baseline at s3://results/baselines/{RECIPE}/" in (tmp_path / "r.md").read_text()
    assert os.environ.get("AWS_ENDPOINT_URL")  # monkeypatch restores it after the test
