"""The server's own first-token figures per point (issue 32, item 1): window means from cumulative histograms
(infersweep.results.server_figures), the engine's preferred over the Dynamo frontend's."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from infersweep.results.server_figures import COLUMNS, figures, point_figures, window_delta

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "server_figures"


def series(metric: str, points: list[tuple[float, float]], labels: str = "{}") -> list[dict]:
    return [{"concurrency": 1, "metric": metric, "labels": labels, "ts": t, "value": v} for t, v in points]


def samples(*rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([r for rs in rows for r in rs])


# a window from t=100 s to t=160 s, sampled every 5 s with one step of padding (as the scrape step does)
GRID = [95.0 + 5 * k for k in range(15)]  # 95 .. 165


def cumulative(before: float, during: float, start: float = 100.0, end: float = 160.0) -> list[tuple[float, float]]:
    """A counter at `before` until the window opens, growing linearly by `during` to its end, then flat."""
    return [(t, before + during * min(max((t - start) / (end - start), 0.0), 1.0)) for t in GRID]


def test_the_window_mean_is_the_difference_of_sum_and_count_between_start_and_end():
    # 4 warm-up requests (sum 0.8 s) before the window; 32 measured requests with a mean TTFT of 120 ms in it
    df = samples(
        series("frontend_ttft_sum_s", cumulative(0.8, 32 * 0.120)),
        series("frontend_ttft_count", cumulative(4, 32)),
        series("frontend_itl_sum_s", cumulative(2.0, 32 * 255 * 0.018)),
        series("frontend_itl_count", cumulative(1020, 32 * 255)),
        series("frontend_output_tokens", cumulative(1024, 32 * 256)),
    )
    got = figures(df, 100.0, 160.0)
    assert got["server_ttft_avg_ms"] == pytest.approx(120.0)
    assert got["server_itl_avg_ms"] == pytest.approx(18.0)
    assert got["server_output_tokens"] == 32 * 256
    assert got["server_figures_source"] == "frontend (32 first tokens in the window)"


def test_the_engines_histograms_win_over_the_frontends_and_label_sets_add_up():
    df = samples(
        series("frontend_ttft_sum_s", cumulative(0, 10 * 0.2)),
        series("frontend_ttft_count", cumulative(0, 10)),
        # two workers, one series each
        series("engine_ttft_sum_s", cumulative(0, 6 * 0.1), '{"pod":"a"}'),
        series("engine_ttft_sum_s", cumulative(0, 4 * 0.1), '{"pod":"b"}'),
        series("engine_ttft_count", cumulative(0, 6), '{"pod":"a"}'),
        series("engine_ttft_count", cumulative(0, 4), '{"pod":"b"}'),
    )
    got = figures(df, 100.0, 160.0)
    assert got["server_ttft_avg_ms"] == pytest.approx(100.0)
    assert got["server_figures_source"].startswith("engine (10 first tokens")
    assert got["server_itl_avg_ms"] is None and got["server_output_tokens"] is None  # not scraped: not invented


def test_a_counter_reset_or_a_run_without_series_gives_no_figure():
    reset = [(t, v if t < 130 else 0.0) for t, v in cumulative(100, 50)]
    assert window_delta(samples(series("frontend_ttft_count", reset)), "frontend_ttft_count", 100.0, 160.0) is None
    assert figures(
        pd.DataFrame(columns=["concurrency", "metric", "labels", "ts", "value"]), 100.0, 160.0
    ) == dict.fromkeys(COLUMNS)


def test_a_point_reads_its_runs_scraped_series(tmp_path):
    run = tmp_path / "run"
    (run / "points" / "c1").mkdir(parents=True)
    (run / "metrics").mkdir()
    samples(
        series("frontend_ttft_sum_s", cumulative(0, 8 * 0.05)), series("frontend_ttft_count", cumulative(0, 8))
    ).to_parquet(run / "metrics" / "server_metrics.parquet")
    result = {"profiling_start_ns": int(100e9), "profiling_end_ns": int(160e9)}
    assert point_figures(run / "points" / "c1", result)["server_ttft_avg_ms"] == pytest.approx(50.0)
    assert point_figures(tmp_path / "other" / "points" / "c1", result) == dict.fromkeys(COLUMNS)


def _export(aiperf_dir: Path, ttft_s: list[float], itl_s: list[float]) -> None:
    """An AIPerf 0.13 server_metrics_export.json with the frontend's two histograms over the profiling phase (the
    shape aiperf writes: per series `stats` with count and sum; a histogram with nothing observed has count 0)."""

    def hist(values: list[float]) -> dict:
        stats = {"count": len(values), "sum": sum(values)} if values else {"count": 0}
        return {"type": "histogram", "series": [{"labels": {"model": "m"}, "stats": stats}]}

    aiperf_dir.mkdir(parents=True)
    metrics = {
        "dynamo_frontend_time_to_first_token_seconds": hist(ttft_s),
        "dynamo_frontend_inter_token_latency_seconds": hist(itl_s),
    }
    (aiperf_dir / "server_metrics_export.json").write_text(
        json.dumps({"metrics_phase": "profiling", "metrics": metrics, "warmup_metrics": {}})
    )


def test_a_window_prometheus_lost_the_end_of_falls_back_to_aiperfs_own_scrape(tmp_path):
    """The run's last point: the exit handler stops the frontend beside the scrape, Prometheus marks the series
    stale, and no sample follows the window (H200 SGLang c1 r2). AIPerf scraped the frontend itself during the
    point: its profiling-phase histograms give the figures, and the source says whose they are; no token count
    (its phase is not the records' window)."""
    run = tmp_path / "run"
    point = run / "points" / "c1-r2"
    (run / "metrics").mkdir(parents=True)
    # the series stop at 158 s, before the window's end at 160 s
    cut = [(t, v) for t, v in cumulative(0, 8 * 0.05) if t < 158]
    cut_n = [(t, v) for t, v in cumulative(0, 8) if t < 158]
    samples(series("frontend_ttft_sum_s", cut), series("frontend_ttft_count", cut_n)).to_parquet(
        run / "metrics" / "server_metrics.parquet"
    )
    result = {"profiling_start_ns": int(100e9), "profiling_end_ns": int(160e9)}
    _export(point / "aiperf", [0.120] * 8 + [0.150], [0.018] * 100)
    got = point_figures(point, result)
    assert got["server_ttft_avg_ms"] == pytest.approx(1000 * (8 * 0.120 + 0.150) / 9)
    assert got["server_itl_avg_ms"] == pytest.approx(18.0)
    assert got["server_output_tokens"] is None
    assert got["server_figures_source"] == "frontend via AIPerf's export (9 first tokens in the profiling phase)"
    # Prometheus's figure wins wherever it has one
    samples(
        series("frontend_ttft_sum_s", cumulative(0, 8 * 0.05)), series("frontend_ttft_count", cumulative(0, 8))
    ).to_parquet(run / "metrics" / "server_metrics.parquet")
    assert point_figures(point, result)["server_figures_source"] == "frontend (8 first tokens in the window)"
    # an export whose frontend saw no first token gives nothing
    _export(tmp_path / "empty" / "aiperf", [], [])
    assert point_figures(tmp_path / "empty", result) == dict.fromkeys(COLUMNS)


@pytest.mark.skipif(not FIXTURE.is_dir(), reason="recorded mocker run not present")
def test_a_recorded_local_run_has_the_frontends_figures_beside_the_clients():
    """A real `run --local` (Dynamo 1.6.1 frontend + mocker, real Prometheus, real AIPerf): the frontend counted the
    point's measured requests and their tokens. At c4 the whole 4-request warm-up (under 1 s) fell into the last
    scrape interval before the window opened and counts in it too: the source column says how many first tokens
    were counted, so a reader (and a validity rule) sees it. The client's TTFT is higher than the frontend's by
    the client's own overhead (AIPerf on 2 busy cores: send delay p99 over 200 ms at the time)."""
    seen = {}
    for point in sorted((FIXTURE / "points").iterdir()):
        result = json.loads((point / "result.json").read_text())
        argv = result["argv"]
        warmup, osl = int(argv[argv.index("--warmup-request-count") + 1]), result["metrics"]["osl_avg_tok"]
        got = point_figures(point, result)
        assert got["server_figures_source"].startswith("frontend (")
        n = int(got["server_figures_source"].split("(")[1].split()[0])
        assert result["requests_ok"] <= n <= result["requests_ok"] + warmup, point.name
        assert got["server_output_tokens"] == pytest.approx(n * osl, abs=osl), point.name
        assert 0 < got["server_ttft_avg_ms"] < result["metrics"]["ttft_avg_ms"], point.name
        assert got["server_itl_avg_ms"] == pytest.approx(result["metrics"]["itl_avg_ms"], rel=0.15), point.name
        seen[point.name] = n
    assert seen == {"c1": 24, "c4": 36}


def _at_finish(per_request: float, finished_at: list[float], lag_s: float = 2.0) -> list[tuple[float, float]]:
    """A counter that grows by a request's whole output when it finishes (SGLang's sglang:generation_tokens_total),
    as a range query reads it: each step's value is the last scrape's, up to a scrape interval old (`lag_s`)."""
    return [(t, per_request * sum(1 for f in finished_at if f <= t - lag_s)) for t in GRID]


def test_output_tokens_are_the_frontends_streamed_count_not_an_engine_counting_at_finish():
    """SGLang c2 on the H200: the loop's 2 last warm-up requests finish between the counter's last sample before the
    window and its first request, so an engine counting at finish reads 2 x 256 tokens above the client's 32 x 256;
    the frontend, counting tokens as they stream, reads the client's count. Without a frontend series the engine's
    count is all there is; a frontend scraped without a sample after the window (the run's last point) gives none."""
    measured = [100.0 + 60.0 * (k + 1) / 32 for k in range(32)]
    engine = [
        *series("engine_ttft_sum_s", cumulative(0.5, 32 * 0.23)),
        *series("engine_ttft_count", cumulative(2, 32)),
        *series("engine_output_tokens", _at_finish(256, [99.0, 99.9, *measured])),
    ]
    streamed = series("frontend_output_tokens", cumulative(512, 32 * 256))
    got = figures(samples(engine, streamed), 100.0, 160.0)
    assert got["server_figures_source"].startswith("engine") and got["server_output_tokens"] == 32 * 256
    assert figures(samples(engine), 100.0, 160.0)["server_output_tokens"] == 34 * 256
    cut = [r for r in streamed if r["ts"] < 160.0]
    assert figures(samples(engine, cut), 100.0, 160.0)["server_output_tokens"] is None
