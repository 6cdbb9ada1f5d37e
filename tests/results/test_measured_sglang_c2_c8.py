"""The committed SGLang c2-c8 run of 2026-12-05 (benchmarks/measured/h200-2026-12-05/sglang-qwen3-32b-bf16-c2-c8/: the
GPU tier with INFERSWEEP_GPU_TIER_RECIPE=qwen3-32b-bf16-sglang-h200-tp1, loads 8,4,2, 3 repetitions each) recomputes
from the raw snapshot beside it with plain arithmetic, so the figures the README and docs/measured-h200.md quote
cannot drift from the data; and it keeps the evidence for how SGLang's own output-token counter counts."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd
import pytest

from tests.support.measured_snapshot import read_snapshot

FOLDER = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "measured" / "h200-2026-12-05" / "sglang-qwen3-32b-bf16-c2-c8"
)
SNAPSHOT = FOLDER / "qwen3-32b-bf16-sglang-c2-c8-snapshot.tar.xz"
SUMMARY = FOLDER / "summary" / "qwen3-32b-bf16-sglang-c2-c8"
T975 = {1: 12.706, 2: 4.303}  # two-sided 95 % Student-t critical values by degrees of freedom


@pytest.fixture(scope="module")
def snapshot() -> tuple[dict[tuple[int, int], dict], pd.DataFrame]:
    return read_snapshot(SNAPSHOT)


def _ttft_mean(records: list[dict]) -> float:
    return statistics.fmean(float(r["metrics"]["time_to_first_token"]["value"]) for r in records)


def _delta(metrics: pd.DataFrame, name: str, start_s: float, end_s: float) -> float | None:
    """A counter's growth: last sample at or before the start to the last within 5 s after the end."""
    s = metrics[metrics["metric"] == name].groupby("ts")["value"].sum().sort_index()
    after = s[(s.index >= end_s - 1e-3) & (s.index <= end_s + 5 + 1e-3)]
    return None if after.empty else float(after.iloc[-1] - s[s.index <= start_s + 1e-3].iloc[-1])


def test_eight_of_nine_points_are_valid_and_the_docs_intervals_recompute(snapshot):
    points, _ = snapshot
    table = pd.read_parquet(SUMMARY / "results.parquet").set_index(["concurrency", "repetition"])
    assert sorted(points) == [(c, r) for c in (2, 4, 8) for r in range(3)]
    invalid = {k for k, row in table.iterrows() if not row["valid"]}
    assert invalid == {(4, 1)} and "prefix cache served 3.4%" in table.loc[(4, 1), "validity_reasons"]
    for conc, text in ((2, "234.0 ± 13.2 (n=3)"), (4, "468.8 ± 69.8 (n=2)"), (8, "816.7 ± 64.4 (n=3)")):
        means = [_ttft_mean(points[(conc, r)]["records"]) for r in range(3) if (conc, r) not in invalid]
        n = len(means)
        half = T975[n - 1] * statistics.stdev(means) / math.sqrt(n)
        assert f"{statistics.fmean(means):.1f} ± {half:.1f} (n={n})" == text


def test_sglangs_own_token_counter_counts_at_finish_and_the_frontends_as_streamed(snapshot):
    """SGLang's sglang:generation_tokens_total grew by exactly concurrency x 256 tokens more than the measured
    requests' output in every window with a sample after it (the last warm-up round, finished between the
    counter's last sample and the window, counted whole); the frontend's counter read the client's count within
    2.5 %, and it is what the table judges (server_output_tokens)."""
    points, metrics = snapshot
    table = pd.read_parquet(SUMMARY / "results.parquet").set_index(["concurrency", "repetition"])
    for (conc, rep), p in points.items():
        start, end = p["result"]["profiling_start_ns"] / 1e9, p["result"]["profiling_end_ns"] / 1e9
        client = sum(float(r["metrics"]["output_sequence_length"]["value"]) for r in p["records"])
        engine = _delta(metrics, "engine_output_tokens", start, end)
        assert engine is not None and abs(engine - (client + conc * 256)) <= 4, (conc, rep, engine, client)
        frontend = _delta(metrics, "frontend_output_tokens", start, end)
        if frontend is None:
            assert (conc, rep) == (2, 2) and pd.isna(table.loc[(conc, rep), "server_output_tokens"])  # the last
            continue
        assert 0 <= frontend / client - 1 < 0.025 and table.loc[(conc, rep), "server_output_tokens"] == frontend


