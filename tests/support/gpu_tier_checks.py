"""What the GPU tier checks on a finished run (tests/local/test_gpu_tier.py), shared with the fake-GPU e2e test
(tests/local/test_fake_gpu_e2e.py) so that the checks themselves run in CI. The H200 session of 2026-12-05 found
why: a check that read each point's result.json from `run_dir/points` (they live under `results_dir/points`)
had never run anywhere, and failed the GPU tier at its end after every point had been measured."""

from __future__ import annotations

import json

import pandas as pd
import yaml


def check_tier_run(
    res, conc: list[int], engine: str, ramp: float | None, *, real: bool, server_figures: bool = False
) -> pd.DataFrame:
    """The run's table has three repetitions of each load, clean caches, windows that followed their warm-up,
    and provenance that names what ran. `real`: a real engine on a real GPU (numbers, power, the engine's own
    first-token figure); a fake GPU's mocker run checks the same layout and provenance, not the numbers.
    `server_figures`: the run scraped the engine's own histograms (a Prometheus beside it)."""
    df = pd.read_parquet(res.results_dir / "summary" / "results.parquet")
    assert sorted(set(df["concurrency"])) == sorted(conc) and len(df) == 3 * len(conc)  # three repetitions of each
    if real:
        # warm-up prompts never come back as measured ones: no prompt-cache reads on fresh random prompts (the
        # local profile's mocker reads every prompt from its cache: params/validity.yaml profiles.local)
        assert (df["prompt_cache_read_pct"] < 3).all(), df[["concurrency", "repetition", "prompt_cache_read_pct"]]
    lightest = df[df["concurrency"] == min(conc)]  # the list may run heaviest first
    if real and server_figures:
        # TTFT is the first token: the client's agrees with the engine's own histogram (issue 32's 15 %)
        ratio = lightest["ttft_avg_ms"] / lightest["server_ttft_avg_ms"]
        assert ((ratio - 1).abs() < 0.15).all(), lightest[
            ["ttft_avg_ms", "server_ttft_avg_ms", "server_figures_source"]
        ]
    # every window followed its warm-up without a drain, after 4 rounds (infersweep/aiperf/flags.py seamless_warmup)
    points = [json.loads(f.read_text()) for f in (res.results_dir / "points").glob("*/result.json")]
    mode = "seamless-ramped" if ramp is not None else "seamless"
    assert len(points) == len(df) and all(p["warmup_mode"] == mode for p in points), [p["warmup_mode"] for p in points]
    assert all(p["warmup"] >= 4 * p["concurrency"] for p in points)
    row = lightest.iloc[0]
    source = "measured (local GPU:" if real else "simulated (fake GPU:"
    assert row["status"] == "ok" and str(row["source"]).startswith(source), row["source"]
    if real:
        assert 250 <= row["osl_delivered"] <= 256 and 5 < row["itl_avg_ms"] < 100
        assert row["gpu_power_total_w"] > 50 and row["energy_j_per_output_token"] > 0
    # provenance names what ran (the GPU python's ai-dynamo and engine), not the rendered image (issue 32 item 7)
    stack = json.loads((res.run_dir / "telemetry" / "stack.json").read_text())["versions"]
    record = json.loads((res.results_dir / "summary" / "run.json").read_text())
    assert f"ai-dynamo {stack['ai-dynamo']}" in record["context"]["engine_image"]
    assert "did not run" in record["context"]["engine_image"]
    ran = record["engine_ran"]
    assert ran["engine_release"] == f"dynamo {stack['ai-dynamo']}"
    assert ran["engine_wheels"].get(engine) == stack.get(engine), (ran, stack)
    dgd = yaml.safe_load((res.run_dir / "rendered" / "dgd.yaml").read_text())
    assert (
        json.loads(dgd["metadata"]["annotations"]["infersweep.io/engine-ran"])["engine_wheels"] == ran["engine_wheels"]
    )
    return df
