"""The catalog covers both seeds: every row of their deployment tables is a recipe that loads, whose engine
and GPU count are the row's, whose published numbers are its baseline, and whose DGD validates in both
API versions. The rows are read from the seed documents themselves (../shared/seeds): those tests skip when
the seeds are absent (a clone with nothing beside it); the recipe-validation test always runs."""

from __future__ import annotations

import re

import pytest

from infersweep.dgd.render import render_dgd
from infersweep.recipe import all_recipe_paths, find_recipe, load_recipe
from infersweep.schemas import validate_dgd
from tests.conftest import has_shared, needs_shared, shared_dir

# Cluster report row (name | engine) -> our recipe. Two rows share a name, so the engine is part of the key.
CLUSTER_ROWS = {
    ("Nemotron-3-Nano-30B-A3B FP8 Round-Robin Aggregated", "vLLM"): "nemotron-3-nano-fp8-vllm-agg-rr",
    ("Nemotron-3-Nano-30B-A3B FP8 KV-Aware Aggregated", "vLLM"): "nemotron-3-nano-fp8-vllm-agg-kv",
    ("Llama-3.1-8B-Instruct", "vLLM"): "llama-3-1-8b-vllm-tp16-multinode",
    ("Qwen3-32B-FP8 Aggregated", "vLLM"): "qwen3-32b-fp8-vllm-agg",
    ("Qwen3-32B-FP8 Disaggregated (6P2D)", "vLLM"): "qwen3-32b-fp8-vllm-disagg-6p2d",
    ("Qwen3-32B-FP8 Disaggregated (4P4D)", "vLLM"): "qwen3-32b-fp8-vllm-disagg-4p4d",
    ("Qwen3-32B-FP8 KV-Aware Disaggregated", "vLLM"): "qwen3-32b-fp8-vllm-disagg-4p4d-kv",
    ("Qwen3-32B-FP8 KV-Aware + CPU KV Offload", "vLLM"): "qwen3-32b-fp8-vllm-disagg-4p4d-kv-offload",
    ("Qwen3-32B-FP8 Aggregated", "SGLang"): "qwen3-32b-fp8-sglang-agg",
    ("Qwen3-32B-FP8 Disaggregated", "SGLang"): "qwen3-32b-fp8-sglang-disagg-2p1d",
    ("Qwen3-32B-FP8 KV-Aware Disaggregated", "SGLang"): "qwen3-32b-fp8-sglang-disagg-6p2d-kv",
    ("Qwen3.6-35B-A3B FP8 Aggregated", "SGLang"): "qwen36-35b-a3b-fp8-sglang-agg-keda",
    ("Qwen3.6-35B-A3B FP8 Disaggregated", "SGLang"): "qwen36-35b-a3b-fp8-sglang-disagg-dpep-offload",
    ("Qwen3-235B-A22B FP8 Aggregated", "vLLM"): "qwen3-235b-a22b-fp8-vllm-agg",
    ("Qwen3-235B-A22B FP8 Disaggregated", "vLLM"): "qwen3-235b-a22b-fp8-vllm-disagg",
    ("Qwen3-235B-A22B FP8", "SGLang"): "qwen3-235b-a22b-fp8-sglang-agg",
    ("GLM-5.2-FP8", "vLLM"): "glm-5-2-fp8-vllm-tp16-multinode",
    ("DeepSeek-V4-Flash FP8", "SGLang"): "deepseek-v4-flash-fp8-sglang-agg",
}
ENGINES = {"vLLM": "vllm", "SGLang": "sglang"}


def _seed(prefix: str) -> str:
    if not has_shared():
        return ""  # no rows: the tests below are marked needs_shared and skip
    (path,) = (shared_dir() / "seeds").glob(f"{prefix}_*.txt")
    return path.read_text()


def cluster_rows() -> list[tuple[str, str, str, str]]:
    """(name, engine, status, GPUs) of the cluster report's deployment table."""
    rows = re.findall(r"^\| ([^|]+?) \| (vLLM|SGLang) \| (Working|Experimental) \| ([0-9–-]+) \|", _seed("000"), re.M)
    return rows


def lightning_rows() -> list[tuple[str, ...]]:
    """(engine/target, spec, routing, concurrency, TTFT p50, tok/s/GPU, tok/s/user) of the Expected Performance."""
    return re.findall(
        r"^(vllm|trtllm)/([a-z0-9-]+)/deploy\.yaml \|\n(\w+) \| ([^|]+?) \| (\d+) \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \|",
        _seed("004"),
        re.M,
    )


@needs_shared
def test_seed_tables_are_read_whole():
    assert len(cluster_rows()) == 18 and len(lightning_rows()) == 26


@needs_shared
@pytest.mark.parametrize("name, engine, status, gpus", cluster_rows())
def test_every_cluster_report_row_is_a_recipe(name, engine, status, gpus):
    r = load_recipe(CLUSTER_ROWS[(name, engine)])
    assert r.recipe.engine == ENGINES[engine]
    assert r.recipe.status == status.lower()
    low, _, high = gpus.replace("–", "-").partition("-")
    assert (r.gpu_count, r.gpu_capacity) == (int(low), int(high or low))


@needs_shared
@pytest.mark.parametrize("row", lightning_rows(), ids=lambda row: f"{row[0]}/{row[1]}")
def test_every_lightning_target_is_a_recipe_with_its_published_baseline(row):
    engine, target, spec, routing, conc, ttft, per_gpu, per_user = row
    r = load_recipe(f"lightning-{engine}-{target}")
    assert r.recipe.engine == engine
    assert r.recipe.gpu.type == target.split("-")[1].upper()
    assert (r.recipe.speculative.mode if r.recipe.speculative else "none") == spec.lower()
    assert (r.recipe.router == "kv") == (routing == "KV router")
    assert r.recipe.topology.mode == ("disagg" if routing == "1P1D" else "agg")
    b = r.recipe.baseline
    assert (
        b.concurrency,
        b.ttft_p50_ms,
        b.output_throughput_tok_s_per_gpu,
        b.output_throughput_p50_tok_s_per_user,
    ) == (int(conc), float(ttft), float(per_gpu), float(per_user))
    assert (
        r.recipe.slo.output_throughput_p50_tok_s_per_user == 50 and r.recipe.slo.ttft_p50_ms == 5000
    )  # the page's pass criteria


@pytest.mark.parametrize("path", all_recipe_paths(), ids=lambda p: p.stem)
def test_every_recipe_dgd_validates_in_both_api_versions(path):
    r = load_recipe(path)
    assert find_recipe(r.name) == path
    for api in ("v1beta1", "v1alpha1"):
        validate_dgd(render_dgd(r, api_version=api))
