"""The local scale-down note says what really changed in the workload (issue 38 item 5): a trace replaced by
synthetic prompts, and the prompt length AIPerf really sends when a shared prefix is prepended."""

from __future__ import annotations

from infersweep.local.profile import load_local_profile
from infersweep.local.scale import local_workload, scaled_lengths
from infersweep.local.scale_note import scale_note
from infersweep.recipe import load_recipe


def _note(name: str) -> dict[str, str]:
    r, prof = load_recipe(name), load_local_profile()
    workload, points = local_workload(r, prof, *scaled_lengths(r, prof))
    lines = scale_note(r, prof, workload, points, prof.max_workers_per_component)
    return {ln.split()[0]: ln for ln in lines[1:]} | {"text": "\n".join(lines)}


def test_a_trace_replaced_by_synthetic_prompts_says_so():
    note = _note("qwen3-32b-fp8-vllm-agg")  # the Mooncake conversation trace: a download
    assert "synthetic prompts: the trace is NOT replayed (a download" in note["workload"]
    assert "KV routing here say nothing of the trace's" in note["text"]
    assert "9300 / 339" in note["isl"] and "-> 512 / 18" in note["isl"]


def test_a_shared_prefix_shows_the_prompt_length_really_sent():
    note = _note("demo-prefix-kv")  # 512-token prompts: a 448-token shared prefix + 64 own tokens
    assert "-> 512 / 16 (a 448-token prefix shared by 8 prompts + 64 own)" in note["isl"]


def test_a_trace_replayed_here_is_named_as_replayed():
    note = _note("demo-agentic-kv")
    assert "(replayed as is)" in note["workload"] and "NOT replayed" not in note["text"]
