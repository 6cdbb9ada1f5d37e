"""A closed-loop point's measured window follows its warm-up without a drain (issue 32, items 2-3).

AIPerf drains the warm-up by default, so the window opened with `concurrency` requests sent together; on the H200
that burst echoed through the first 2-4 of 12 cycles of every KV-vs-RR window and all 12 were judged unsteady.
The point step now gives AIPerf a two-phase YAML whose profiling phase is `seamless` (infersweep/aiperf/flags.py
seamless_warmup), and reads the throughputs over the requests' own span, since AIPerf's phase window then opens
before the first measured request (infersweep/aiperf/artifacts.py THROUGHPUT_OVER_REQUESTS).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infersweep import aiperf as aiperf_contract
from infersweep.aiperf.artifacts import read_point
from infersweep.aiperf.flags import PHASES_FILE, SEAMLESS_FLAGS, drained_argv, write_phases_file
from infersweep.aiperf.phase_overlap import THROUGHPUT_OVER_PHASE, THROUGHPUT_OVER_REQUESTS
from steps import aiperf_point
from tests.support.aiperf_resolve import resolved
from tests.support.mocker_point import AIPERF_BIN, c4_point, peak_in_flight, record_metadata

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "aiperf" / "0.13.0" / "dynamo-mocker-c4"


def _args(out: Path, workload: dict, *extra: str, concurrency: int = 16, warmup: int = 64):
    return aiperf_point.parse_args(
        [
            *("--url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "gpt2", "--out", str(out)),
            *("--requests", "192", "--warmup", str(warmup), "--concurrency", str(concurrency)),
            *("--workload", json.dumps(workload), *extra),
        ]
    )


def _seamless_flags(argv: list[str]) -> list[str]:
    """The flags (with their values) that make the window seamless."""
    return [x for i, x in enumerate(argv) if x in SEAMLESS_FLAGS or (i and argv[i - 1] in SEAMLESS_FLAGS)]


def test_a_closed_loop_point_with_a_warmup_runs_its_window_seamless(tmp_path):
    argv = aiperf_contract.build_argv(_args(tmp_path / "c16", {"isl": 128, "osl": 16}))
    assert _seamless_flags(argv) == ["--config", str(tmp_path / "c16" / PHASES_FILE), "--warmup-concurrency", "16"]


@pytest.mark.parametrize(
    "workload, extra, warmup, why",
    [
        ({"isl": 128, "osl": 16}, (), 0, "no warm-up: nothing to follow"),
        ({"isl": 128, "osl": 16}, ("--request-rate", "4"), 64, "an open-loop point's warm-up is a rate phase"),
        (
            {"trace": "/data/t.jsonl", "trace_type": "mooncake_trace"},
            (),
            64,
            "--no-fixed-schedule is refused with --config",
        ),
    ],
)
def test_other_points_keep_aiperfs_drained_warmup(tmp_path, workload, extra, warmup, why):
    argv = aiperf_contract.build_argv(_args(tmp_path / "c16", workload, *extra, warmup=warmup))
    assert _seamless_flags(argv) == [], why


@pytest.mark.skipif(not AIPERF_BIN.exists(), reason="needs the AIPerf env at .venv-aiperf")
@pytest.mark.parametrize(
    "workload",
    [
        {"isl": 128, "osl": 16, "server_token_count": True},
        {"isl": 256, "osl": 16, "prefix_tokens": 128, "num_prefixes": 4},
        {"isl": 64, "osl": 8, "turns": 3, "sessions": 8, "turn_delay_ms": 50},
    ],
    ids=["synthetic", "shared-prefixes", "multi-turn"],
)
def test_aiperf_resolves_the_seamless_argv_to_the_same_benchmark_but_seamless(tmp_path, workload):
    """The YAML changes one thing: every phase, dataset and endpoint field AIPerf resolves from our flags alone is
    the same with it, but for the profiling phase's `seamless` (so no flag of ours is lost or changed by --config,
    and the warm-up keeps the point's concurrency)."""
    out = tmp_path / "c16"
    out.mkdir()
    write_phases_file(out)
    argv = aiperf_contract.build_argv(_args(out, workload, "--extra-inputs", "ignore_eos:true"))
    flags = _seamless_flags(argv)
    assert flags, "the point did not ask for a seamless window"
    drained = drained_argv(argv)
    [seamless_cfg], [drained_cfg] = resolved(argv, tmp_path), resolved(drained, tmp_path)
    phases = {p["name"]: p for p in seamless_cfg["phases"]}
    assert phases["profiling"]["seamless"] is True and phases["warmup"]["concurrency"] == 16
    assert (phases["warmup"]["requests"], phases["profiling"]["requests"]) == (64, 192)
    for p in seamless_cfg["phases"]:
        p["seamless"] = False
    assert seamless_cfg == drained_cfg


