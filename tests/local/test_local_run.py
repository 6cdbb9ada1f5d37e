"""End to end on this machine: the rendered workflow of the walking-skeleton recipe runs with a real Dynamo
frontend + mocker workers, real AIPerf at each concurrency, and a real S3-compatible server."""

from __future__ import annotations

import contextlib
import io
import json
import socket

import pandas as pd
import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.dynamo import procs
from infersweep.local.run import ARTIFACT_BUCKET, run_local
from infersweep.local.standins.s3server import LocalS3
from infersweep.results.publish import verify_run
from tests.support.run_failure import why_failed

pytestmark = pytest.mark.e2e
NEMOTRON = "nemotron-3-nano-fp8-vllm-agg-kv"


@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    bucket = load_cluster_settings().s3.bucket
    with LocalS3(buckets=[bucket, ARTIFACT_BUCKET]) as s3:
        events = []
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            res = run_local(
                NEMOTRON,
                out_root=root / "runs",
                cache_root=root / "cache",
                s3=s3,
                on_event=lambda kind, node: events.append((kind, node.name, node.phase)),
            )
        res.printed = printed.getvalue()
        report = verify_run(bucket, f"{load_cluster_settings().s3.prefix}/{NEMOTRON}/{res.run_id}", s3=s3.client())
        artifacts = [o["Key"] for o in s3.client().list_objects_v2(Bucket=ARTIFACT_BUCKET).get("Contents", [])]
        yield res, report, artifacts, events


def test_run_succeeds_and_table_has_one_measured_row_per_concurrency(local_run):
    res, *_ = local_run
    assert res.phase == "Succeeded", why_failed(res)
    df = pd.read_parquet(res.results_dir / "summary" / "results.parquet")
    assert list(df["concurrency"]) == [1, 4]
    assert (df["status"] == "ok").all()
    for col in (
        "ttft_p50_ms",
        "ttft_p90_ms",
        "ttft_p99_ms",
        "itl_p50_ms",
        "request_latency_p99_ms",
        "output_throughput_tok_s",
        "output_throughput_tok_s_per_gpu",
        "output_throughput_p50_tok_s_per_user",
        "request_throughput_req_s",
    ):
        assert (df[col] > 0).all(), col
    assert (df["error_ratio"] == 0).all()
    # More concurrency, more throughput: the mocker workers really served the load.
    assert df["output_throughput_tok_s"].iloc[1] > 1.5 * df["output_throughput_tok_s"].iloc[0]
    csv = pd.read_csv(res.results_dir / "summary" / "results.csv")
    assert len(csv) == 2
    png = (res.results_dir / "summary" / "pareto.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000


def test_points_are_real_aiperf_measurements_against_the_frontend(local_run):
    res, *_ = local_run
    for c in (1, 4):
        result = json.loads((res.results_dir / "points" / f"c{c}" / "result.json").read_text())
        assert result["status"] == "ok" and result["aiperf_version"] == "0.13.0"
        assert "--concurrency" in result["argv"] and str(c) in result["argv"]
        assert result["requests_ok"] >= 24


def test_results_are_published_with_checksums_and_manifest_and_artifacts_kept(local_run):
    res, report, artifacts, _ = local_run
    assert report["ok"]
    keys = {o.split(res.run_id + "/", 1)[1] for o in res.s3_keys}
    assert {"manifest.json", "summary/results.parquet", "summary/pareto.png", "points/c4/result.json"} <= keys
    assert any(k.endswith("pareto.png") for k in artifacts), (
        "summarize's output artifacts go to the artifact repository"
    )


def test_dag_ran_in_declared_order_with_exit_handler_last(local_run):
    *_, events = local_run
    ends = [n.split(".", 1)[1] for kind, n, _ in events if kind == "end" and "." in n]
    order = [
        e
        for e in ends
        if e
        in (
            "ensure-pvc",
            "model-cache",
            "gpu-span.deploy",
            "gpu-span.wait-ready",
            "gpu-span",
            "onExit.teardown",
            "onExit.scrape",
            "onExit.summarize",
            "onExit.publish",
            "onExit.verdict",
            "onExit",
        )
    ]
    assert order[:5] == ["ensure-pvc", "model-cache", "gpu-span.deploy", "gpu-span.wait-ready", "gpu-span"]
    # the bookkeeping is the exit handler's: summarised, published, then judged
    assert order[-1] == "onExit" and order.index("onExit.publish") > order.index("onExit.summarize")
    assert order.index("onExit.verdict") > order.index("onExit.publish")


def test_no_process_or_port_is_left(local_run):
    res, *_ = local_run
    for d in (res.run_dir / "state" / "dgd").iterdir():
        assert procs.alive(d) == [], d
        dep = json.loads((d / "deployment.json").read_text())
        port = int(dep["frontend_url"].rsplit(":", 1)[1])
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, f"frontend port {port} still open"


def test_it_says_what_it_scaled_before_running(local_run):
    res, *_ = local_run
    note = res.printed.splitlines()
    assert note[0].startswith(f"local mode runs a scaled-down copy of {NEMOTRON}")
    assert "  concurrency  [1, 4, 16, 32, 64, 128]" in note[1] and note[1].endswith("-> [1, 4]")
    row = {line.split("  ")[1].strip(): line for line in note[1:] if line.startswith("  ")}
    assert row["isl / osl"].split() == ["isl", "/", "osl", "1024", "/", "256", "->", "256", "/", "64"]
    # the recipe's repetitions and the one a simulated point gets, with how to ask for more
    assert row["repetitions"].split()[1:4] == ["3", "->", "1"] and "regression.repetitions=N" in row["repetitions"]
    workers = [line for line in note if "8 x 1 GPU" in line]
    assert len(workers) == 1 and workers[0].endswith("-> 2 mocker workers")


def test_the_results_store_is_on_disk_and_readable_after_the_run(local_run, capsys):
    from infersweep.cli import main
    from infersweep.results.store import RunStore

    res, *_ = local_run
    assert res.store == res.run_dir.parent / "store" and res.store.is_dir()
    run = RunStore(res.store).load(res.run_id)  # files only: no S3 server involved
    assert list(run.table["concurrency"]) == [1, 4] and run.source == str(res.store / NEMOTRON / res.run_id)
    assert main(["runs", "--store", str(res.store)]) == 0
    out = capsys.readouterr().out
    assert res.run_id in out and "complete" in out and "2/2" in out
