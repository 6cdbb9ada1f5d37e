"""The GPU tier (`pytest -m gpu`): the pipeline with real engine workers on this machine's GPUs. It runs where a
GPU and the GPU stack are present and skips, saying why, everywhere else (CI never has a GPU; the runs it makes
on a GPU host are committed as data in benchmarks/measured/ and read by the CPU tests)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infersweep.local.fake_gpu import fake_gpu_count
from infersweep.local.gpu_workers import detect_gpus
from infersweep.paths import venv_python
from tests.support.run_failure import why_failed

GPU_PYTHON = os.environ.get("INFERSWEEP_GPU_PYTHON") or venv_python("gpu")
# Fake GPUs (INFERSWEEP_FAKE_GPU) are the CPU tier's stand-in, not a GPU to measure on.
READY = not fake_gpu_count() and bool(detect_gpus()) and Path(GPU_PYTHON).exists()
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        not READY,
        reason="GPU tier: needs a GPU (nvidia-smi) and the GPU stack ($INFERSWEEP_GPU_PYTHON or .venv-gpu: "
        "scripts/setup.sh --gpu, or the offline bundle's venv-site-vllm)",
    ),
]


def test_a_real_engine_point_measures_the_requested_tokens_on_the_server(tmp_path):
    from infersweep.local.run import run_local

    res = run_local(
        "qwen3-32b-bf16-vllm-h200-tp1",
        out_root=tmp_path,
        workers="gpu",
        gpu_python=GPU_PYTHON,
        recipe_overrides={"workload.concurrency": [1]},
    )
    assert res.phase == "Succeeded", why_failed(res)
    import pandas as pd

    df = pd.read_parquet(res.results_dir / "summary" / "results.parquet")
    row = df.iloc[0]
    assert row["status"] == "ok" and str(row["source"]).startswith("measured (local GPU:")
    assert 250 <= row["osl_delivered"] <= 256 and 5 < row["itl_avg_ms"] < 100
    assert row["gpu_power_total_w"] > 50 and row["energy_j_per_output_token"] > 0
