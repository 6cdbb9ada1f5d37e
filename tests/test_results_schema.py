"""The results table (infersweep.results.table) built by the summarize step from REAL AIPerf 0.13.0
artifact dirs (tests/fixtures/aiperf/0.13.0): a good point, a point with HTTP 500s, a failed point."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from infersweep.results.table import SCHEMA_VERSION
from infersweep.aiperf import read_point
from steps.summarize import main as summarize_main

from conftest import copy_tree

REPO = Path(__file__).resolve().parents[1]
SLO = {"ttft_p50_ms": 1000, "tok_s_user_min": 1}


def add_point(run_dir: Path, name: str, artifacts: Path | None, concurrency: int, **extra) -> Path:
    """A point folder as steps.aiperf_point leaves it: aiperf/ artifacts + result.json from read_point."""
    point = run_dir / "points" / name
    if artifacts is not None:
        copy_tree(artifacts, point / "aiperf")
    result = read_point(point / "aiperf") | {"concurrency": concurrency, **extra}
    point.mkdir(parents=True, exist_ok=True)
    (point / "result.json").write_text(json.dumps(result))
    return point


def make_run_folder(root: Path, aiperf_ref: Path, *, failed: bool = True) -> Path:
    run = root / "run"
    add_point(run, "c4", aiperf_ref / "dynamo-mocker-c4", 4)
    add_point(run, "c8", aiperf_ref / "partial_500s_rc0", 8)
    if failed:
        add_point(run, "c16", aiperf_ref / "unreachable_rc1", 16)
    return run


def summarize(run: Path, slo=SLO, gpu_count=2, extra=()) -> pd.DataFrame:
    assert summarize_main(["--run-dir", str(run), "--gpu-count", str(gpu_count), "--slo", json.dumps(slo),
                           "--title", "demo-prefix-kv", *extra]) == 0
    return pd.read_parquet(run / "summary" / "results.parquet")


def test_one_row_per_point_with_status_and_every_aiperf_statistic(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    df = summarize(run)
    assert list(df["concurrency"]) == [4, 8, 16]
    assert list(df["status"]) == ["ok", "partial", "failed"]
    assert (df["schema_version"] == SCHEMA_VERSION).all()
    summary = json.loads((aiperf_ref / "dynamo-mocker-c4" / "profile_export_aiperf.json").read_text())
    good = df.iloc[0]
    # Every statistic AIPerf reported is a column, with AIPerf's value.
    for metric, block in summary.items():
        if isinstance(block, dict) and "unit" in block:
            for stat, value in block.items():
                if stat != "unit":
                    assert good[f"{metric}__{stat}"] == pytest.approx(value), (metric, stat)
    assert good["ttft_ms_p50"] == pytest.approx(37.199, abs=1e-3)
    assert good["tok_s_per_gpu"] == pytest.approx(good["output_tok_s"] / 2)
    assert good["tok_s_per_user"] == pytest.approx(good["tok_s_per_user_p50"])
    # v0 names still read the same numbers.
    assert good["ttft_p50_ms"] == good["ttft_ms_p50"] and good["latency_p99_ms"] == good["request_latency_ms_p99"]
    failed = df.iloc[2]
    assert math.isnan(failed["ttft_ms_p50"]) and pd.isna(failed["slo_pass"]) and failed["reason"]


def test_goodput_counts_the_requests_that_meet_the_slo(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref, failed=False)
    loose = summarize(run).set_index("concurrency")
    # Every successful request meets a loose SLO: goodput is the request rate, minus the failed requests.
    assert loose.at[4, "goodput_source"] == "records"
    assert loose.at[4, "goodput_req_s"] == pytest.approx(loose.at[4, "request_per_s"])
    assert loose.at[4, "goodput_fraction"] == 1.0
    assert loose.at[8, "goodput_fraction"] == pytest.approx(14 / 30)  # 16 of 30 requests got HTTP 500
    # A TTFT bound at the good point's median: about half its requests meet it, so half the goodput,
    # while the point-level check (p50 <= bound) still passes. The point is invalid by the default thresholds
    # (too short), so the table's slo_pass is NA (not judged, infersweep.results.evidence) and the detail
    # says what its numbers did.
    p50 = loose.at[4, "ttft_ms_p50"]
    tight = summarize(run, slo={"ttft_p50_ms": p50}).set_index("concurrency")
    frac = tight.at[4, "goodput_fraction"]
    assert 0.4 <= frac <= 0.6
    assert tight.at[4, "goodput_req_s"] == pytest.approx(frac * tight.at[4, "request_per_s"])
    assert not tight.at[4, "valid"] and pd.isna(tight.at[4, "slo_pass"])
    assert tight.at[4, "slo_detail"].startswith("not judged: invalid point (too short")
    assert tight.at[4, "slo_detail"].endswith("its numbers: meets ttft_p50_ms")
    strict = summarize(run, slo={"ttft_p50_ms": p50 / 10}).set_index("concurrency")
    assert pd.isna(strict.at[4, "slo_pass"]) and "its numbers: ttft_ms_p50=" in strict.at[4, "slo_detail"]


def test_repetitions_are_rows_of_their_own(tmp_path, aiperf_ref):
    run = tmp_path / "run"
    add_point(run, "c4", aiperf_ref / "dynamo-mocker-c4", 4)
    add_point(run, "c4-r1", aiperf_ref / "dynamo-mocker-c4", 4)
    df = summarize(run)
    assert list(zip(df["concurrency"], df["repetition"])) == [(4, 0), (4, 1)]


def test_context_from_the_pipeline_and_from_the_points(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    ctx = {"recipe_hash": "abc123", "engine": "vllm", "engine_image": "nvcr.io/x:1", "model_revision": "deadbeef",
           "topology": "2xworker(tp=1)", "gpu_type": "H100", "router": "kv"}
    df = summarize(run, extra=["--context", json.dumps(ctx), "--run-id", "wf-123"])
    row = df.iloc[0]
    assert (row["run_id"], row["recipe"], row["recipe_hash"], row["gpu_type"], row["gpu_count"]) == (
        "wf-123", "demo-prefix-kv", "abc123", "H100", 2)
    assert row["aiperf_version"] == "0.13.0" and row["context_source"] == "pipeline"
    assert row["run_start"] <= row["run_end"]
    assert json.loads(row["slo"]) == SLO
    record = json.loads((run / "summary" / "run.json").read_text())
    assert record["schema_version"] == SCHEMA_VERSION and record["context"]["run_id"] == "wf-123"


def test_bad_context_is_one_clear_error(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    proc = subprocess.run([sys.executable, "-m", "steps.summarize", "--run-dir", str(run), "--gpu-count", "2",
                           "--context", '{"recipe_hsh": "x"}'], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2
    assert "unknown keys ['recipe_hsh']" in proc.stderr and "Traceback" not in proc.stderr
    assert not (run / "summary").exists()


def test_summary_outputs_are_readable_with_plain_pandas_and_the_report_is_self_contained(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    summarize(run)
    out = run / "summary"
    assert len(pd.read_csv(out / "results.csv")) == 3
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 3
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert "partial" in html and "HTTP 500" in html  # the failed points say why
    for png in ("pareto.png", "latency.png", "errors.png"):
        assert (out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_commit_given_in_the_context_wins_over_the_file_in_the_run_dir(tmp_path, aiperf_ref):
    # An experiment hands each treatment the commit its own model-cache task resolved (in --context); the
    # file model-cache writes into the run dir (the recipe pipeline's way) may be another cache's.
    run = make_run_folder(tmp_path, aiperf_ref, failed=False)
    commit_file = run / "context" / "model-commit.txt"
    commit_file.parent.mkdir(parents=True)
    commit_file.write_text("0ther0model\n")
    given = summarize(run, extra=["--context", json.dumps({"model_commit": "abc123"}),
                                  "--model-commit-file", str(commit_file)])
    assert set(given["model_commit"]) == {"abc123"}
    from_file = summarize(run, extra=["--model-commit-file", str(commit_file)])
    assert set(from_file["model_commit"]) == {"0ther0model"}
