"""The committed summaries of the 2026-12-03 H200 runs (benchmarks/measured/h200-2026-12-03/summary/, made by
benchmarks/summarize_snapshots.py) recompute from the per-request records inside the raw snapshots beside them,
so the numbers docs/measured-h200.md and the README quote cannot drift from the data.

Everything here is recomputed with plain arithmetic from AIPerf's profile_export.jsonl (profiling records only)
and the Dynamo frontend's histograms in AIPerf's server_metrics_export.json, not with the code that wrote the
summaries."""

from __future__ import annotations

import json
import math
import re
import statistics
import tarfile
from pathlib import Path

import pandas as pd
import pytest

FOLDER = Path(__file__).resolve().parents[2] / "benchmarks" / "measured" / "h200-2026-12-03"
SNAPSHOTS = {
    "session1-c1-r0": "session1-c1-r0-snapshot.tar.xz",
    "session2-c16-c64": "session2-c16-c64-snapshot.tar.xz",
}
POINT = re.compile(r"/volumes/workdir/run/points/(c\d+(?:-r\d+)?)/(result\.json|aiperf/profile_export\.jsonl|"
                   r"aiperf/server_metrics_export\.json)$")  # fmt: skip
T975_DF2 = 4.303  # two-sided 95 % Student-t critical value, 2 degrees of freedom (any statistics table)


def _identity(name: str) -> tuple[int, int]:
    conc, _, rep = name[1:].partition("-r")
    return int(conc), int(rep or 0)


@pytest.fixture(scope="module")
def points() -> dict[tuple[str, int, int], dict]:
    """(session, concurrency, repetition) -> the point's profiling records and frontend export, for every point
    with a result.json (the tool summarizes only those; session2's c64-r2 was cut and has none)."""
    found: dict[tuple[str, int, int], dict] = {}
    for session, tarball in SNAPSHOTS.items():
        with tarfile.open(FOLDER / tarball) as tf:  # one pass: an xz stream has no random access
            for member in tf:
                m = POINT.search(member.name)
                if not m or not member.isfile():
                    continue
                text = tf.extractfile(member).read().decode()
                entry = found.setdefault((session, *_identity(m.group(1))), {})
                if m.group(2) == "result.json":
                    entry["result"] = json.loads(text)
                elif m.group(2).endswith(".jsonl"):
                    entry["records"] = [json.loads(line) for line in text.splitlines() if line.strip()]
                else:
                    entry["frontend"] = json.loads(text)
    return {k: v for k, v in found.items() if "result" in v}


def _profiling(records: list[dict]) -> list[dict]:
    return [r for r in records if r["metadata"].get("benchmark_phase") == "profiling"]


def _value(record: dict, metric: str) -> float:
    return float(record["metrics"][metric]["value"])


def _table() -> pd.DataFrame:
    frames = []
    for session in SNAPSHOTS:
        df = pd.read_parquet(FOLDER / "summary" / session / "results.parquet")
        frames.append(df.assign(session=session))
    return pd.concat(frames, ignore_index=True)


def test_every_committed_repetition_recomputes_from_its_per_request_records(points):
    table = _table()
    assert sorted(points) == sorted(zip(table["session"], table["concurrency"], table["repetition"], strict=True))
    assert sorted(table["concurrency"].unique()) == [1, 16, 64]
    for _, row in table.iterrows():
        recs = _profiling(points[(row["session"], row["concurrency"], row["repetition"])]["records"])
        assert len(recs) == row["requests_ok"] and not any(r.get("error") for r in recs)
        for col, metric in [
            ("ttft_avg_ms", "time_to_first_token"),
            ("request_latency_avg_ms", "request_latency"),
            ("osl_avg_tok", "output_sequence_length"),
        ]:
            assert row[col] == pytest.approx(statistics.fmean(_value(r, metric) for r in recs), rel=1e-9), col
        ttft = sorted(_value(r, "time_to_first_token") for r in recs)
        assert ttft[0] <= row["ttft_p99_ms"] <= ttft[-1]
        # output tok/s: every output token over the window from the first request's start to the last one's end
        start = min(r["metadata"]["request_start_ns"] for r in recs)
        end = max(r["metadata"]["request_end_ns"] for r in recs)
        tokens = sum(_value(r, "output_sequence_length") for r in recs)
        assert row["output_throughput_tok_s"] == pytest.approx(tokens / ((end - start) / 1e9), rel=1e-3)


