"""`infersweep slo-search RECIPE --local`: the knee of one local deployment.

One deployment (the recipe's DGD on Dynamo's frontend + mocker workers, or with `--workers gpu` real engine
workers on this machine's GPUs, as `infersweep run --local` starts it: infersweep.local.dynamo.deploy.deploy_local)
stays up while infersweep.slo_bisect.bisect chooses the loads; each probe is one real `steps.aiperf_point` run
(the step the pipeline runs) in OUT/points/, judged by the results table's own SLO check
(infersweep.results.table.point_row). The deployment is torn down at the end, whatever happens.

On a cluster the same search maps to one Argo Workflow whose sweep is driven by the search instead of a
list: deploy + wait-ready once, then a loop of aiperf-point steps whose next load depends on the last
verdict. Argo expresses that as a recursive template (a step that calls its own template with the next
load while the bracket is wider than the tolerance); it is not rendered yet, see the report of issue 12.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from infersweep.aiperf import point_folder
from infersweep.aiperf.point import Point
from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.dynamo.deploy import deploy_local
from infersweep.local.dynamo.deployment import LocalDeployment, WorkerStart, load_local, teardown_local
from infersweep.local.dynamo.reconfigure import DGD_FILE, wait_ready_restarting
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.phases import gpu_side
from infersweep.local.profile import LocalProfile, load_local_profile
from infersweep.local.scale import (
    local_workload,
    scaled_lengths,
    scaled_point,
    simulated_gpus,
    step_steadiness_here,
)
from infersweep.local.workers import LocalWorkers
from infersweep.paths import REPO_ROOT, venv_python
from infersweep.recipe import RecipeError, ResolvedRecipe, load_recipe
from infersweep.results.table import point_row
from infersweep.results.validity import load_thresholds
from infersweep.slo_bisect import Search, bisect
from infersweep.step_declarations import AIPERF_POINT
from workflows.pipeline import recipe_run

MOCKER = "Dynamo mocker (simulated)"  # what the record says ran, without GPUs


@dataclass
class SloSearchOptions:
    """How `slo-search --local` searches (slo_search_local's keyword arguments): the bracket [lo, hi] on `axis`,
    the SLO (default: the recipe's), the relative tolerance, where it writes and logs, what workers it starts."""

    out: Path
    lo: float
    hi: float
    axis: str = "concurrency"
    slo: dict[str, float] | None = None
    rel_tol: float = 0.1
    log: Callable[[str], None] = print
    cache_root: Path = Path(".infersweep")
    workers: LocalWorkers = field(default_factory=LocalWorkers)


@dataclass
class ProbeSide:
    """What each probe runs on and how it is cut: mocker workers on the toy model, scaled by params/local.yaml;
    or real engine workers on this machine's GPUs, the recipe's own lengths and request counts."""

    model_dir: Path
    gpus: int  # the GPUs a row's per-GPU figures count
    workload: dict[str, Any]
    cap: int  # a rate probe's in-flight cap, within what this machine takes
    point_of: Callable[[int, float], Point]
    ready_timeout_s: int = 120
    point_timeout_s: int = 600
    gpu: GpuWorkers | None = None


def _probe_side(r: ResolvedRecipe, o: SloSearchOptions, prof: LocalProfile, dgd: dict, out: Path) -> ProbeSide:
    w = r.recipe.workload
    if not o.workers.gpu:
        workload, _ = local_workload(r, prof, *scaled_lengths(r, prof))
        # with a budget the probe's step extends its window until steady, by the profile summarize will judge with
        return ProbeSide(
            out / "toy-model",
            simulated_gpus(r, prof),
            workload | step_steadiness_here(w, None),
            prof.max_concurrency,
            lambda c, rate: scaled_point(prof, c, rate),
        )
    from infersweep.local.dynamo.gpu_fit import check_fits
    from infersweep.local.dynamo.toy_model import model_folder

    # no GPU here: refused now
    gpu = o.workers.start_settings(Path(o.cache_root), gpu_type=r.recipe.gpu.type)
    model_dir = model_folder(r.model.id, gpu.weights, Path(o.cache_root).resolve())
    # The GPUs the workers take, checked before anything starts (a shortfall names what is missing).
    gpus = check_fits(dgd, list(gpu.gpus), python=gpu.python, model_dir=model_dir, weights=gpu.weights)

    def point_of(conc: int, rate: float) -> Point:
        # the recipe's own request and warm-up counts for this one load (Workload.points, aiperf/point.py sweep)
        return w.model_copy(update={"concurrency": [conc], "request_rate": [rate] if rate else []}).points()[0]

    # random weights: count as the server does; with a budget, the steadiness thresholds of local-gpu
    workload = w.aiperf_workload() | {"server_token_count": True} | step_steadiness_here(w, gpu)
    return ProbeSide(model_dir, gpus, workload, max(w.concurrency), point_of, 1800, 1200, gpu)


@dataclass
class _Prober:
    """One probe: a real `steps.aiperf_point` run against the deployment, judged by the results table's own SLO
    check with the local validity profile, as `run --local` judges its points (an invalid point has no SLO
    verdict, infersweep.results.evidence, and the search counts it as a miss)."""

    recipe: ResolvedRecipe
    options: SloSearchOptions
    side: ProbeSide
    deployment: LocalDeployment
    slo: dict[str, float]
    step_env: dict[str, str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    thresholds: dict[str, Any] = field(default_factory=lambda: load_thresholds("local"))

    def argv(self, conc: int, rate: float, point: Path) -> list[str]:
        """The step's options from its declaration (a renamed or new required option fails here, by name)."""
        p, dep, side = self.side.point_of(conc, rate), self.deployment, self.side
        return [
            venv_python("aiperf"),
            "-m",
            f"steps.{AIPERF_POINT.module}",
            *AIPERF_POINT.argv(
                {
                    "url": dep.frontend_url,
                    "model": dep.model_name,
                    "tokenizer": str(side.model_dir),
                    "concurrency": str(conc),
                    "request_rate": f"{rate:g}",
                    "requests": str(p.requests),
                    "warmup": str(p.warmup),
                    "workload": json.dumps(side.workload),
                    "max_error_rate": str(self.recipe.recipe.workload.max_error_rate),
                    "timeout_s": str(side.point_timeout_s),
                    "out": str(point),
                    "aiperf": str(Path(venv_python("aiperf")).parent / "aiperf"),
                }
            ),
        ]

    def measure(self, load: float) -> tuple[bool | None, str]:
        o, w = self.options, self.recipe.recipe.workload
        # a rate's in-flight cap: the recipe's (highest) concurrency, within what this machine takes
        conc = int(load) if o.axis == "concurrency" else min(max(w.concurrency), self.side.cap)
        rate = 0.0 if o.axis == "concurrency" else float(load)
        out = Path(o.out).resolve()
        point = out / "points" / f"c{conc}"
        t0 = time.monotonic()
        subprocess.run(
            self.argv(conc, rate, point),
            env={**os.environ, **self.step_env, "PYTHONPATH": str(REPO_ROOT)},
            cwd=REPO_ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        folder = point_folder(str(point), rate)  # where the step put it (c<N>-rate<R> for a rate)
        run = {"run_id": out.name, "recipe": self.recipe.name}
        row = point_row(folder, self.side.gpus, self.slo, run, self.thresholds)
        self.rows.append(row)
        o.log(
            f"  {o.axis} {load:g}: {row['slo_detail']} (ttft p50 {row.get('ttft_p50_ms', float('nan')):.1f} ms, "
            f"{row.get('output_throughput_p50_tok_s_per_user', float('nan')):.1f} tok/s/user, {time.monotonic() - t0:.1f} s)"
        )
        return row["slo_pass"], row["slo_detail"]


def _write_record(out: Path, r: ResolvedRecipe, o: SloSearchOptions, slo: dict, measured_on: str, search: Search):
    (out / "slo-search.json").write_text(
        json.dumps(
            {
                "recipe": r.name,
                "measured_on": measured_on,
                "axis": o.axis,
                "slo": slo,
                "best": search.best,
                "first_miss": search.first_miss,
                "summary": search.summary(),
                "probes": [p.__dict__ for p in search.probes],
            },
            indent=1,
        )
        + "\n"
    )


def slo_search_local(
    recipe_ref: str, options: SloSearchOptions | None = None, **fields: Any
) -> tuple[Search, list[dict[str, Any]]]:
    """`fields`: SloSearchOptions's, and `workers`/`weights`/`gpu_python`/`engine_cache`: "mocker" (the recipe
    scaled down by params/local.yaml, as `run --local`) or "gpu": real engine workers on this machine's GPUs, as
    `run --local --workers gpu` starts them (infersweep.local.gpu.run): the recipe's own lengths and request
    counts, tokens counted by the server, the GPUs checked before anything starts, and the search's record
    saying which GPU and stack ran."""
    o = options or SloSearchOptions(workers=LocalWorkers.take(fields), **fields)
    r = load_recipe(recipe_ref)
    slo = o.slo if o.slo is not None else {k: v for k, v in r.recipe.slo.model_dump().items() if v is not None}
    if not slo:
        raise RecipeError(f"{recipe_ref}: slo: the recipe states no SLO to search under; add slo: or give --slo")
    prof = load_local_profile()
    w = r.recipe.workload
    if w.trace is not None and w.trace.fixed_schedule:
        raise RecipeError(
            f"{recipe_ref}: workload.trace.fixed_schedule: a replay has one load; search a recipe "
            "whose load is concurrency or request_rate"
        )
    dgd, _ = recipe_run(r, load_cluster_settings())  # the DGD a run of the recipe deploys, as a dict
    out = Path(o.out).resolve()
    state_dir = out / "dgd" / dgd["metadata"]["name"]  # the layout the NVML sampler reads (<state>/dgd/<name>)
    side = _probe_side(r, o, prof, dgd, out)
    state_dir.mkdir(parents=True, exist_ok=True)
    workers = prof.max_workers_per_component
    dep = deploy_local(
        dgd, model_dir=side.model_dir, state_dir=state_dir, max_workers_per_component=workers, gpu=side.gpu
    )
    (state_dir / DGD_FILE).write_text(json.dumps(dgd))  # what a restart of this deployment starts again
    try:
        stack = {"modules": _worker_modules(dgd)} if side.gpu is not None else {}
        with gpu_side(out, side.gpu, str(side.gpus), out, **stack) as step_env:
            from infersweep.predict.source import MEASURED_ON_ENV

            start = WorkerStart(workers, gpu=side.gpu)
            ready = wait_ready_restarting(state_dir, side.ready_timeout_s, start=start, log=o.log)
            o.log(f"deployed {dep.name} at {dep.frontend_url}; ready in {ready:.1f} s")
            dep = load_local(state_dir)  # a restart moves the frontend to another port
            prober = _Prober(r, o, side, dep, slo, step_env)
            search = bisect(prober.measure, o.lo, o.hi, axis=o.axis, rel_tol=o.rel_tol)
    finally:
        teardown_local(state_dir)
    _write_record(out, r, o, slo, step_env.get(MEASURED_ON_ENV, MOCKER), search)
    return search, prober.rows


def _worker_modules(dgd: dict) -> set[str]:
    from infersweep.local.dynamo.gpu_fit import worker_modules

    return worker_modules(dgd)
