"""The committed SGLang c128 run of 2026-12-05 (benchmarks/measured/h200-2026-12-05/sglang-qwen3-32b-bf16-c128/:
the GPU tier with INFERSWEEP_GPU_TIER_RECIPE=qwen3-32b-bf16-sglang-h200-tp1, c128, 10 rounds, 3 repetitions)
recomputes from the raw snapshot beside it with plain arithmetic, so that the figures the README and
docs/measured-h200.md quote cannot drift from the data. It also keeps the evidence for the client-bound rule's
share of the cycle (params/validity.yaml client), and runs the GPU tier's own end-of-run checks on the real run
folder (tests/support/gpu_tier_checks.py), the ones that failed that run at its end."""

from __future__ import annotations

import itertools
import math
import statistics
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from tests.support.gpu_tier_checks import check_tier_run
from tests.support.measured_snapshot import read_snapshot

FOLDER = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "measured" / "h200-2026-12-05" / "sglang-qwen3-32b-bf16-c128"
)
SNAPSHOT = FOLDER / "qwen3-32b-bf16-sglang-c128-snapshot.tar.xz"
SUMMARY = FOLDER / "summary" / "qwen3-32b-bf16-sglang-c128"
T975_DF2 = 4.303  # two-sided 95 % Student-t critical value, 2 degrees of freedom


@pytest.fixture(scope="module")
def snapshot() -> tuple[dict[tuple[int, int], dict], pd.DataFrame]:
    return read_snapshot(SNAPSHOT)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """The run folder as the GPU tier left it (tier/<run-id>/, its results/ link to volumes/workdir/run)."""
    root = tmp_path_factory.mktemp("c128")
    with tarfile.open(SNAPSHOT) as tf:
        tf.extractall(root, filter="data")
    (found,) = [d for d in (root / "tier").iterdir() if d.name.startswith("qwen3-32b-bf16-sglang")]
    return found


def _interval(values: list[float]) -> tuple[float, float]:
    return statistics.fmean(values), T975_DF2 * statistics.stdev(values) / math.sqrt(len(values))


def _send_delays_ms(records: list[dict]) -> list[float]:
    return sorted((r["metadata"]["request_start_ns"] - r["metadata"]["credit_issued_ns"]) / 1e6 for r in records)


def test_three_valid_repetitions_and_the_docs_intervals_recompute(snapshot):
    points, _ = snapshot
    assert sorted(points) == [(128, r) for r in range(3)]
    table = pd.read_parquet(SUMMARY / "results.parquet")
    assert table["valid"].all() and (table["validity_reasons"] == "").all(), table["validity_reasons"].tolist()
    ttft = [
        statistics.fmean(r["metrics"]["time_to_first_token"]["value"] for r in points[(128, k)]["records"])
        for k in range(3)
    ]
    itl = [
        statistics.fmean(r["metrics"]["inter_token_latency"]["value"] for r in points[(128, k)]["records"])
        for k in range(3)
    ]
    assert all(len(points[(128, k)]["records"]) == 1280 for k in range(3))
    assert "{:.0f} ± {:.0f}".format(*_interval(ttft)) == "6738 ± 359"
    assert "{:.2f} ± {:.2f}".format(*_interval(itl)) == "56.43 ± 1.75"


