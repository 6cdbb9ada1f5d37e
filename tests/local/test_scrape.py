"""Server metrics from a real Prometheus (the Debian package's /usr/bin/prometheus) that scrapes the real
Dynamo frontend of a local run every second; the scrape step's range queries land in the points' windows."""

from __future__ import annotations

import json
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.run import ARTIFACT_BUCKET, run_local
from infersweep.local.standins.prometheus import LocalPrometheus, write_targets
from infersweep.local.standins.s3server import LocalS3
from infersweep.paths import params_dir
from tests.support.run_failure import why_failed

pytestmark = pytest.mark.slow  # real servers or subprocesses, seconds each: outside the inner loop

NEMOTRON = "nemotron-3-nano-fp8-vllm-agg-kv"


def _answers(url: str) -> bool:
    try:
        urllib.request.urlopen(f"{url}/-/ready", timeout=1)
        return True
    except OSError:
        return False


def test_prometheus_scrapes_a_file_sd_target_and_stops_cleanly(tmp_path):
    prom = LocalPrometheus(tmp_path / "targets.json")
    with prom:
        write_targets(prom.targets_file, [f"127.0.0.1:{prom.port}"])  # itself: a target that surely answers
        deadline = time.monotonic() + 20
        up = []
        while not up and time.monotonic() < deadline:
            time.sleep(0.5)
            up = json.load(urllib.request.urlopen(f"{prom.url}/api/v1/query?query=up"))["data"]["result"]
        assert up and up[0]["value"][1] == "1", prom.tail()
        url, tsdb = prom.url, prom.dir
    assert not _answers(url) and not tsdb.exists()


@pytest.mark.e2e
def test_local_run_has_frontend_rate_and_ttft_samples_within_each_points_window(tmp_path):
    bucket = load_cluster_settings().s3.bucket
    t0 = time.time()
    with LocalS3(buckets=[bucket, ARTIFACT_BUCKET]) as s3:
        res = run_local(
            NEMOTRON, out_root=tmp_path / "runs", cache_root=tmp_path / "cache", s3=s3, on_event=lambda *_: None
        )
    assert res.phase == "Succeeded", why_failed(res)
    params = {
        p["name"]: p["value"]
        for p in yaml.safe_load((res.run_dir / "rendered" / "workflow.yaml").read_text())["spec"]["arguments"][
            "parameters"
        ]
    }
    assert params["prometheus-url"].startswith("http://127.0.0.1:")
    assert not _answers(params["prometheus-url"]), "the run stops its Prometheus"

    df = pd.read_parquet(res.results_dir / "metrics" / "server_metrics.parquet")
    step = float(yaml.safe_load((params_dir() / "metrics.yaml").read_text())["step_s"])
    for f in sorted(Path(res.results_dir, "points").glob("*/result.json")):
        p = json.loads(f.read_text())
        c, start, end = p["concurrency"], p["profiling_start_ns"] / 1e9, p["profiling_end_ns"] / 1e9
        mine = df[df["concurrency"] == c]
        # The step pads each window by one query step and writes times to the millisecond.
        assert mine["ts"].between(start - step - 0.001, end + step + 0.001).all(), f"c={c}: a sample outside its window"
        rate = mine[mine["metric"] == "frontend_requests_per_s"]
        assert (rate["value"] > 0).any(), f"c={c}: no frontend request rate while AIPerf was sending"
        ttft = mine[mine["metric"] == "frontend_ttft_p50_s"].dropna(subset=["value"])
        assert len(ttft) and ttft["value"].between(0.001, 10).all(), f"c={c}: no plausible frontend TTFT"

    # Deployment time-to-ready (wait-ready's record, from the DGD's creation to serving) is a result column.
    table = pd.read_parquet(next(Path(res.results_dir).rglob("results.parquet")))
    ready = table["time_to_ready_s"].dropna().unique()
    assert len(ready) == 1, f"one time-to-ready per run, got {ready}"
    first_point = min(
        json.loads(f.read_text())["profiling_start_ns"] / 1e9
        for f in Path(res.results_dir, "points").glob("*/result.json")
    )
    assert 0 < ready[0] < first_point - t0, "time-to-ready after the run started and before the first point"
