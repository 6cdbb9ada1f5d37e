"""A DGD's real engine workers against the GPUs here, before any service or process starts: the process plan
(infersweep.local.gpu.workers) of its components, and the engine modules they run.
"""

from __future__ import annotations

from pathlib import Path

from infersweep.local.dynamo.dgd_reader import read_components, served_model_name
from infersweep.local.gpu.workers import EngineLaunch, Gpu, engine_pythons, plan_workers


def check_fits(dgd: dict, gpus: list[Gpu], *, python: str, model_dir: Path, weights: str) -> int:
    """GPUs the DGD's workers take here (raises GpuShortfall before anything starts)."""
    plan = plan_workers(
        read_components(dgd),
        gpus,
        EngineLaunch(python=python, model_dir=str(model_dir), weights=weights, pythons=engine_pythons()),
        base_env={},
        free_port=lambda: 0,
        served_name_of=served_model_name,
    )
    return len({g for w in plan for g in w.gpus})


def worker_modules(dgd: dict) -> set[str]:
    """The engine modules the DGD's workers run (dynamo.vllm, dynamo.sglang)."""
    return {c.module for c in read_components(dgd) if c.role != "frontend" and c.module}
