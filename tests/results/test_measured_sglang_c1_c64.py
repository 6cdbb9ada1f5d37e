"""The committed SGLang run of 2026-12-04 (benchmarks/measured/h200-2026-12-04/sglang-qwen3-32b-bf16-c1-c64/: the
GPU tier with INFERSWEEP_GPU_TIER_RECIPE=qwen3-32b-bf16-sglang-h200-tp1, loads 64,1, 10 rounds, 3 repetitions each)
recomputes from the raw snapshot beside it, so the figures docs/measured-h200.md and the README quote cannot drift
from the data.

Recomputed with plain arithmetic from AIPerf's profile_export.jsonl (profiling records; the warm-up's for the tails),
the Dynamo frontend's histograms as Prometheus scraped them (metrics/server_metrics.parquet) and as AIPerf scraped
them (server_metrics_export.json), not with the summarize code. `summary/` is today's summarize step over the
snapshot (benchmarks/summarize_snapshots.py); `summary-as-run/` is what the run's own step wrote."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd
import pytest

from tests.support.measured_snapshot import read_snapshot

FOLDER = (
    Path(__file__).resolve().parents[2] / "benchmarks" / "measured" / "h200-2026-12-04" / "sglang-qwen3-32b-bf16-c1-c64"
)
SNAPSHOT = FOLDER / "qwen3-32b-bf16-sglang-c1-c64-snapshot.tar.xz"
SUMMARY = FOLDER / "summary" / "qwen3-32b-bf16-sglang-c1-c64"
T975_2 = 4.303  # two-sided 95 % Student-t critical value, 2 degrees of freedom


@pytest.fixture(scope="module")
def snapshot() -> tuple[dict[tuple[int, int], dict], pd.DataFrame]:
    return read_snapshot(SNAPSHOT)


def _table(folder: Path = SUMMARY) -> pd.DataFrame:
    return pd.read_parquet(folder / "results.parquet").set_index(["concurrency", "repetition"])


def _ttfts(records: list[dict]) -> list[float]:
    return [float(r["metrics"]["time_to_first_token"]["value"]) for r in records]


def _frontend_window(metrics: pd.DataFrame, name: str, start_s: float, end_s: float) -> float | None:
    """A frontend counter's growth over the window: last sample at or before the start to the last within 5 s
    after the end (None when the series has no sample after the end)."""
    s = metrics[metrics["metric"] == name].groupby("ts")["value"].sum().sort_index()
    after = s[(s.index >= end_s - 1e-3) & (s.index <= end_s + 5 + 1e-3)]
    if after.empty:
        return None
    return float(after.iloc[-1] - s[s.index <= start_s + 1e-3].iloc[-1])


def test_every_repetition_recomputes_from_its_records_and_all_six_are_valid(snapshot):
    points, _ = snapshot
    table = _table()
    assert sorted(points) == [(1, 0), (1, 1), (1, 2), (64, 0), (64, 1), (64, 2)]
    for (conc, rep), row in table.iterrows():
        recs = points[(conc, rep)]["records"]
        assert len(recs) == row["requests_ok"] == {1: 32, 64: 640}[conc]
        assert not any(r.get("error") for r in recs)
        assert statistics.fmean(_ttfts(recs)) == pytest.approx(row["ttft_avg_ms"], rel=1e-9)
        assert row["valid"], (conc, rep, row["validity_reasons"])


def test_the_intervals_the_docs_quote(snapshot):
    points, _ = snapshot
    by_load = pd.read_csv(SUMMARY / "results_by_load.csv").set_index("concurrency")
    for conc, text in ((1, "135.4 ± 5.6 (n=3)"), (64, "3704.6 ± 48.4 (n=3)")):
        means = [statistics.fmean(_ttfts(points[(conc, r)]["records"])) for r in range(3)]
        half = T975_2 * statistics.stdev(means) / math.sqrt(3)
        assert by_load.loc[conc, "ttft_avg_ms_text"] == f"{statistics.fmean(means):.1f} ± {half:.1f} (n=3)" == text


def test_the_client_ttft_is_the_frontends_first_token_on_every_repetition(snapshot):
    """Issue 32's "done when": the client's c1 TTFT agrees with the server's own within 15 %. SGLang's worker
    exports no first-token histogram to this Prometheus, so the server's figure is the Dynamo frontend's. The run's
    last point (c1 r2) has no Prometheus sample after its window (the exit handler stopped the frontend beside the
    scrape): its figure is the frontend's as AIPerf scraped it over the profiling phase."""
    points, metrics = snapshot
    table = _table()
    for (conc, rep), p in points.items():
        start, end = p["result"]["profiling_start_ns"] / 1e9, p["result"]["profiling_end_ns"] / 1e9
        count = _frontend_window(metrics, "frontend_ttft_count", start, end)
        if count is None:
            assert (conc, rep) == (1, 2)  # the last point of the run, alone
            hist = p["export"]["metrics"]["dynamo_frontend_time_to_first_token_seconds"]["series"]
            count = sum(s["stats"]["count"] for s in hist)
            server_ms = 1000 * sum(s["stats"]["sum"] for s in hist) / count
            assert table.loc[(conc, rep), "server_figures_source"].startswith("frontend via AIPerf's export (33 ")
        else:
            server_ms = 1000 * _frontend_window(metrics, "frontend_ttft_sum_s", start, end) / count
            assert table.loc[(conc, rep), "server_figures_source"].startswith("frontend (")
        assert server_ms == pytest.approx(table.loc[(conc, rep), "server_ttft_avg_ms"], rel=1e-6)
        client = statistics.fmean(_ttfts(p["records"]))
        # c1: the client reads 1.1-3.1 % above the frontend; c64: 0.1-0.2 %
        assert 0 < client / server_ms - 1 < {1: 0.035, 64: 0.005}[conc], (conc, rep, client, server_ms)


