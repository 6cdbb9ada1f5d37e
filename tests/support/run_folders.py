"""Run folders as the pipeline leaves them, built from REAL AIPerf 0.13.0 artifact dirs (tests/fixtures/aiperf/0.13.0),
and the summarize step run on them: what the results, report, store and predict tests start from."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from infersweep.aiperf import read_point
from steps.summarize import main as summarize_main
from tests.conftest import copy_tree

SLO = {"ttft_p50_ms": 1000, "output_throughput_p50_tok_s_per_user": 1}


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
    assert (
        summarize_main(
            [
                "--run-dir",
                str(run),
                "--gpu-count",
                str(gpu_count),
                "--slo",
                json.dumps(slo),
                "--title",
                "demo-prefix-kv",
                *extra,
            ]
        )
        == 0
    )
    return pd.read_parquet(run / "summary" / "results.parquet")
