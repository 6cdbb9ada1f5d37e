"""The engine's own first-token histograms (issue 32 item 1): an SGLang worker runs with --enable-metrics, without
which dynamo.sglang serves no sglang:* series (ai-dynamo 1.3.1 dynamo/sglang/publisher.py) and a point's server
figures are the frontend's alone, as on the H200 on 2026-12-04; vLLM exports its histograms by default."""

from __future__ import annotations

from infersweep.dgd.render import worker_args
from infersweep.recipe import load_recipe


def _args(name: str, overrides: dict | None = None) -> list[str]:
    r = load_recipe(name, overrides=overrides)
    return worker_args(r, "worker", r.recipe.topology.workers)


def test_sglang_workers_export_their_histograms_and_vllm_needs_no_flag():
    assert _args("qwen3-32b-bf16-sglang-h200-tp1").count("--enable-metrics") == 1
    assert "--enable-metrics" not in _args("qwen3-32b-bf16-vllm-h200-tp1")


def test_a_recipe_that_gives_the_flag_itself_gets_it_once():
    args = _args("qwen3-32b-bf16-sglang-h200-tp1", {"engine_args": ["--enable-metrics"]})
    assert args.count("--enable-metrics") == 1
