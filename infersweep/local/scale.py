"""The scale phase: a recipe's sweep, lengths, workload and workers cut to this machine (params/local.yaml,
infersweep.local.profile.LocalProfile), as `run --local`, `experiment run --local` and `slo-search --local`
all cut it on the mocker. On real GPUs (`--workers gpu`) nothing is scaled: the recipe runs as written.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any

from infersweep.aiperf.point import Point, points_text, repeated, round_warmup, sweep
from infersweep.local.dynamo.adapter import platform_env
from infersweep.local.profile import LocalProfile
from infersweep.recipe import ResolvedRecipe
from infersweep.recipe.models import Workload
from infersweep.validity_thresholds import step_steadiness

if TYPE_CHECKING:
    from infersweep.local.gpu.workers import GpuWorkers


def scaled_points(r: ResolvedRecipe, prof: LocalProfile) -> list[Point]:
    """The recipe's sweep, cut to this machine: its lowest levels up to max_concurrency, at most max_points.
    A rate sweep keeps its rates (the lowest max_points) under a cap of at most max_concurrency. The same
    formula as the recipe's (aiperf/point.py sweep) with params/local.yaml's numbers."""
    w = r.recipe.workload
    if w.request_rate:
        levels, rates = [min(w.concurrency[0], prof.max_concurrency)], sorted(w.request_rate)[: prof.max_points]
    else:
        levels = [c for c in w.concurrency if c <= prof.max_concurrency] or [min(w.concurrency)]
        levels, rates = levels[: prof.max_points], []
    return sweep(
        levels,
        rates,
        requests_per_concurrency=prof.requests_per_concurrency,
        min_requests=prof.min_requests,
        warmup=lambda c: round_warmup(c, prof.max_warmup, prof.warmup_rounds),
    )


def scaled_point(prof: LocalProfile, concurrency: int, rate: float) -> Point:
    """One load's point cut to this machine (slo-search's probes), by the formula of scaled_points."""
    load = concurrency if not rate else rate
    requests = max(prof.min_requests, int(load * prof.requests_per_concurrency) + 1)
    return Point(concurrency, requests, round_warmup(concurrency, prof.max_warmup, prof.warmup_rounds), rate)


def local_repetitions(r: ResolvedRecipe, workers: str) -> int:
    """How often each point runs here: the recipe's `regression.repetitions` (default 3, `--set
    regression.repetitions=N`) on real GPUs, whose numbers are results; on the mocker 1 unless the recipe or
    a --set names it (a simulated point is a check of the pipeline, not a result: the table says n=1)."""
    reg = r.recipe.regression
    return reg.repetitions if workers == "gpu" or "repetitions" in reg.model_fields_set else 1


def run_points(r: ResolvedRecipe, prof: LocalProfile, workers: str, isl: int, osl: int) -> list[Point]:
    """The points `run --local` measures, each repetition (local_repetitions) in interleaved rounds
    (infersweep.aiperf.point.repeated): on real GPUs the recipe's own sweep, as a submit renders it
    (workflows/pipeline.py recipe_points); on the mocker the sweep scaled to this machine (local_workload)."""
    points = r.recipe.workload.points() if workers == "gpu" else local_workload(r, prof, isl, osl)[1]
    return repeated(points, local_repetitions(r, workers))


def local_workload(r: ResolvedRecipe, prof: LocalProfile, isl: int, osl: int) -> tuple[dict[str, Any], list[Point]]:
    """(workload, points) local mode runs. A trace on this machine whose prompts fit max_isl replays for real
    (steps.aiperf_point hands AIPerf the local tokenizer so its hash_ids replay works offline); with
    fixed_schedule it is one point at the trace's own timestamps, every line of it. Any other trace (a
    download, or prompts longer than this machine takes) and a mix run as their scaled average lengths."""
    w = r.recipe.workload
    t = w.trace
    f = t.local_file() if t else None
    if f is not None and f.is_file():
        rows = [json.loads(line) for line in f.read_text(encoding="utf-8").splitlines() if line.strip()]
        if rows and max(int(x.get("input_length", 0)) for x in rows) <= prof.max_isl:
            workload = w.aiperf_workload() | {"trace": str(f.resolve())}
            if t.fixed_schedule:
                cap = min(w.concurrency[0], prof.max_concurrency)
                return workload, [Point(concurrency=cap, requests=len(rows), warmup=0)]
            return workload, scaled_points(r, prof)
    return scaled_workload(r, prof, (isl, osl)), scaled_points(r, prof)


def scaled_lengths(r: ResolvedRecipe, prof: LocalProfile) -> tuple[int, int]:
    # Keep the ISL:OSL ratio when both must shrink, so a prefill-heavy recipe stays prefill-heavy.
    w = r.recipe.workload
    scale = min(1.0, prof.max_isl / w.isl, prof.max_osl / w.osl)
    return max(8, int(w.isl * scale)), max(4, int(w.osl * scale))


def scaled_workload(r: ResolvedRecipe, prof: LocalProfile, lengths: tuple[int, int] | None = None) -> dict[str, Any]:
    """The workload a local point runs: scaled lengths (a trace or mix as its scaled averages), and a
    multi-turn session's think time cut to max_turn_delay_ms (the pauses shape the cluster's cache reuse
    over minutes; here they would only make a point wait: 24 requests at 1.5 s took 100 s)."""
    w = r.recipe.workload.synthetic_workload(*(lengths or scaled_lengths(r, prof)))
    if "turn_delay_ms" in w and prof.max_turn_delay_ms is not None:
        w["turn_delay_ms"] = min(w["turn_delay_ms"], prof.max_turn_delay_ms)
    return w


def simulated_gpus(r: ResolvedRecipe, prof: LocalProfile) -> int:
    """GPUs the local stand-in represents: each mocker worker plays one replica of TP GPUs."""
    return sum(
        min(w.replicas * w.nodes, prof.max_workers_per_component) * w.gpus_per_replica // w.nodes
        for w in r.recipe.topology.roles().values()
    )


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def step_steadiness_here(w: Workload, gpu: GpuWorkers | None) -> dict[str, float]:
    """The steadiness thresholds a point step of `w` is given (infersweep.validity_thresholds.step_steadiness; only
    with a budget): the validity profile local mode's steps select, on the mocker (gpu None) or on `gpu`."""
    return step_steadiness(w.length(), env=os.environ | platform_env(gpu))


def scaled_arguments(r: ResolvedRecipe, prof: LocalProfile) -> dict[str, str]:
    """The workflow arguments of one recipe scaled to this machine: its points, workload and GPU count."""
    return {
        "points": points_text(scaled_points(r, prof)),
        "workload": compact_json(scaled_workload(r, prof) | step_steadiness_here(r.recipe.workload, None)),
        "gpu-count": str(simulated_gpus(r, prof)),
    }


def unscaled_arguments(
    r: ResolvedRecipe, gpu_count: int | str | None = None, gpu: GpuWorkers | None = None
) -> dict[str, str]:
    """Real engines (`gpu`) take a recipe as it is: its own sweep and lengths, tokens counted by the server (random
    weights emit ids a client tokenizer miscounts)."""
    w = r.recipe.workload
    args = {"workload": compact_json(w.aiperf_workload() | {"server_token_count": True} | step_steadiness_here(w, gpu))}
    return args | ({"gpu-count": str(gpu_count)} if gpu_count is not None else {})
