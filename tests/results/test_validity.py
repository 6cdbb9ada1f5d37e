"""The validity verdict of every point (infersweep.results.validity, thresholds in params/validity.yaml).

Points judged here are real AIPerf 0.13.0 output, run on purpose against local Dynamo 1.6.1 mocker
frontends (tests/fixtures/validity/README.md says how each was made): an unsteady point (the mocker
worker throttled, SIGSTOP/SIGCONT, from the middle of the profiling phase), a client-starved one (AIPerf
pinned to one core at nice 19 next to two busy loops once profiling started) and a saturated pair (a
mocker serving one sequence at a time, at concurrency 1 and 8); the valid one is the 0.13.0 reference run
made on a quiet machine. compare and regress use valid points only unless told otherwise.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from infersweep.aiperf import read_point
from infersweep.cli import main as cli_main
from infersweep.results.compare import compare_runs
from infersweep.results.regression import judge_run
from infersweep.results.table import build_table, finish_table
from infersweep.results.validity import load_thresholds
from tests.support.paths import REPO, TESTS

FIXTURES = TESTS / "fixtures" / "validity"
LOCAL = load_thresholds("local")


def _point(tmp: Path, case: str, concurrency: int, **result_extra) -> Path:
    """A sweep point folder as aiperf_point leaves it: aiperf/ + result.json (read_point + the seed record)."""
    point = tmp / "points" / f"c{concurrency}"
    shutil.copytree(FIXTURES / case, point / "aiperf")
    result = read_point(point / "aiperf")
    result.update(concurrency=concurrency, seed=1, seed_policy="per-point", cache_state="fresh-prompts", **result_extra)
    (point / "result.json").write_text(json.dumps(result))
    return point


def _row(tmp: Path, case: str, concurrency: int, thresholds=LOCAL, **extra) -> dict:
    _point(tmp, case, concurrency, **extra)
    df = build_table(tmp / "points", 1, {}, {"recipe": "r"}, thresholds)
    return df.iloc[0].to_dict()


# ---------------------------------------------------------------- real points, one reason each


def test_an_unsteady_point_is_invalid_because_it_is_unsteady(tmp_path):
    row = _row(tmp_path, "unsteady-c4", 4)
    assert not row["valid"]
    assert "unsteady: output tok/s drifted" in row["validity_reasons"]
    assert row["steady_throughput_change"] < -LOCAL["steady_state"]["max_throughput_drift"]


def test_a_client_starved_point_is_invalid_because_of_the_client(tmp_path):
    row = _row(tmp_path, "client-starved-c8", 8)
    assert not row["valid"]
    assert "client-bound: AIPerf sent requests" in row["validity_reasons"]
    assert row["send_delay_p99_ms"] > 50


def test_a_saturated_point_is_marked_invalid_and_kept(tmp_path):
    _point(tmp_path, "saturated-c1", 1)
    _point(tmp_path, "saturated-c8", 8)
    df = build_table(tmp_path / "points", 1, {}, {"recipe": "r"}, LOCAL).set_index("concurrency")
    assert len(df) == 2  # reported, not hidden
    assert "saturated: from concurrency 1 to 8" in df.at[8, "validity_reasons"]
    assert not df.at[8, "valid"]
    assert "saturated" not in df.at[1, "validity_reasons"]


def test_a_steady_point_is_valid_and_default_thresholds_reject_a_short_one(aiperf_ref, tmp_path):
    point = tmp_path / "points" / "c4"
    shutil.copytree(aiperf_ref / "dynamo-mocker-c4", point / "aiperf")
    result = read_point(point / "aiperf") | {"concurrency": 4, "cache_state": "fresh-prompts"}
    (point / "result.json").write_text(json.dumps(result))
    default = build_table(tmp_path / "points", 1, {}, {}, load_thresholds(None)).iloc[0]
    local = build_table(tmp_path / "points", 1, {}, {}, LOCAL).iloc[0]
    assert "too short: profiled 0.7 s < min_duration_s 30" in default["validity_reasons"]
    # The toy tokenizer makes every prompt the same <unk> run: 97% cache reads, judged only by default.
    assert "prefix cache served 97.2% of prompt tokens" in default["validity_reasons"]
    assert bool(local["valid"]), local["validity_reasons"]
    assert (default["validity_profile"], local["validity_profile"]) == ("default", "local")


def test_unknown_cache_state_and_errors_make_a_point_invalid(aiperf_ref, tmp_path):
    point = tmp_path / "points" / "c2"
    shutil.copytree(aiperf_ref / "partial_500s_rc0", point / "aiperf")
    result = read_point(point / "aiperf", max_error_rate=0.6) | {"concurrency": 2}
    (point / "result.json").write_text(json.dumps(result))
    row = build_table(tmp_path / "points", 1, {}, {}, LOCAL).iloc[0]
    assert row["status"] == "ok" and not row["valid"]  # within the point's own error budget, not the validity one
    assert "errors: 53.3% of requests failed > max_error_rate 0" in row["validity_reasons"]
    assert "prefix-cache state at point start unknown" in row["validity_reasons"]


def test_aiperf_high_cpu_warning_makes_the_client_the_bottleneck(aiperf_ref, tmp_path):
    """The reference run's log plus the warning line AIPerf's worker manager writes above 85 % worker CPU
    (text and logger format as in aiperf/workers/worker_group_state.py update_worker_status, 0.13.0)."""
    point = tmp_path / "points" / "c4"
    shutil.copytree(aiperf_ref / "dynamo-mocker-c4", point / "aiperf")
    log = point / "aiperf" / "logs" / "aiperf.log"
    log.chmod(0o644)
    with log.open("a") as f:
        f.write(
            "2026-11-29 16:53:54.100 - worker_manager - WARNING - CPU usage for worker_d035cdb4 is 97%. "
            "AIPerf results may be inaccurate.\n"
        )
    result = read_point(point / "aiperf") | {"concurrency": 4, "cache_state": "fresh-prompts"}
    (point / "result.json").write_text(json.dumps(result))
    row = build_table(tmp_path / "points", 1, {}, {}, LOCAL).iloc[0]
    assert not row["valid"] and row["aiperf_high_cpu_warnings"] == 1
    assert "client-bound: AIPerf logged 1 high-CPU warning(s)" in row["validity_reasons"]


# ---------------------------------------------------------------- compare and regress use valid points


def _table(recipe: str, valid: dict[int, bool], tok: dict[int, float]) -> pd.DataFrame:
    rows = [
        {
            "run_id": f"wf-{recipe}",
            "recipe": recipe,
            "concurrency": c,
            "repetition": 0,
            "status": "ok",
            "reason": "",
            "valid": v,
            "validity_reasons": "" if v else "unsteady: output tok/s changed -40%",
            "error_ratio": 0.0,
            "output_throughput_tok_s": tok[c],
            "ttft_p50_ms": 100.0,
            "itl_p50_ms": 5.0,
            "request_latency_p50_ms": 900.0,
        }
        for c, v in valid.items()
    ]
    return finish_table(pd.DataFrame(rows), {"recipe": recipe})


A = _table("a", {1: True, 4: True, 16: True}, {1: 100, 4: 350, 16: 900})
B = _table("b", {1: True, 4: False, 16: True}, {1: 101, 4: 200, 16: 905})


def test_compare_leaves_invalid_points_out_and_says_so():
    cmp = compare_runs({"a": A, "b": B})
    assert set(cmp.changes["concurrency"]) == {1, 16}
    assert cmp.left_out == ["b: left out b@wf-b concurrency 4 repetition 0: unsteady: output tok/s changed -40%"]
    assert "left out 1 invalid point(s) (--include-invalid compares them too)" in cmp.text()
    everything = compare_runs({"a": A, "b": B}, include_invalid=True)
    assert set(everything.changes["concurrency"]) == {1, 4, 16} and not everything.left_out


def test_regress_judges_valid_points_only_unless_told():
    v = judge_run(B, A)
    assert v.verdict == "pass"  # the -43% at c4 was measured on an unsteady point
    assert "left out  current: left out b@wf-b concurrency 4" in v.report
    # judged when told: inconclusive, not regressed, because these points ran once (issue 43: n = 1 decides
    # nothing); the check is there, beyond its tolerance
    judged = judge_run(B, A, include_invalid=True)
    assert judged.verdict == "inconclusive" and "inconclusive  output_throughput_tok_s @c4" in judged.report


def test_tables_without_a_verdict_are_compared_whole():
    old = A.drop(columns=["valid", "validity_reasons"])
    cmp = compare_runs({"a": old, "b": old.assign(recipe="b")})
    assert set(cmp.changes["concurrency"]) == {1, 4, 16} and not cmp.left_out


def test_cli_flags(tmp_path, capsys):
    folders = []
    for t in (A, B):
        folder = tmp_path / t["recipe"].iloc[0]
        (folder / "summary").mkdir(parents=True)
        t.to_parquet(folder / "summary" / "results.parquet")
        (folder / "summary" / "run.json").write_text(json.dumps({"context": {"recipe": t["recipe"].iloc[0]}}))
        folders.append(str(folder))
    assert cli_main(["compare", *folders]) == 0
    assert "left out 1 invalid point(s)" in capsys.readouterr().out
    assert cli_main(["regress", folders[1], "--baseline", folders[0]]) == 0
    assert cli_main(["regress", folders[1], "--baseline", folders[0], "--include-invalid"]) == 3  # n = 1


def test_the_profile_follows_the_platform_the_steps_run_on(tmp_path, monkeypatch):
    """The profile named like the platform (infersweep.platform.select.PLATFORM_ENV) applies by default: local
    mode's environment selects 'local'; a platform without a profile of its name gets the defaults."""
    import yaml

    from infersweep.local.dynamo.adapter import step_env
    from infersweep.platform.select import PLATFORM_ENV

    monkeypatch.delenv(PLATFORM_ENV, raising=False)
    assert load_thresholds()["profile"] == "default"
    monkeypatch.setenv(PLATFORM_ENV, step_env(state_dir=tmp_path, model_dir=tmp_path, max_workers=1)[PLATFORM_ENV])
    assert load_thresholds() == LOCAL and LOCAL["profile"] == "local"
    f = tmp_path / "validity.yaml"
    f.write_text(yaml.safe_dump({"min_requests": 10, "profiles": {"kind": {"min_requests": 3}}}))
    monkeypatch.setenv(PLATFORM_ENV, "kind")  # another platform's own profile
    assert load_thresholds(path=f) == {"min_requests": 3, "profile": "kind"}
    monkeypatch.setenv(PLATFORM_ENV, "minikube")
    assert load_thresholds(path=f) == {"min_requests": 10, "profile": "default"}


