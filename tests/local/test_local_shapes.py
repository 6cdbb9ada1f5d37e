"""Local simulation of every DGD shape in the catalog: one recipe each of aggregated round-robin, aggregated
KV router, disaggregated 1P1D and multinode, run end to end as in tests/local/test_local_run.py (real Dynamo
frontend + mocker workers, real AIPerf, real S3 server) with a one-point sweep to stay small."""

from __future__ import annotations

import json

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.run import ARTIFACT_BUCKET, run_local
from infersweep.local.standins.s3server import LocalS3
from tests.support.run_failure import run_settled, why_failed

pytestmark = pytest.mark.e2e
ONE_POINT = {"points": '[{"concurrency":2,"requests":12,"warmup":0}]'}

SHAPES = {
    "agg-round-robin": ("nemotron-3-nano-fp8-vllm-agg-rr", {"worker"}, "round-robin"),
    # A trace recipe: local mode runs the trace's average lengths (scaled) as a synthetic workload.
    "agg-kv-router": ("lightning-vllm-agg-h100-dspark-kv-router", {"worker"}, "kv"),
    "disagg-1p1d": ("lightning-vllm-disagg-h200-dflash", {"prefill", "decode"}, "round-robin"),
    # One replica of TP=16 over 2 nodes: local mode runs each node's share as a mocker worker.
    "multinode": ("llama-3-1-8b-vllm-tp16-multinode", {"worker"}, "round-robin"),
}


@pytest.fixture(scope="module")
def s3():
    with LocalS3(buckets=[load_cluster_settings().s3.bucket, ARTIFACT_BUCKET]) as server:
        yield server


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_local_run_of_each_shape_measures_a_point(shape, s3, tmp_path):
    name, roles, router = SHAPES[shape]
    res = run_settled(
        lambda d: run_local(
            name,
            out_root=d / "runs",
            cache_root=d / "cache",
            s3=s3,
            overrides=ONE_POINT,
            on_event=lambda kind, node: None,
        ),
        tmp_path,
    )
    assert res.phase == "Succeeded", why_failed(res)
    result = json.loads((res.results_dir / "points" / "c2" / "result.json").read_text())
    assert result["status"] == "ok" and result["requests_ok"] >= 12, result
    # The DGD that ran is the recipe's shape: its roles, its router, multinode as more mocker workers.
    dep = json.loads(next((res.run_dir / "state" / "dgd").glob("*/deployment.json")).read_text())
    assert {c["role"] for c in dep["components"]} == roles and dep["router_mode"] == router
    if shape == "multinode":
        (worker,) = dep["components"]
        assert worker["node_count"] == 2 and worker["num_workers"] == 2
    assert res.s3_keys, "results were published"