def test_a_seamless_points_throughputs_are_over_its_requests_span(tmp_path):
    """AIPerf divides by the phase's window, which a seamless phase opens before its first request: the point's
    req/s and tok/s are its totals over AIPerf's benchmark_duration instead, and its window starts at its first
    request. (The committed drained run with its phases marked seamless: the arithmetic, not AIPerf's timing.)"""
    drained = read_point(FIXTURE)
    assert drained["throughput_window"] == THROUGHPUT_OVER_PHASE
    art = tmp_path / "aiperf"
    shutil.copytree(FIXTURE, art)
    summary = json.loads((art / "profile_export_aiperf.json").read_text())
    for phase in summary["input_config"]["phases"]:
        phase["seamless"] = phase["kind"] == "profiling"
    (art / "profile_export_aiperf.json").write_text(json.dumps(summary))
    seamless = read_point(art)
    duration = summary["benchmark_duration"]["avg"]
    count, isl, osl = (summary[k]["avg"] for k in ("request_count", "total_isl", "total_osl"))
    assert seamless["throughput_window"] == THROUGHPUT_OVER_REQUESTS
    m = seamless["metrics"]
    assert m["request_throughput_req_s"] == pytest.approx(count / duration)
    assert m["output_throughput_tok_s"] == pytest.approx(osl / duration)
    assert m["input_throughput_tok_s"] == pytest.approx(isl / duration)
    assert m["total_throughput_tok_s"] == pytest.approx((isl + osl) / duration)
    starts = [json.loads(line)["metadata"] for line in (art / "profile_export.jsonl").read_text().splitlines()]
    profiling = [r["request_start_ns"] for r in starts if r["benchmark_phase"] == "profiling"]
    assert seamless["profiling_start_ns"] == min(profiling)


@pytest.mark.e2e
def test_a_seamless_window_overlaps_the_warmup_on_a_real_frontend(tmp_path):
    """A real Dynamo frontend + mocker and real AIPerf: the profiling phase starts while warm-up requests are still
    in flight (drained, it could not: AIPerf waits for every warm-up credit before the profiling phase,
    aiperf/timing/phase/runner.py), the loop never holds more than `concurrency` requests, the warm-up requests
    stay out of the window, and result.json's req/s is the measured count over the measured requests' span; the
    results table's row says how the window followed its warm-up."""
    from infersweep.results.summarize import summarize

    run = tmp_path / "run"
    out = run / "points" / "c4"
    # 256 output tokens (~1.4 s a request on the mocker): the warm-up's last requests still run when AIPerf has
    # switched phases, however loaded the machine (with 8 tokens, ~70 ms, they had sometimes ended)
    result = c4_point(tmp_path, out, "--requests", "16", "--warmup", "8", "--isl", "64", "--osl", "256")
    assert (result["warmup_mode"], result["throughput_window"]) == ("seamless", THROUGHPUT_OVER_REQUESTS)
    assert "--config" in result["argv"] and (out / PHASES_FILE).is_file()
    metas = record_metadata(out)
    warm = [m for m in metas if m["benchmark_phase"] == "warmup"]
    measured = [m for m in metas if m["benchmark_phase"] == "profiling"]
    assert (len(warm), len(measured)) == (8, 16)
    first = min(m["request_start_ns"] for m in measured)
    # AIPerf started the profiling phase when the warm-up had sent its last request, not when that one returned
    # (its phase manifest; drained, the phase waits for every warm-up return: aiperf/timing/phase/runner.py). Its
    # first measured request then waits for a slot a warm-up request frees; in a lockstep loop those return
    # within milliseconds of each other, so whether the first one starts before the last return is the machine's
    # timing, not something to assert.
    phases = {p["phase_kind"]: p for p in json.loads((out / "aiperf" / "phase_manifest.json").read_text())["phases"]}
    assert phases["profiling"]["start_ns"] < phases["warmup"]["end_ns"], "the profiling phase waited for the drain"
    assert phases["profiling"]["start_ns"] < max(m["request_end_ns"] for m in warm)  # the records say the same
    assert peak_in_flight(metas) <= 4
    assert result["profiling_start_ns"] == first
    # req/s over AIPerf's own span of these records (benchmark_duration: first request to last response; it and
    # the records' request_start/end differ by about a millisecond either way), which the phase's window, opened
    # when the warm-up finished sending, is longer than: AIPerf's own figure reads lower
    summary = json.loads((out / "aiperf" / "profile_export_aiperf.json").read_text())
    ours = result["metrics"]["request_throughput_req_s"]
    assert ours == pytest.approx(16 / summary["benchmark_duration"]["avg"])
    assert summary["request_throughput"]["avg"] < ours
    [row] = summarize(run, gpu_count=1, slo={}, title="seamless").to_dict("records")
    assert (row["warmup_mode"], row["warmup_requests"]) == ("seamless", 8)
    assert row["request_throughput_req_s"] == pytest.approx(ours)


def _record(phase: str, start_s: float, end_s: float) -> str:
    ns = 1_000_000_000
    meta = {"benchmark_phase": phase, "request_start_ns": int(start_s * ns), "request_end_ns": int(end_s * ns)}
    metrics = {
        "time_to_first_token": {"value": 50.0, "unit": "ms"},
        "output_sequence_length": {"value": 8, "unit": "tokens"},
    }
    return json.dumps({"metadata": meta, "metrics": metrics})


def test_the_delivered_load_of_a_seamless_window_counts_the_warmups_last_requests(tmp_path):
    """A c4 loop of 1 s requests whose warm-up slots free at 0.25 s steps: the measured requests start one by one,
    but the server holds 4 throughout, and a window that counts only its own requests would read 3.6 over its
    first 4 rounds. Drained (the warm-up ends before the window), nothing changes."""
    from infersweep.aiperf.steadiness import window_measures

    lines = [_record("warmup", k * 0.25 - 1.0, k * 0.25) for k in range(4)]  # the warm-up's last round
    lines += [_record("profiling", k * 0.25 + r, k * 0.25 + r + 1.0) for r in range(4) for k in range(4)]
    records = tmp_path / "profile_export.jsonl"
    records.write_text("\n".join(lines) + "\n")
    assert window_measures(records, 4)["delivered_concurrency"] == pytest.approx(4.0)
    records.write_text("\n".join(lines[4:]) + "\n")  # the measured requests alone
    assert window_measures(records, 4)["delivered_concurrency"] == pytest.approx(3.6, abs=0.01)