# ---------------------------------------------------------------- real engines (benchmarks/measured, H200)

H200 = REPO / "benchmarks" / "measured" / "h200-2026-12-01"


@pytest.mark.parametrize("concurrency", [4, 8, 16])
def test_a_closed_loop_of_lockstep_waves_on_a_real_engine_is_steady(concurrency):
    # vLLM on the H200, OSL 256 for every request: each round starts and ends together. Counting a request's
    # tokens at its end read +33 %, +50 % and +49 % between the halves of a time window (whole waves' ends in
    # one half, not the other); judged per round (cycle), the server's constant stream reads as it is. What
    # drift is left (+5 %, +6 %, +9 %) is the last round: the 4 warm-up prompts come back there as prefix-cache
    # hits and finish early (issue 32).
    from infersweep.results.validity import window_measures

    records = H200 / "qwen3-32b-bf16-c2-c16" / "points" / f"c{concurrency}" / "aiperf" / "profile_export.jsonl"
    m = window_measures(records, concurrency)
    assert abs(m["steady_throughput_change"]) < LOCAL["steady_state"]["max_throughput_drift"]
    assert m["steady_cycles"] >= 6 and m["steady_cycle_size"] == concurrency


def test_a_cold_prefix_cache_filling_inside_the_window_is_still_unsteady():
    # KV-aware routing from emptied caches: hits grow during the window, TTFT falls by three quarters and tok/s
    # rises; that is a real ramp, and the point stays invalid.
    from infersweep.results.validity import window_measures

    records = H200 / "gpu-kv-vs-rr" / "treatments" / "kv" / "points" / "c16" / "aiperf" / "profile_export.jsonl"
    m = window_measures(records, 16)
    assert m["steady_throughput_change"] > LOCAL["steady_state"]["max_throughput_drift"]
    assert m["steady_ttft_change"] < -0.5


