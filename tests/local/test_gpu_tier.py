"""The GPU tier (`pytest -m gpu`): the pipeline with real engine workers on this machine's GPUs. It runs where a
GPU and the GPU stack are present and skips, saying why, everywhere else (CI never has a GPU; the runs it makes
on a GPU host are committed as data in benchmarks/measured/ and read by the CPU tests)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infersweep.local.gpu.fake_gpu import fake_gpu_count
from infersweep.local.gpu.workers import detect_gpus
from infersweep.paths import venv_python
from tests.support.gpu_tier_checks import check_tier_run
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
    """$INFERSWEEP_GPU_TIER_RECIPE's run (default qwen3-32b-bf16-vllm-h200-tp1; its SGLang twin is
    qwen3-32b-bf16-sglang-h200-tp1) at $INFERSWEEP_GPU_TIER_CONCURRENCY (default 1; the H200 sessions ran 1,16,64 and 1,64)
    and $INFERSWEEP_GPU_TIER_ROUNDS rounds per point (default: the recipe's), the warm-up's users started over
    $INFERSWEEP_GPU_TIER_WARMUP_RAMP_S seconds when set (default: all at once), with its
    repetitions (regression.repetitions, default 3), kept in $INFERSWEEP_GPU_TIER_OUT when set (what
    benchmarks/measured/ commits). Needs a Prometheus ($INFERSWEEP_PROMETHEUS) for the server's own figures."""
    from infersweep.local.run import run_local
    from infersweep.recipe.loading import load_recipe

    recipe = os.environ.get("INFERSWEEP_GPU_TIER_RECIPE", "qwen3-32b-bf16-vllm-h200-tp1")
    engine = load_recipe(recipe).recipe.engine  # vllm / sglang: the wheel the provenance must name
    conc = [int(c) for c in os.environ.get("INFERSWEEP_GPU_TIER_CONCURRENCY", "1").split(",")]
    out = Path(os.environ.get("INFERSWEEP_GPU_TIER_OUT") or tmp_path)
    overrides: dict = {"workload.concurrency": conc}
    # Rounds of the closed loop per point (the recipe's requests_per_concurrency, 6): the H200 session of
    # 2026-12-04 ran 10 at c64, so that the loop's start burst weighs 1/10 of its mean TTFT, not 1/6.
    if os.environ.get("INFERSWEEP_GPU_TIER_ROUNDS"):
        overrides["workload.requests_per_concurrency"] = int(os.environ["INFERSWEEP_GPU_TIER_ROUNDS"])
    # The warm-up's users started one after another over this many seconds (workload.warmup_ramp_s): the loop
    # then opens spread out, not in lockstep (benchmarks/loop_clustering.py reads which state it kept)
    ramp = (
        float(os.environ["INFERSWEEP_GPU_TIER_WARMUP_RAMP_S"])
        if os.environ.get("INFERSWEEP_GPU_TIER_WARMUP_RAMP_S")
        else None
    )
    if ramp is not None:
        overrides["workload.warmup_ramp_s"] = ramp
    res = run_local(
        recipe,
        out_root=out,
        workers="gpu",
        gpu_python=GPU_PYTHON,
        engine_cache=Path(os.environ["INFERSWEEP_GPU_TIER_ENGINE_CACHE"])
        if os.environ.get("INFERSWEEP_GPU_TIER_ENGINE_CACHE")
        else None,
        recipe_overrides=overrides,
    )
    assert res.phase == "Succeeded", why_failed(res)
    prometheus = Path(os.environ.get("INFERSWEEP_PROMETHEUS", "/usr/bin/prometheus")).exists()
    check_tier_run(res, conc, engine, ramp, real=True, server_figures=prometheus)


def test_an_experiment_on_real_engines_resets_the_caches_and_judges_its_claim_on_abba_blocks(tmp_path):
    """`experiment run` with real engine workers: $INFERSWEEP_GPU_TIER_EXPERIMENT (default gpu-kv-vs-rr, two vLLM
    workers sharing the GPU, round-robin against KV-aware routing, 3 ABBA blocks of reset runs; 22 minutes on the
    H200 with its cold start at today's 384 requests per run, so a session runs it on its own, `-k experiment`, and
    one that cannot finish it goes on with `experiment run --local --resume`), kept in
    $INFERSWEEP_GPU_TIER_OUT when set. Whatever the verdict, it must come from the blocks: every run on emptied
    caches, warmed over every shared prefix, one paired difference per block."""
    import re

    import pandas as pd
    import yaml

    from infersweep.local.experiment_run import run_experiment_local
    from infersweep.paths import params_dir

    name = os.environ.get("INFERSWEEP_GPU_TIER_EXPERIMENT", "gpu-kv-vs-rr")
    spec = yaml.safe_load((params_dir() / "experiments" / f"{name}.yaml").read_text())
    res = run_experiment_local(
        name,
        out_root=Path(os.environ.get("INFERSWEEP_GPU_TIER_OUT") or tmp_path),
        workers="gpu",
        gpu_python=GPU_PYTHON,
        engine_cache=Path(os.environ["INFERSWEEP_GPU_TIER_ENGINE_CACHE"])
        if os.environ.get("INFERSWEEP_GPU_TIER_ENGINE_CACHE")
        else None,
    )
    assert res.phase == "Succeeded", why_failed(res)
    runs = [s.treatment.name for s in res.plan.steps]
    assert len(runs) == 4 * spec["blocks"]
    logs = "".join(p.read_text() for p in res.run_dir.glob("nodes/*-deploy_*/main.log"))
    if spec.get("kv_cache", "reset") == "reset":  # every run after the first on emptied caches, in place
        resets = re.findall(r"kv reset: (\d+) of (\d+) workers emptied their KV cache", logs)
        assert len(resets) == len(runs) - 1 and all(a == b for a, b in resets), resets
        assert "restarting the deployment instead" not in logs
    treatments = res.run_dir / "volumes" / "workdir" / "treatments"
    for step in res.plan.steps:
        t, w = step.treatment.name, step.treatment.recipe.recipe.workload
        df = pd.read_parquet(treatments / t / "summary" / "results.parquet")
        assert (df["status"] == "ok").all() and str(df["source"].iloc[0]).startswith("measured (local GPU:"), t
        # the window is after the warm-up: the cache reads are the workload's prefixes, never a warm-up replay
        # (the recipe's isl includes the prefix, infersweep/recipe/models.py Workload.isl: 6,144 of 6,400 tokens are
        # shareable, 96 %; 380c22e's prefix/(prefix + isl), 49 %, failed the H200's rr at 57.9 % on 2026-12-04)
        shared_pct = 100 * w.prefix.tokens / w.isl if w.prefix else 0
        assert (df["prompt_cache_read_pct"] <= shared_pct + 1).all(), (t, df["prompt_cache_read_pct"])
        for f in (treatments / t).rglob("result.json"):
            point = json.loads(f.read_text())
            argv = point.get("argv") or []
            warmup = int(argv[argv.index("--warmup-request-count") + 1])
            assert warmup >= (w.prefix.count if w.prefix else 0), (t, argv)  # every prefix touched
            assert point["warmup_mode"] == "seamless", (t, f)  # the window opens on a running loop, not a burst
    paired = res.report["paired"]
    assert paired["n_blocks"] + len(paired["dropped"]) == spec["blocks"]
    assert res.report["claim"]["verdict"] == paired["verdict"] in ("supported", "refuted", "inconclusive")
    assert "paired over ABBA blocks" in res.report["claim"]["line"]
