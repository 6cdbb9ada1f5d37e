"""The cache check names the prompts a point's cached requests had been sent as before
(infersweep.results.prompt_repeats): a chance repeat of another point's prompt, or a replay of the point's own
warm-up. Synthetic points here; tests/results/test_measured_sglang_c2_c8.py runs it on the H200's records."""

from __future__ import annotations

import json
from pathlib import Path

from infersweep.results.prompt_repeats import repeated_prompts, repeats_line


def _point(root: Path, name: str, sent: list[tuple[str, str, str, int, int]]) -> Path:
    """A point folder whose AIPerf sent (phase, session, prompt text, start ns, cached tokens) of 100 tokens each."""
    art = root / name / "aiperf"
    art.mkdir(parents=True)
    sessions = {s: text for _, s, text, _, _ in sent}
    data = [
        {"session_id": s, "payloads": [{"messages": [{"role": "user", "content": t}]}]} for s, t in sessions.items()
    ]
    (art / "inputs.json").write_text(json.dumps({"data": data}))
    records = [
        {
            "metadata": {"benchmark_phase": phase, "conversation_id": s, "turn_index": 0, "request_start_ns": start},
            "metrics": {"usage_prompt_tokens": {"value": 100}, "usage_prompt_cache_read_tokens": {"value": cached}},
        }
        for phase, s, _, start, cached in sent
    ]
    (art / "profile_export.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return root / name


def test_a_chance_repeat_of_an_earlier_points_prompt_is_named_and_is_not_a_replay(tmp_path):
    c8 = _point(tmp_path, "c8", [("warmup", "s0", "alpha", 1, 2), ("profiling", "s1", "beta", 2, 2)])
    c4 = _point(tmp_path, "c4-r1", [("warmup", "s0", "gamma", 3, 2), ("profiling", "s1", "beta", 4, 99)])
    got = repeated_prompts([c8, c4])
    assert got == {
        "c4-r1": [
            {
                "session": "s1",
                "cached": 99,
                "prompt_tokens": 100,
                "first_point": "c8",
                "first_session": "s1",
                "first_phase": "profiling",
            }
        ]
    }
    line = repeats_line("c4-r1", got["c4-r1"])
    assert "(s1 as c8 s1)" in line and "can coincide: not a warm-up replay" in line


def test_a_replayed_warm_up_prompt_is_called_a_replay(tmp_path):
    c1 = _point(tmp_path, "c1", [("warmup", "s0", "alpha", 1, 2), ("profiling", "s5", "alpha", 2, 99)])
    got = repeated_prompts([c1])
    assert repeats_line("c1", got["c1"]).endswith(
        "(s5 as c1 s0 (this point's warm-up)); 1 replayed this point's warm-up"
    )


def test_only_a_measured_request_served_from_the_cache_counts(tmp_path):
    # the same text sent again but prefilled in full (the cache had dropped it), and a point without inputs.json
    a = _point(tmp_path, "c2", [("profiling", "s0", "alpha", 1, 2)])
    b = _point(tmp_path, "c2-r1", [("profiling", "s0", "alpha", 2, 3)])
    (tmp_path / "c2-r2" / "aiperf").mkdir(parents=True)
    assert repeated_prompts([a, b, tmp_path / "c2-r2"]) == {}