FOURTH = REPO / "benchmarks" / "measured" / "h200-2026-12-02"


@pytest.mark.parametrize(
    ("point", "concurrency", "valid", "why"),
    [
        # fitted through the interior rounds (the start burst and the drain left out): c32's rate is flat, but its
        # TTFT still falls round by round as the lockstep unlocks; c64's interior output rate still climbs
        ("qwen3-32b-bf16-c32-c64/points/c32", 32, False, "unsteady: TTFT p50 drifted -46%"),
        ("qwen3-32b-bf16-c32-c64/points/c64", 64, False, "unsteady: output tok/s drifted +24%"),
        ("qwen3-32b-bf16-c128/points/c128", 128, False, "unsteady: the first cycle raises the mean TTFT by +22%"),
        ("sglang-qwen3-32b-bf16-c16-c32/points/c16", 16, True, ""),
        ("sglang-qwen3-32b-bf16-c16-c32/points/c32", 32, True, ""),
    ],
)
def test_the_fourth_h200_sessions_points_are_judged_over_whole_cycles(point, concurrency, valid, why):
    # Every rule, on the committed records of real engines. The halves rule judged vLLM c32-c128 valid and
    # SGLang c32 unsteady (+27 %): its window opened on a prefill burst and closed before one (issue 32).
    # Over whole rounds SGLang c32 is flat (rounds locked, TTFT 2.8-3.3 s per round) and valid; vLLM's per-round
    # TTFT falls (c32 3,076 -> 1,802 ms) so its output rate rises over the rounds, and c128's first round is a
    # cold burst (9.9 s TTFT against 4.1-4.6 s after).
    from infersweep.results.table import read_result
    from infersweep.results.validity import load_thresholds, point_measures, steady_state_reasons

    d = FOURTH / point
    m = point_measures(d, {**read_result(d), "concurrency": concurrency})
    # the steady-state rule a local GPU run is judged by (these points' 4 replayed warm-up prompts fail the
    # cache check besides: test_warm_up_prompts_replayed_in_the_window_fail_the_cache_check)
    reasons = steady_state_reasons(m, load_thresholds(profile="local-gpu"))
    assert (not reasons) is valid, reasons
    assert valid or any(r.startswith(why) for r in reasons), reasons
    assert 250 <= m["osl_delivered"] <= 256