def test_a_lockstep_burst_is_sent_within_a_tenth_of_a_second_of_a_21_s_cycle(snapshot, run_dir):
    """Why the client-bound rule weighs the send delay against the cycle: each round's 128 credits come back
    together and AIPerf sends them one after another, p99 55-63 ms, under 1 % of the mean request latency.
    The same delays on a 1 s cycle would be 6 %: client-bound."""
    from infersweep.results.table import SUMMARY_FILE, aiperf_statistics, read_result
    from infersweep.results.validity import judge_point, load_thresholds, point_measures

    points, _ = snapshot
    t = load_thresholds(profile="local-gpu")
    limit_ms, share = t["client"]["max_send_delay_ms_p99"], t["client"]["max_send_delay_share_p99"]
    for k, name in enumerate(("c128", "c128-r1", "c128-r2")):
        recs = points[(128, k)]["records"]
        delays = _send_delays_ms(recs)
        p99 = delays[math.ceil(0.99 * len(delays)) - 1]
        cycle = statistics.fmean(
            (r["metadata"]["request_end_ns"] - r["metadata"]["request_start_ns"]) / 1e6 for r in recs
        )
        assert limit_ms < p99 < 65 and 20_000 < cycle < 22_000 and p99 / cycle < share / 2, (k, p99, cycle)
        d = run_dir / "results" / "points" / name
        m = point_measures(d, {**read_result(d), "concurrency": 128}, aiperf_statistics(d / "aiperf" / SUMMARY_FILE))
        assert m["send_delay_p99_ms"] == pytest.approx(p99) and m["request_latency_mean_ms"] == pytest.approx(cycle)
        assert judge_point(m, t) == (True, [])
        ok, reasons = judge_point(m | {"request_latency_mean_ms": 1000.0}, t)
        assert not ok and any(r.startswith("client-bound") and "mean latency 1000 ms" in r for r in reasons)


def test_the_client_ttft_is_sglangs_own_first_token_within_one_percent():
    table = pd.read_parquet(SUMMARY / "results.parquet")
    assert table["server_figures_source"].str.startswith("engine (1280 first tokens").all()
    ratio = table["ttft_avg_ms"] / table["server_ttft_avg_ms"] - 1
    assert ((ratio > 0) & (ratio < 0.01)).all(), ratio.tolist()


def test_the_gpu_tiers_end_of_run_checks_pass_on_the_real_run_folder(run_dir):
    """The checks tests/local/test_gpu_tier.py runs after a GPU run, on this run's own folder: on the H200 one
    read result.json files from the wrong folder and failed the test after every point had run."""
    res = SimpleNamespace(run_dir=run_dir, results_dir=run_dir / "results")
    df = check_tier_run(res, [128], "sglang", None, real=True, server_figures=True)
    assert len(df) == 3


def test_sglangs_own_log_puts_the_mean_ttft_at_8_5_prefill_batches(run_dir):
    """The README's model of the c128 TTFT, from SGLang's own log: a round's prompts go through as 16 full
    prefill batches of 8,192 tokens, 0.811 s apart (the median of 620 gaps), so the mean first token comes after
    8.5 batches, 6.89 s, within 3 % of the 6,738 ms measured; a decode step of all 128 takes ~31.7 ms."""
    import re
    from datetime import datetime

    (log,) = run_dir.glob("state/dgd/*/logs/SglangWorker-0.log")
    prefill, decode = [], []
    for line in log.read_text().splitlines():
        if "Prefill batch" in line:
            t = datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp()
            prefill.append((t, int(re.search(r"#new-token: (\d+)", line).group(1))))
        elif "Decode batch, #running-req: 128," in line:
            decode.append(float(re.search(r"gen throughput \(token/s\): ([\d.]+)", line).group(1)))
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(prefill) if b[1] == 8192 and b[0] - a[0] < 2]
    batch_s = statistics.median(gaps)
    assert len(gaps) == 620 and round(batch_s, 3) == 0.811
    assert math.ceil(128 * 1028 / 8192) == 17  # 16 full batches and a 17th of 512 tokens
    predicted_ms = 8.5 * batch_s * 1000
    assert f"{predicted_ms / 1000:.2f}" == "6.89" and abs(6738 / predicted_ms - 1) < 0.03
    # SGLang logs its decode rate over an interval; the few intervals a round's prefills stalled read low
    step_ms = 128 / statistics.median(decode) * 1000
    assert len(decode) > 200 and f"{step_ms:.1f}" == "31.7", step_ms
