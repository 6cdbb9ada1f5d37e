"""The mocker timing table built from AIConfigurator, and a real Dynamo 1.6.1 mocker running on it.

Cost (2 shared cores): test_table_builder_small_case ~30-40 s (8 real AIConfigurator estimates);
test_mocker_runs_on_the_calibrated_table ~1.5-2.5 min (9 estimates for the local table, a real
frontend + mocker, one real AIPerf point). Both skip without .venv-aic; the second also without
.venv-dynamo / .venv-aiperf.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from infersweep.predict import aic
from infersweep.predict.mocker_table import Grid, build_table, check_table
from infersweep.predict.target import Target, map_recipe
from infersweep.recipe import load_recipe
from tests.support.mocker_point import mocker_deployment, run_point_step

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
    with mocker_deployment(tmp_path, "qwen3-32b-fp8-vllm-agg", max_workers=2) as dep:
        timing = json.loads((tmp_path / "dgd" / "timing.json").read_text())["worker"]
        assert timing["timing"] == "calibrated", timing
        assert timing["database"] == "AIConfigurator 0.12.0 h100_sxm vllm 0.24.0"
        out = tmp_path / "point"
        proc = run_point_step(
            dep,
            *("--concurrency", "1", "--requests", "6", "--warmup", "1", "--isl", "128", "--osl", "48"),
            *("--out", str(out), "--timeout-s", "300"),
            timeout_s=420,
        )
        result = json.loads((out / "result.json").read_text())
        assert result["status"] == "ok", (result, proc.stderr[-2000:])
        worker_argv = next(p["argv"] for p in dep.processes if "dynamo.mocker" in p["argv"])
    itl = result["metrics"]["itl_avg_ms"]
    # One request at a time: every decode step is batch 1 at a context of 128..176 tokens, which the
    # table clamps to its smallest context: the design's batch-1 answer.
    expected = timing["itl_ms_batch1"]
    assert itl == pytest.approx(expected, rel=0.15), f"AIPerf ITL {itl:.2f} ms vs table {expected:.2f} ms"
    print(f"AIPerf ITL {itl:.2f} ms vs table {expected:.2f} ms", file=sys.stderr)
    assert worker_argv[worker_argv.index("--planner-profile-data") + 1] == timing["table"]