def test_the_client_ttft_is_sglangs_own_first_token_within_issue_32s_15_percent():
    table = pd.read_parquet(SUMMARY / "results.parquet")
    assert table["server_figures_source"].str.startswith("engine (").all()  # SGLang's histograms, --enable-metrics
    ratio = table["ttft_avg_ms"] / table["server_ttft_avg_ms"] - 1
    assert ((ratio > 0.01) & (ratio < 0.065)).all(), ratio.tolist()


def test_c4_r1s_cache_read_is_a_prompt_c8_had_sent_regenerated_by_aiperf_itself(tmp_path):
    """c4 r1 read 3.4 % of its prompt tokens from SGLang's radix cache: one measured request, 1,027 of 1,028. AIPerf
    regenerates both points' prompts here from their own commands (the same md5 as on the H200), and that
    request's prompt is one c8 r0 had measured five minutes before: two seeds drew the same corpus offset
    (benchmarks/prompt_collisions.py; about 1 in 963,106 per pair). Not a warm-up replay."""
    from benchmarks.prompt_collisions import AIPERF, collisions

    if not AIPERF.exists():
        pytest.skip("needs .venv-aiperf (scripts/setup.sh)")
    r = collisions(SNAPSHOT, ["c8", "c4-r1"], tmp_path)
    assert r["corpus_tokens"] == 963_106 and r["prompts"] == 80 + 48 and r["distinct"] == r["prompts"] - 1
    assert r["shared"] == [[("c4-r1", "session_000025"), ("c8", "session_000034")]]
    hits = [(p, ph, s, hit, other) for p, ph, s, _, hit, other in r["cached"]]
    assert hits == [("c4-r1", "profiling", "session_000025", 1027, [("c8", "session_000034")])]
    # the committed table, made over all nine points, says the same
    text = (FOLDER / "prompt-collisions.txt").read_text()
    assert "504 prompts regenerated (every inputs.json matches the run's md5), 503 distinct" in text
    assert "c4-r1  profiling  session_000025  1028           1027             c8 session_000034" in text


def test_the_summarize_step_names_c4_r1s_cached_prompt_as_a_chance_repeat_of_c8s(tmp_path):
    """The run's own summarize step over the snapshot, with the two points' inputs.json that AIPerf regenerates
    (the snapshot drops them): c4 r1 stays invalid for its cache reads, and the reason now says the cached prompt
    was c8's session 34, a chance repeat rather than a warm-up replay (infersweep.results.prompt_repeats)."""
    import os
    import shutil
    import subprocess

    from benchmarks.prompt_collisions import AIPERF, regenerate
    from benchmarks.summarize_snapshots import REPO, RUN_DIR, step_command, unpack
    from infersweep.aiperf.flags import tokenizer_as_cached_hub_id
    from infersweep.local.dynamo.toy_model import config_only_model

    if not AIPERF.exists():
        pytest.skip("needs .venv-aiperf (scripts/setup.sh)")
    run = unpack(SNAPSHOT, tmp_path / "snapshot")
    repo, env = tokenizer_as_cached_hub_id(config_only_model("Qwen/Qwen3-32B", tmp_path / "cache"), tmp_path / "hub")
    for name in ("c8", "c4-r1"):
        point = run / RUN_DIR / "points" / name
        shutil.copy2(regenerate(point, repo, env), point / "aiperf" / "inputs.json")
    argv, step_env = step_command(run)
    subprocess.run(
        argv, cwd=REPO, env=os.environ | step_env | {"PYTHONPATH": str(REPO)}, check=True, capture_output=True
    )
    table = pd.read_parquet(run / RUN_DIR / "summary" / "results.parquet").set_index(["concurrency", "repetition"])
    assert [k for k, row in table.iterrows() if not row["valid"]] == [(4, 1)]
    assert table.loc[(4, 1), "validity_reasons"].endswith(
        "1 measured prompt(s) had been sent before in this run (session_000025 as c8 session_000034); AIPerf's "
        "synthetic prompts are windows at random offsets of its corpus and can coincide: not a warm-up replay"
    )