def _tokens_after(rec: dict, start_ns: int) -> float:
    """One warm-up request's output tokens whose chunks reached the client after start_ns (chunk times: start +
    TTFT, then the inter-chunk gaps; tokens shared evenly over the chunks)."""
    m = rec["metrics"]
    t = rec["metadata"]["request_start_ns"] + m["time_to_first_token"]["value"] * 1e6
    arrivals = [t]
    for gap in m.get("inter_chunk_latency", {}).get("value", []):
        t += gap * 1e6
        arrivals.append(t)
    return m["output_sequence_length"]["value"] * sum(a > start_ns for a in arrivals) / len(arrivals)


def test_the_warmups_tails_explain_the_frontends_extra_tokens_at_c64(snapshot):
    """r0 and r1 opened with 63 warm-up requests in flight (SGLang's loop was not in lockstep at the boundary); the
    frontend counted their tokens after the start too. The run's own step compared the measured requests' tokens
    alone and refused both at -7 %; with the tails on the client's side they agree within 0.7 % (r0 -0.1 %, r1
    -0.3 %, r2 -0.6 %). r2 opened at a cycle's end (52 in flight, 20 tokens after the start)."""
    points, metrics = snapshot
    table, as_run = _table(), _table(FOLDER / "summary-as-run")
    seen = {}
    for rep in range(3):
        p = points[(64, rep)]
        start_ns = p["result"]["profiling_start_ns"]
        start, end = start_ns / 1e9, p["result"]["profiling_end_ns"] / 1e9
        server = _frontend_window(metrics, "frontend_output_tokens", start, end)
        measured = sum(r["metrics"]["output_sequence_length"]["value"] for r in p["records"])
        in_flight = [r for r in p["warmup"] if r["metadata"]["request_end_ns"] > start_ns]
        tails = sum(_tokens_after(r, start_ns) for r in in_flight)
        assert server == table.loc[(64, rep), "server_output_tokens"]
        assert abs((measured + tails) / server - 1) < 0.01, (rep, measured, tails, server)
        seen[rep] = (len(in_flight), round(tails), round(100 * (measured / server - 1), 1))
        refused = "output tokens" in str(as_run.loc[(64, rep), "validity_reasons"])
        assert refused == (rep < 2) and bool(as_run.loc[(64, rep), "valid"]) == (rep == 2)
    assert seen == {0: (63, 12350, -7.1), 1: (63, 11468, -6.8), 2: (52, 20, -0.7)}


def _uncached(record: dict) -> int:
    m = record["metrics"]
    return int(m["usage_prompt_tokens"]["value"] - m["usage_prompt_cache_read_tokens"]["value"])


def test_the_two_c1_ttft_modes_are_the_prefill_graph_a_request_fits(snapshot):
    """docs/measured-h200.md "Why two modes": at c1 each prefill runs alone, through SGLang 0.5.14's piecewise CUDA
    graph padded to 1,024 or, a token over, to 1,280 (sglang/srt/server_args.py
    _generate_prefill_cuda_graph_batch_sizes). The uncached count (the prompt less its radix-cache hit) decides the
    mode for every request of every repetition, with no overlap; the group means are the docs' figures."""
    points, _ = snapshot
    fits, over = [], []
    for rep in range(3):
        recs = points[(1, rep)]["records"]
        assert {int(r["metrics"]["usage_prompt_tokens"]["value"]) for r in recs} == {1028}  # ISL 1024 + template
        small = [t for r, t in zip(recs, _ttfts(recs), strict=True) if _uncached(r) <= 1024]
        large = [t for r, t in zip(recs, _ttfts(recs), strict=True) if _uncached(r) > 1024]
        assert small and large and max(small) + 20 < min(large), (rep, max(small), min(large))
        fits.append(statistics.fmean(small))
        over.append(statistics.fmean(large))
    for means, text in ((fits, "116.8 ± 0.7 (n=3)"), (over, "147.5 ± 1.7 (n=3)")):
        half = T975_2 * statistics.stdev(means) / math.sqrt(3)
        assert f"{statistics.fmean(means):.1f} ± {half:.1f} (n=3)" == text


def test_the_committed_prefill_split_is_what_the_script_prints(capsys):
    """FOLDER/ttft-by-prefill-size.txt holds each command (`$ ...`) and its output: rerun, it prints the same."""
    from benchmarks.ttft_by_prefill_size import main

    blocks = (FOLDER / "ttft-by-prefill-size.txt").read_text().strip().split("\n\n")
    assert len(blocks) == 2
    repo = FOLDER.parents[3]
    for block in blocks:
        command, _, expected = block.partition("\n")
        argv = command.split("benchmarks/ttft_by_prefill_size.py ", 1)[1].split()
        main([str(repo / argv[0]), *argv[1:]])
        assert capsys.readouterr().out.strip() == expected.strip()
