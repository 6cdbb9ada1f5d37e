"""The results table (infersweep.results.table) built by the summarize step from REAL AIPerf 0.13.0
artifact dirs (tests/fixtures/aiperf/0.13.0): a good point, a point with HTTP 500s, a failed point."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pandas as pd
import pytest

from infersweep.results.columns import SCHEMA_VERSION
from tests.support.paths import REPO
from tests.support.run_folders import SLO, add_point, make_run_folder, summarize


def test_one_row_per_point_with_status_and_every_aiperf_statistic_in_the_raw_table(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    df = summarize(run)
    assert list(df["concurrency"]) == [4, 8, 16]
    assert list(df["status"]) == ["ok", "partial", "failed"]
    assert (df["schema_version"] == SCHEMA_VERSION).all()
    # tens of columns, not ~800: one column per metric, the AIPerf statistics in their own table
    assert 60 <= len(df.columns) <= 110 and not [c for c in df.columns if "__" in c]
    summary = json.loads((aiperf_ref / "dynamo-mocker-c4" / "profile_export_aiperf.json").read_text())
    raw = pd.read_parquet(run / "summary" / "results_raw.parquet")
    c4 = raw[raw["concurrency"] == 4].set_index(["metric", "stat"])
    # Every statistic AIPerf reported is a row of the raw table, with AIPerf's value and unit.
    n = 0
    for metric, block in summary.items():
        if isinstance(block, dict) and "unit" in block:
            for stat, value in block.items():
                if stat != "unit":
                    assert c4.at[(metric, stat), "value"] == pytest.approx(value), (metric, stat)
                    assert c4.at[(metric, stat), "unit"] == block["unit"]
                    n += 1
    assert len(c4) == n
    good = df.iloc[0]
    # the raw rows name the summary column holding the same number
    assert c4.at[("time_to_first_token", "p50"), "column"] == "ttft_p50_ms"
    assert good["ttft_p50_ms"] == pytest.approx(summary["time_to_first_token"]["p50"])
    assert good["ttft_p50_ms"] == pytest.approx(37.199, abs=1e-3)
    assert good["output_throughput_tok_s_per_gpu"] == pytest.approx(good["output_throughput_tok_s"] / 2)
    assert good["output_throughput_p50_tok_s_per_user"] == pytest.approx(
        summary["output_token_throughput_per_user"]["p50"]
    )
    # one name per metric: none of the old spellings is a column
    assert not {"ttft_ms_p50", "time_to_first_token__p50", "tok_s_per_user", "latency_p50_ms"} & set(df.columns)
    failed = df.iloc[2]
    assert math.isnan(failed["ttft_p50_ms"]) and pd.isna(failed["slo_pass"]) and failed["reason"]
    assert set(raw["concurrency"]) == {4, 8}  # the failed point left no AIPerf summary


def test_timestamps_are_utc_timestamp_types_and_the_version_is_in_the_file(tmp_path, aiperf_ref):
    import pyarrow.parquet as pq

    run = make_run_folder(tmp_path, aiperf_ref)
    df = summarize(run)
    schema = pq.read_schema(run / "summary" / "results.parquet")
    for col in ("point_start", "point_end", "run_start", "run_end"):
        assert str(schema.field(col).type) == "timestamp[us, tz=UTC]", col
        assert str(df[col].dt.tz) == "UTC"
    start = json.loads((run / "points" / "c4" / "result.json").read_text())["start_time"]
    assert df.iloc[0]["point_start"] == pd.Timestamp(start, tz="UTC")  # AIPerf's naive local time, read as UTC
    assert schema.metadata[b"infersweep.schema_version"] == SCHEMA_VERSION.encode()
    # typed columns, also when every value is NA (a closed-loop run's arrival)
    assert str(schema.field("arrival").type) == "string" and str(schema.field("valid").type) == "bool"
    assert str(schema.field("concurrency").type) == "int64"


def test_goodput_counts_the_requests_that_meet_the_slo(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref, failed=False)
    loose = summarize(run).set_index("concurrency")
    # Every successful request meets a loose SLO: goodput is the request rate, minus the failed requests.
    assert loose.at[4, "goodput_source"] == "records"
    assert loose.at[4, "goodput_req_s"] == pytest.approx(loose.at[4, "request_throughput_req_s"])
    assert loose.at[4, "goodput_ratio"] == 1.0
    assert loose.at[8, "goodput_ratio"] == pytest.approx(14 / 30)  # 16 of 30 requests got HTTP 500
    # A TTFT bound at the good point's median: about half its requests meet it, so half the goodput,
    # while the point-level check (p50 <= bound) still passes. The point is invalid by the default thresholds
    # (too short), so the table's slo_pass is NA (not judged, infersweep.results.evidence) and the detail
    # says what its numbers did.
    p50 = loose.at[4, "ttft_p50_ms"]
    tight = summarize(run, slo={"ttft_p50_ms": p50}).set_index("concurrency")
    frac = tight.at[4, "goodput_ratio"]
    assert 0.4 <= frac <= 0.6
    assert tight.at[4, "goodput_req_s"] == pytest.approx(frac * tight.at[4, "request_throughput_req_s"])
    assert not tight.at[4, "valid"] and pd.isna(tight.at[4, "slo_pass"])
    assert tight.at[4, "slo_detail"].startswith("not judged: invalid point (too short")
    assert tight.at[4, "slo_detail"].endswith("its numbers: meets ttft_p50_ms")
    strict = summarize(run, slo={"ttft_p50_ms": p50 / 10}).set_index("concurrency")
    assert pd.isna(strict.at[4, "slo_pass"]) and "its numbers: ttft_p50_ms=" in strict.at[4, "slo_detail"]


def test_repetitions_are_rows_of_their_own(tmp_path, aiperf_ref):
    run = tmp_path / "run"
    add_point(run, "c4", aiperf_ref / "dynamo-mocker-c4", 4)
    add_point(run, "c4-r1", aiperf_ref / "dynamo-mocker-c4", 4)
    df = summarize(run)
    assert list(zip(df["concurrency"], df["repetition"], strict=True)) == [(4, 0), (4, 1)]


def test_context_from_the_pipeline_and_from_the_points(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    ctx = {
        "recipe_hash": "abc123",
        "engine": "vllm",
        "engine_image": "nvcr.io/x:1",
        "model_revision": "deadbeef",
        "topology": "2xworker(tp=1)",
        "gpu_type": "H100",
        "router": "kv",
    }
    df = summarize(run, extra=["--context", json.dumps(ctx), "--run-id", "wf-123"])
    row = df.iloc[0]
    assert (row["run_id"], row["recipe"], row["recipe_hash"], row["gpu_type"], row["gpu_count"]) == (
        "wf-123",
        "demo-prefix-kv",
        "abc123",
        "H100",
        2,
    )
    assert row["aiperf_version"] == "0.13.0" and row["context_source"] == "pipeline"
    assert row["run_start"] <= row["run_end"]
    assert json.loads(row["slo"]) == SLO
    record = json.loads((run / "summary" / "run.json").read_text())
    assert record["schema_version"] == SCHEMA_VERSION and record["context"]["run_id"] == "wf-123"


def test_bad_context_is_one_clear_error(tmp_path, aiperf_ref):
    run = make_run_folder(tmp_path, aiperf_ref)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "steps.summarize",
            "--run-dir",
            str(run),
            "--gpu-count",
            "2",
            "--context",
            '{"recipe_hsh": "x"}',
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
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
    given = summarize(
        run, extra=["--context", json.dumps({"model_commit": "abc123"}), "--model-commit-file", str(commit_file)]
    )
    assert set(given["model_commit"]) == {"abc123"}
    from_file = summarize(run, extra=["--model-commit-file", str(commit_file)])
    assert set(from_file["model_commit"]) == {"0ther0model"}
