"""Where an engine worker's time to ready went, read from its own log lines (vLLM 0.23.0, SGLang 0.5.14).

vLLM 0.23.0:

- weights: "Loading weights took %.2f seconds" (model_executor/model_loader/default_loader.py; with
  --load-format dummy the dummy loader logs none, and weights are in model loading)
- model loading: "Model loading took %s GiB memory and %.6f seconds" (v1/worker/gpu_model_runner.py
  load_model): weights + building the module
- torch.compile: the "(compilation: %.2f s)" of "init engine (profile, create kv cache, warmup model) took
  %.2f s" (v1/engine/core.py _initialize_kv_caches), and "Directly load the compiled graph(s)" when the
  compile cache was hit (compilation/backends.py)
- CUDA graph capture: "Graph capturing finished in %.0f secs, took %.2f GiB" (gpu_model_runner.py capture_model)
- KV cache: "GPU KV cache size: %s tokens" (v1/core/kv_cache_utils.py)
Import and process start-up are what remains of the wall time from spawn to the "init engine" line's end.

SGLang 0.5.14 (sglang/srt/model_executor/model_runner.py, mem_cache/memory_pool.py):
- model loading: "Load weight end. elapsed=%.2f s" (ModelRunner.load_model, timed from its start)
- CUDA graph capture: "Capture target prefill CUDA graph end. elapsed=%.2f s" (init_prefill_cuda_graph: the
  tc_piecewise prefill graphs, one per token count of --cuda-graph-bs-prefill) plus "Capture target decode CUDA
  graph end. elapsed=%.2f s" (init_decode_cuda_graph), each also kept on its own
- KV cache: "KV Cache is allocated. dtype: ..., #tokens: %d" (memory_pool.py)
SGLang logs no "init engine" span and runs no torch.compile by default (--enable-torch-compile off), so compile
and "other engine init" stay empty and the rest of the wall time (import, scheduler start, memory profiling,
registration) is import_and_registration_s.
"""

from __future__ import annotations

import re
from typing import Any

PATTERNS = {
    "weights_s": re.compile(r"Loading weights took ([\d.]+) seconds"),
    "model_loading_s": re.compile(r"Model loading took [\d.]+ GiB(?: memory)? and ([\d.]+) seconds"),
    "init_engine_s": re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"),
    "compile_s": re.compile(r"init engine .*?\(compilation: ([\d.]+) s"),
    "graph_capture_s": re.compile(r"Graph capturing finished in ([\d.]+) secs"),
    "kv_cache_tokens": re.compile(r"GPU KV cache size: ([\d,]+) tokens"),
}
CACHE_HIT = re.compile(r"Directly load the compiled graph")
SGLANG_PATTERNS = {
    "model_loading_s": re.compile(r"Load weight end\. elapsed=([\d.]+) s"),
    "prefill_graph_capture_s": re.compile(r"Capture target prefill CUDA graph end\. elapsed=([\d.]+) s"),
    "decode_graph_capture_s": re.compile(r"Capture target decode CUDA graph end\. elapsed=([\d.]+) s"),
    "kv_cache_tokens": re.compile(r"KV Cache is allocated\. .*?#tokens: (\d+)"),
}


def parse_startup(log: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, pat in PATTERNS.items():
        m = pat.search(log)
        if m:
            out[key] = float(m.group(1).replace(",", ""))
    out["compile_cache_hit"] = bool(CACHE_HIT.search(log))
    if "init_engine_s" not in out:  # not vLLM's log: SGLang's lines, where present
        for key, pat in SGLANG_PATTERNS.items():
            m = pat.search(log)
            if m:
                out[key] = float(m.group(1))
        graphs = [out[k] for k in ("prefill_graph_capture_s", "decode_graph_capture_s") if k in out]
        if graphs:
            out["graph_capture_s"] = sum(graphs)
    return out


def split_ready(phases: dict[str, Any], ready_s: float | None) -> dict[str, float | None]:
    """ready_s (spawn to serving) split into import/start-up, model loading, compile, graph capture, other
    engine init (profiling, KV cache allocation, warm-up) and registration (what is left after the engine)."""
    load, init = phases.get("model_loading_s"), phases.get("init_engine_s")
    comp, graphs = phases.get("compile_s") or 0.0, phases.get("graph_capture_s") or 0.0
    # The engine's own timed span after loading: vLLM's "init engine" line, or (SGLang, which logs none) its
    # graph captures alone (see the module docstring).
    engine = init if init is not None else phases.get("graph_capture_s")
    out = {
        "ready_s": ready_s,
        "model_loading_s": load,
        "compile_s": comp if init is not None else None,
        "graph_capture_s": graphs if engine is not None else None,
        "other_engine_init_s": (init - comp - graphs) if init is not None else None,
    }
    if ready_s is not None and load is not None and engine is not None:
        out["import_and_registration_s"] = ready_s - load - engine
    return out
