"""Where a result's numbers come from: the `source` of every results row (and of run.json).

- `measured`: a real deployment on GPUs (any platform but local);
- `measured (local GPU: 1x NVIDIA H200, driver ..., vLLM 0.23.0, ai-dynamo 1.3.1, random weights)`: local
  mode's real engine workers (``--workers gpu``); MEASURED_ON_ENV carries the words in brackets;
- `simulated (fake GPU: 1 of 1x NVIDIA H200 (fake GPU) (INFERSWEEP_FAKE_GPU), vllm workers rendered as for a GPU
  and replaced by Dynamo's mocker, ...)`: local mode's `--workers gpu` path on fake GPUs (infersweep.local.gpu.fake_gpu):
  the GPU path's plan and records, the mocker's numbers; MEASURED_ON_ENV carries the words in brackets, starting
  with FAKE_GPU;
- `simulated (built-in timing)`: local mode's mocker with its own timing model: shapes and direction,
  not this GPU's numbers;
- `simulated (calibrated: AIConfigurator 0.12.0 h100_sxm vllm 0.24.0)`: local mode's mocker on a timing
  table from that database (infersweep.predict.local_timing), per worker role.

Whoever runs the steps on a simulator says so in their environment: SIMULATED_DEPLOYMENTS_ENV names the
folder holding one folder per simulated deployment, in which infersweep.predict.local_timing records the
timing each worker role ran with (timing.json). Local mode sets it (infersweep.local.dynamo.adapter.step_env: the
adapter owns where its deployments live); unset, the steps ran against a real deployment: measured.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

MEASURED = "measured"
BUILTIN = "simulated (built-in timing)"
CALIBRATED_PREFIX = "simulated (calibrated"
SIMULATED_DEPLOYMENTS_ENV = "INFERSWEEP_SIMULATED_DEPLOYMENTS"
MEASURED_ON_ENV = "INFERSWEEP_MEASURED_ON"  # what ran, when local mode's workers were real engines on GPUs
# JSON {engine_image, engine_release, engine_wheels, ...}: the engine that ran in place of the rendered image
# (local mode's real engine workers: infersweep.local.gpu.run.engine_ran; read by infersweep.results.context)
ENGINE_RAN_ENV = "INFERSWEEP_ENGINE_RAN"
FAKE_GPU = "fake GPU"  # MEASURED_ON_ENV's words start so under INFERSWEEP_FAKE_GPU: the source is then simulated
FAKE_GPU_PREFIX = f"simulated ({FAKE_GPU}"


def calibrated(database: str) -> str:
    return f"{CALIBRATED_PREFIX}: {database})"


def is_simulated(source: str | None) -> bool:
    return bool(source) and str(source).startswith("simulated")


def timing_entries(deployments_dir: Path) -> list[dict]:
    """Every role's timing record of every simulated deployment in `deployments_dir` (one folder each)."""
    # Here, not at the top: local mode's adapter imports this module for its variable name, and local_timing
    # loads PyYAML (step_env stays cheap).
    from infersweep.predict.local_timing import TIMING_FILE

    out = []
    for f in sorted(Path(deployments_dir).glob(f"*/{TIMING_FILE}")):
        try:
            out += list(json.loads(f.read_text()).values())
        except (OSError, ValueError):
            continue
    return out


def result_source(env: Mapping[str, str] | None = None) -> str:
    """The source of the results this process summarizes (see the module docstring)."""
    env = os.environ if env is None else env
    if SIMULATED_DEPLOYMENTS_ENV not in env:
        words = env.get(MEASURED_ON_ENV)
        if words and words.startswith(FAKE_GPU):  # the GPU path on fake GPUs: the mocker's numbers
            return f"simulated ({words})"
        return f"{MEASURED} ({words})" if words else MEASURED
    folder = env[SIMULATED_DEPLOYMENTS_ENV]
    entries = timing_entries(Path(folder)) if folder else []
    if entries and all(e.get("timing") == "calibrated" for e in entries):
        return calibrated("; ".join(sorted({e["database"] for e in entries})))
    return BUILTIN


def banner(source: str | None) -> str | None:
    """One line a report shows above a simulated run's numbers, or a locally measured run's GPU and stack;
    None for a cluster's measured ones."""
    if not is_simulated(source):
        if source and str(source).startswith(f"{MEASURED} ("):
            return f"Measured on real engines: {str(source)[len(MEASURED) + 2 : -1]}."
        return None
    if str(source).startswith(FAKE_GPU_PREFIX):
        return (
            f"Simulated run on a fake GPU: {source}. No GPU ran: the GPU path's plan and records are real, the "
            "numbers are Dynamo's mocker's (its own timing model), NOT a measurement of any GPU."
        )
    if str(source).startswith(CALIBRATED_PREFIX):
        return (
            f"Simulated run: {source}. Numbers are the mocker's, timed by that database for the recipe's GPU, "
            "engine and parallelism, on local mode's scaled-down workload and worker count."
        )
    return (
        f"Simulated run: {source}. The mocker's own timing model: shapes and direction only, not this GPU's "
        "numbers; GPU counts are local mode's."
    )


def source_class(source: str | None) -> str | None:
    """measured / built-in / calibrated / fake GPU (None: a run from before sources were recorded)."""
    if not source:
        return None
    if str(source).startswith(FAKE_GPU_PREFIX):
        return FAKE_GPU
    if str(source).startswith(CALIBRATED_PREFIX):
        return "calibrated"
    return "built-in" if is_simulated(source) else "measured"


def check_same_source(runs: dict[str, dict], *, allow_mix: bool, flag: str = "--mix-sources") -> None:
    """Refuse to set measured, built-in-simulated and calibrated-simulated runs against each other unless asked
    (`runs`: label -> run context). Calibrated runs of different databases compare (that is comparing GPUs or
    engines in simulation); runs recorded before `source` existed say nothing and are let through."""
    from infersweep.recipe import RecipeError

    classes = {label: source_class(ctx.get("source")) for label, ctx in runs.items()}
    known = {c for c in classes.values() if c}
    if len(known) > 1 and not allow_mix:
        detail = ", ".join(f"{label}: {runs[label].get('source')}" for label, c in classes.items() if c)
        raise RecipeError(
            f"these runs come from different sources ({detail}); a simulation is not a measurement, "
            f"so they are not compared; pass {flag} to compare them anyway"
        )
