"""Warm-up that warms and is never measured (issue 32, item 2).

AIPerf 0.13 sizes a synthetic dataset from --request-count (aiperf/config/flags/_converter_dataset.py
_resolve_entries) and its warm-up and profiling phases draw from one sequential sampler, so the W warm-up
prompts came back as the last W measured requests (the committed mocker fixture shows it: its 4 warm-up
sessions are 4 of its 40 measured ones). A point now asks AIPerf for warm-up + measured distinct prompts, and
warms up at least one full round at its concurrency.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from infersweep import aiperf as aiperf_contract
from infersweep.aiperf.point import round_warmup
from infersweep.recipe import load_recipe
from infersweep.recipe.models import Workload
from steps import aiperf_point
from tests.support.mocker_point import AIPERF_BIN, c4_point

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "aiperf" / "0.13.0" / "dynamo-mocker-c4"


def _argv(workload: dict, *, requests: int = 160, warmup: int = 16, concurrency: int = 16) -> list[str]:
    args = aiperf_point.parse_args(
        [
            *("--url", "u", "--model", "m", "--tokenizer", "/tok", "--out", "/tmp/x/c16"),
            *("--requests", str(requests), "--warmup", str(warmup), "--concurrency", str(concurrency)),
            *("--workload", json.dumps(workload)),
        ]
    )
    return aiperf_contract.build_argv(args)


def _flag(argv: list[str], flag: str) -> str | None:
    return argv[argv.index(flag) + 1] if flag in argv else None


def phase_conversations(records_file: Path) -> dict[str, list[str]]:
    """conversation ids per AIPerf phase, from its per-request records (metadata.benchmark_phase)."""
    out: dict[str, list[str]] = {}
    for line in records_file.read_text().splitlines():
        meta = json.loads(line)["metadata"]
        out.setdefault(meta["benchmark_phase"], []).append(meta["conversation_id"])
    return out


def test_the_old_argv_replayed_the_warmup_inside_the_window():
    """What the fix is for, on AIPerf's own records (the committed run: --request-count 40, 4 warm-up)."""
    phases = phase_conversations(FIXTURE / "profile_export.jsonl")
    assert len(phases["profiling"]) == 40
    assert set(phases["warmup"]) <= set(phases["profiling"])


def test_a_synthetic_point_asks_for_one_prompt_per_request_warmup_included():
    argv = _argv({"isl": 1024, "osl": 256})
    assert (_flag(argv, "--request-count"), _flag(argv, "--warmup-request-count")) == ("160", "16")
    assert _flag(argv, "--num-dataset-entries") == "176"
    # a shared-prefix workload reuses its prefixes on purpose, but each request's own part stays distinct
    assert _flag(_argv({"isl": 1024, "osl": 64, "prefix_tokens": 512, "num_prefixes": 4}), "--num-dataset-entries")


def test_a_workload_that_reuses_sessions_or_replays_a_trace_keeps_its_own_count():
    assert "--num-dataset-entries" not in _argv({"isl": 128, "osl": 16, "turns": 3, "sessions": 8})
    trace = {"url": "/data/t.jsonl", "avg_isl": 100, "avg_osl": 10}
    assert "--num-dataset-entries" not in _argv(Workload(trace=trace, concurrency=[8]).aiperf_workload())


def test_warmup_is_at_least_one_round_at_the_points_concurrency():
    assert [round_warmup(c, 4) for c in (1, 4, 16, 128)] == [4, 4, 16, 128]
    assert round_warmup(64, 0) == 0  # a point that asks for no warm-up gets none
    points = load_recipe("qwen3-32b-bf16-vllm-h200-tp1").recipe.workload.points()
    assert points and all(p.warmup >= p.concurrency for p in points)


@pytest.mark.skipif(not AIPERF_BIN.exists(), reason="needs the AIPerf env at .venv-aiperf")
def test_aiperf_itself_sizes_the_dataset_from_our_argv():
    """AIPerf's own CLI converter (the function the fix cites) reads our argv as warm-up + measured entries."""
    argv = _argv({"isl": 64, "osl": 16}, requests=40, warmup=8, concurrency=8)
    code = (
        "import sys\nfrom aiperf.config.flags import CLIConfig\n"
        "from aiperf.config.flags._converter_dataset import _resolve_entries\n"
        "a = sys.argv[1:]\nkw = {'request_count': int(a[a.index('--request-count') + 1]),\n"
        "      'conversation_num_dataset_entries': int(a[a.index('--num-dataset-entries') + 1])}\n"
        "print(_resolve_entries(CLIConfig(**kw)))"
    )
    proc = subprocess.run(
        [str(AIPERF_BIN.parent / "python"), "-c", code, *argv[2:]],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert proc.stdout.strip() == "48", proc.stderr[-2000:]


@pytest.mark.e2e
def test_no_measured_request_repeats_a_warmup_prompt_on_a_real_frontend(tmp_path):
    """A real Dynamo frontend + mocker and real AIPerf: warm-up and measured requests are distinct sessions
    with distinct prompts (AIPerf's inputs.json), and the full round of warm-up ran before the window."""
    out = tmp_path / "c4"
    c4_point(tmp_path, out, "--requests", "12", "--warmup", str(round_warmup(4, 2)), "--isl", "64", "--osl", "8")
    phases = phase_conversations(out / "aiperf" / "profile_export.jsonl")
    assert len(phases["warmup"]) == 4 and len(phases["profiling"]) == 12
    assert not set(phases["warmup"]) & set(phases["profiling"])
    prompts = {
        s["session_id"]: json.dumps(s["payloads"][0]["messages"])
        for s in json.loads((out / "aiperf" / "inputs.json").read_text())["data"]
    }
    warm = {prompts[c] for c in phases["warmup"]}
    assert not warm & {prompts[c] for c in phases["profiling"]}