def test_warm_up_prompts_replayed_in_the_window_fail_the_cache_check():
    # c1 on the H200: the 4 warm-up prompts come back as the last 4 of 32 requests, full prefix-cache hits
    # (12.45 % of prompt tokens); the 20 % allowed before passed them (issue 32).
    from infersweep.results.table import SUMMARY_FILE, aiperf_statistics, read_result
    from infersweep.results.validity import judge_point, point_measures

    d = H200 / "qwen3-32b-bf16-c1-c2" / "points" / "c1"
    m = point_measures(d, {**read_result(d), "concurrency": 1}, aiperf_statistics(d / "aiperf" / SUMMARY_FILE))
    ok, reasons = judge_point(m, load_thresholds(None))
    assert not ok and any(r.startswith("prefix cache served 12.5% of prompt tokens") for r in reasons), reasons


def test_a_treatment_on_another_treatments_cache_is_not_a_known_state():
    from infersweep.results.table import read_result
    from infersweep.results.validity import judge_point, point_measures

    d = H200 / "gpu-kv-vs-rr-no-reset" / "treatments" / "kv-2" / "points" / "c16"
    m = point_measures(d, {**read_result(d), "concurrency": 16})
    assert m["cache_state"] == "reused-prompts"  # what the point itself recorded
    m["kv_cache_state"] = "warm after kv"  # what the experiment recorded (its summary/run.json context)
    _, reasons = judge_point(m, LOCAL)
    assert "prefix-cache state at point start inherited from another treatment (kv_cache_state 'warm after kv')" in (
        "; ".join(reasons)
    )