def test_the_per_load_interval_is_the_student_t_interval_over_the_repetitions(points):
    """c16's TTFT mean, 1146.6 ± 6.0 ms (n = 3) in the docs, from the records of its three repetitions."""
    by_load = pd.read_csv(FOLDER / "summary" / "session2-c16-c64" / "results_by_load.csv").set_index("concurrency")
    means = [
        statistics.fmean(
            _value(r, "time_to_first_token") for r in _profiling(points[("session2-c16-c64", 16, k)]["records"])
        )
        for k in range(3)
    ]
    half = T975_DF2 * statistics.stdev(means) / math.sqrt(3)
    assert by_load.loc[16, "n"] == 3 and by_load.loc[16, "left_out"] == 0
    assert by_load.loc[16, "ttft_avg_ms"] == pytest.approx(statistics.fmean(means), rel=1e-9)
    assert by_load.loc[16, "ttft_avg_ms_ci95"] == pytest.approx(half, rel=1e-3)
    assert by_load.loc[16, "ttft_avg_ms_text"] == f"{statistics.fmean(means):.1f} ± {half:.1f} (n=3)"
    # c64's two repetitions were judged unsteady: no valid repetition, so no interval is drawn from them
    assert by_load.loc[64, "n"] == 0 and by_load.loc[64, "left_out"] == 2


def test_the_warm_up_is_never_measured_and_no_prompt_is_read_from_the_cache(points):
    """Issue 32 item 2 in the data: no warm-up conversation comes back in the profiling phase, and the Dynamo
    frontend counted no cached prompt tokens in it (the earlier sessions' 4 replays show there as 4 x 1,024)."""
    frontend = {
        s: pd.read_csv(FOLDER / "summary" / s / "frontend_figures.csv").set_index(["concurrency", "repetition"])
        for s in SNAPSHOTS
    }
    for (session, conc, rep), p in points.items():
        warm = {r["metadata"]["conversation_id"] for r in p["records"] if r["metadata"]["benchmark_phase"] == "warmup"}
        measured = [r["metadata"]["conversation_id"] for r in _profiling(p["records"])]
        assert len(warm) >= conc and not warm & set(measured) and len(set(measured)) == len(measured)
        cached = p["frontend"]["metrics"]["dynamo_frontend_cached_tokens"]["series"]
        assert p["frontend"]["metrics_phase"] == "profiling" and sum(s["stats"]["count"] for s in cached) == 0
        assert frontend[session].loc[(conc, rep), "frontend_cached_tokens_requests"] == 0


def test_the_client_ttft_is_the_first_token_the_frontend_saw(points):
    """Issue 32 item 1 in the data: every token reaches the client (c1: 256 chunks for 256 tokens), and the client's
    mean TTFT agrees with the Dynamo frontend's own histogram over the same phase (committed in frontend_figures.csv)."""
    c1 = _profiling(points[("session1-c1-r0", 1, 0)]["records"])
    assert all(len(r["metrics"]["inter_chunk_latency"]["value"]) + 1 == _value(r, "output_sequence_length") for r in c1)
    for (session, conc, rep), p in points.items():
        series = p["frontend"]["metrics"]["dynamo_frontend_time_to_first_token_seconds"]["series"]
        server = 1000 * sum(s["stats"]["sum"] for s in series) / sum(s["stats"]["count"] for s in series)
        client = statistics.fmean(_value(r, "time_to_first_token") for r in _profiling(p["records"]))
        committed = pd.read_csv(FOLDER / "summary" / session / "frontend_figures.csv").set_index(
            ["concurrency", "repetition"]
        )
        assert committed.loc[(conc, rep), "server_ttft_avg_ms"] == pytest.approx(server, rel=1e-9)
        assert abs(client / server - 1) < 0.02
