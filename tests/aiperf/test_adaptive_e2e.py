"""Adaptive length with real AIPerf against a real Dynamo frontend + mocker (issue 32 item 4): a point with a
budget is measured again as one longer window, its pilot kept beside it, and the summarize step reads the
final window and says why the point stopped.

The extension is forced, not hoped for: a target of 1e-6 (a 95 % interval of a millionth of the mean) is one
no real timing meets, so the point extends until its budget is spent, whatever the machine's load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infersweep.aiperf.point import round_warmup
from tests.aiperf.test_warmup import phase_conversations
from tests.support.mocker_point import mocker_deployment, run_point_step


@pytest.mark.e2e
def test_a_point_with_a_budget_measures_more_and_records_why_it_stopped(tmp_path):
    from infersweep.results.summarize import summarize

    run = tmp_path / "run"
    out = run / "points" / "c2"
    # 12 requests at c2 = 3 rounds of 4 (adaptive.batch_size): enough for an interval; budget 2 x 12 = 24
    workload = {"isl": 32, "osl": 4, "max_requests_factor": 2, "ci95_target": 1e-6}
    with mocker_deployment(tmp_path, "nemotron-3-nano-fp8-vllm-agg-kv") as dep:
        proc = run_point_step(
            dep,
            *("--concurrency", "2", "--requests", "12", "--warmup", str(round_warmup(2, 2))),
            *("--workload", json.dumps(workload), "--out", str(out)),
            *("--timeout-s", "400", "--extra-inputs", "ignore_eos:true"),
            timeout_s=500,
        )
    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "ok", (result["reason"], proc.stdout[-2000:], proc.stderr[-2000:])
    # measured more than its initial count, as one window of 24, and says why it stopped
    assert (result["requests_initial"], result["requests"], result["requests_extended"]) == (12, 24, 12)
    assert result["requests_ok"] == 24 and result["stop_reason"] == "budget spent"
    # the model folder's tokenizer reached AIPerf as a cached hub id, so AIPerf skipped its prefetch (a second
    # load of the tokenizer in a subprocess: 13-16 s of every H200 point)
    log = (out / "aiperf.log").read_text()
    assert "skipping cache warming" in log and "Prefetching" not in log
    assert result["tokenizer_dir"] == str(dep.model_dir)
    assert len(phase_conversations(out / "aiperf" / "profile_export.jsonl")["profiling"]) == 24
    # the 12-request pilot is kept beside it, with prompts of its own seed (not replayed from the cache)
    [pilot] = result["pilots"]
    pilot_result = json.loads((out / pilot["folder"] / "result.json").read_text())
    assert pilot["requests"] == 12 and pilot_result["stop_reason"] == "extend" and pilot_result["requests_ok"] == 12
    assert len(phase_conversations(out / pilot["folder"] / "aiperf" / "profile_export.jsonl")["profiling"]) == 12
    assert pilot["seed"] != result["seed"]

    def prompts(folder: Path) -> set[str]:
        data = json.loads((folder / "aiperf" / "inputs.json").read_text())["data"]
        return {json.dumps(s["payloads"][0]["messages"]) for s in data}

    assert not prompts(out) & prompts(out / pilot["folder"])  # the pilot's prompts are not resent from the cache

    # the summarize step reads the final window, never the pilot
    df = summarize(run, gpu_count=1, slo={}, title="adaptive")
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["requests_ok"], row["requests_extended"], row["stop_reason"]) == (24, 12, "budget spent")
    md = (run / "summary" / "results.md").read_text()
    assert "extended 1/1: +12 to 24 requests" in md and "budget spent 1/1" in md
