"""The mocker timing table built from AIConfigurator, and a real Dynamo 1.6.1 mocker running on it.

Cost (2 shared cores): test_table_builder_small_case ~30-40 s (8 real AIConfigurator estimates);
test_mocker_runs_on_the_calibrated_table ~1.5-2.5 min (9 estimates for the local table, a real
frontend + mocker, one real AIPerf point). Both skip without .venv-aic; the second also without
.venv-dynamo / .venv-aiperf.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from infersweep.paths import REPO_ROOT, venv_python
from infersweep.predict import aic
from infersweep.predict.mocker_table import Grid, build_table, check_table
from infersweep.predict.target import Target, map_recipe
from infersweep.recipe import load_recipe

pytestmark = pytest.mark.skipif(
    not Path(aic.aic_python()).exists(), reason="no .venv-aic (AIConfigurator): run scripts/setup.sh"
)
pytestmark = [pytestmark, pytest.mark.slow]  # real servers or subprocesses: outside the inner loop


@pytest.fixture
def aic_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERSWEEP_PREDICT_CACHE", str(tmp_path / "aic-cache"))
    return tmp_path / "aic-cache"


def test_table_builder_small_case(aic_cache):
    t = map_recipe(load_recipe("qwen3-32b-fp8-vllm-agg"))
    assert isinstance(t, Target)
    grid = Grid(isl=(64, 1024), batch=(1, 2, 4), context=(256, 1024))
    info = build_table(t, "worker", grid)
    path = Path(info.path)
    shapes = check_table(path)  # the five arrays dynamo.mocker's is_mocker_format_npz asks for
    assert shapes["prefill_isl"] == (2,) and shapes["decode_itl"] == (100, 100)
    with np.load(path) as d:
        ttft, kv, ctx, itl = (
            d["prefill_ttft_ms"],
            d["decode_active_kv_tokens"],
            d["decode_context_length"],
            d["decode_itl"],
        )
        assert ttft[1] > ttft[0] > 0  # a longer prompt takes longer to prefill
        # Batch 1 at context 256 is AIConfigurator's own static_gen answer, to the rounding of the grid.
        j = int(np.searchsorted(ctx, 256))
        i = int(np.searchsorted(kv, ctx[j]))
        assert itl[i, j] == pytest.approx(info.itl_ms_batch1, rel=0.03)
        # More requests in the batch (more KV at one context) never decode faster.
        assert all(np.diff(itl[:, j]) >= -1e-9)
    assert info.database == "AIConfigurator 0.12.0 h100_sxm vllm 0.24.0" and info.computed == 8
    again = build_table(t, "worker", grid)  # cached: same file, nothing recomputed
    assert again.path == info.path and again.computed == 8 and path.stat().st_size > 0


@pytest.mark.e2e
def test_mocker_runs_on_the_calibrated_table(aic_cache, tmp_path):
    """The real mocker loads the table local mode builds for the recipe, and AIPerf measures the table's ITL."""
    from infersweep.dgd.render import render_dgd
    from infersweep.local.dynamo.deploy import deploy_local
    from infersweep.local.dynamo.deployment import teardown_local
    from infersweep.local.dynamo.wait import wait_ready_local
    from infersweep.local.toolchain import default_dynamo_python

    if not Path(default_dynamo_python()).exists() or not Path(venv_python("aiperf")).exists():
        pytest.skip("needs .venv-dynamo and .venv-aiperf (scripts/setup.sh)")
    r = load_recipe("qwen3-32b-fp8-vllm-agg")
    dgd = render_dgd(r)
    state = tmp_path / "dgd"
    dep = deploy_local(dgd, model_dir=tmp_path / "model", state_dir=state, max_workers_per_component=2)
    try:
        timing = json.loads((state / "timing.json").read_text())["worker"]
        assert timing["timing"] == "calibrated", timing
        assert timing["database"] == "AIConfigurator 0.12.0 h100_sxm vllm 0.24.0"
        wait_ready_local(state, timeout_s=180)
        out = tmp_path / "point"
        aiperf_bin = str(Path(venv_python("aiperf")).parent / "aiperf")
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"} | {"PYTHONPATH": str(REPO_ROOT)}
        proc = subprocess.run(
            [
                venv_python("aiperf"),
                "-m",
                "steps.aiperf_point",
                "--url",
                dep.frontend_url,
                "--model",
                dep.model_name,
                "--tokenizer",
                dep.model_dir,
                "--concurrency",
                "1",
                "--requests",
                "6",
                "--warmup",
                "1",
                "--isl",
                "128",
                "--osl",
                "48",
                "--out",
                str(out),
                "--aiperf",
                aiperf_bin,
                "--timeout-s",
                "300",
            ],
            cwd=REPO_ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=420,
        )
        result = json.loads((out / "result.json").read_text())
        assert result["status"] == "ok", (result, proc.stderr[-2000:])
        worker_argv = next(p["argv"] for p in dep.processes if "dynamo.mocker" in p["argv"])
    finally:
        teardown_local(state)
    itl = result["metrics"]["itl_avg_ms"]
    # One request at a time: every decode step is batch 1 at a context of 128..176 tokens, which the
    # table clamps to its smallest context: the design's batch-1 answer.
    expected = timing["itl_ms_batch1"]
    assert itl == pytest.approx(expected, rel=0.15), f"AIPerf ITL {itl:.2f} ms vs table {expected:.2f} ms"
    print(f"AIPerf ITL {itl:.2f} ms vs table {expected:.2f} ms", file=sys.stderr)
    assert worker_argv[worker_argv.index("--planner-profile-data") + 1] == timing["table"]
