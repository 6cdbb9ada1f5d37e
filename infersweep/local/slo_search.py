"""`infersweep slo-search RECIPE --local`: the knee of one local deployment.

One deployment (the recipe's DGD on Dynamo's frontend + mocker workers, or with `--workers gpu` real engine
workers on this machine's GPUs, as `infersweep run --local` starts it: infersweep.local.dynamo.deploy_local)
stays up while infersweep.slo_search.bisect chooses the loads; each probe is one real `steps.aiperf_point` run
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
from pathlib import Path
from typing import Any

from infersweep.aiperf import point_folder
from infersweep.aiperf.point import Point, round_warmup
from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.dynamo import deploy_local, load_local, teardown_local
from infersweep.local.reconfigure import DGD_FILE, wait_ready_restarting
from infersweep.local.run import local_profile, local_workload, scaled_lengths, simulated_gpus
from infersweep.paths import REPO_ROOT, venv_python
from infersweep.recipe import RecipeError, load_recipe
from infersweep.results.table import point_row
from infersweep.results.validity import load_thresholds
from infersweep.slo_search import Search, bisect
from infersweep.step_declarations import AIPERF_POINT
from workflows.pipeline import recipe_run


def slo_search_local(
    recipe_ref: str,
    *,
    out: Path,
    lo: float,
    hi: float,
    axis: str = "concurrency",
    slo: dict[str, float] | None = None,
    rel_tol: float = 0.1,
    log=print,
    workers: str = "mocker",
    weights: str = "dummy",
    gpu_python: str | None = None,
    engine_cache: Path | None = None,
    cache_root: Path = Path(".infersweep"),
) -> tuple[Search, list[dict[str, Any]]]:
    """`workers`: "mocker" (the recipe scaled down by params/local.yaml, as `run --local`) or "gpu": real
    engine workers on this machine's GPUs, as `run --local --workers gpu` starts them (infersweep.local.gpu_run):
    the recipe's own lengths and request counts, tokens counted by the server, the GPUs checked before
    anything starts, and the search's record saying which GPU and stack ran."""
    r = load_recipe(recipe_ref)
    slo = slo if slo is not None else {k: v for k, v in r.recipe.slo.model_dump().items() if v is not None}
    if not slo:
        raise RecipeError(f"{recipe_ref}: slo: the recipe states no SLO to search under; add slo: or give --slo")
    if workers not in ("mocker", "gpu"):
        raise RecipeError(f"--workers {workers!r}: choose mocker (simulated, the default) or gpu (real engines)")
    prof = local_profile()
    w = r.recipe.workload
    if w.trace is not None and w.trace.fixed_schedule:
        raise RecipeError(
            f"{recipe_ref}: workload.trace.fixed_schedule: a replay has one load; search a recipe "
            "whose load is concurrency or request_rate"
        )
    dgd, _ = recipe_run(r, load_cluster_settings())  # the DGD a run of the recipe deploys, as a dict
    out = Path(out).resolve()
    state_dir = out / "dgd" / dgd["metadata"]["name"]  # the layout the NVML sampler reads (<state>/dgd/<name>)
    gpu = None
    if workers == "gpu":
        from infersweep.local.gpu_run import check_fits, gpu_workers, model_folder

        # no GPU here: refused now
        gpu = gpu_workers(gpu_python, weights, engine_cache, Path(cache_root), gpu_type=r.recipe.gpu.type)
        model_dir = model_folder(r.model.id, weights, Path(cache_root).resolve())
        # The GPUs the workers take, checked before anything starts (a shortfall names what is missing).
        gpus = check_fits(dgd, list(gpu.gpus), python=gpu.python, model_dir=model_dir, weights=weights)
        workload = w.aiperf_workload() | {"server_token_count": True}  # random weights: count as the server does
        cap = max(w.concurrency)

        def point_of(conc: int, rate: float) -> Point:
            # the recipe's own request and warm-up counts for this one load (Workload.points, aiperf/point.py sweep)
            return w.model_copy(update={"concurrency": [conc], "request_rate": [rate] if rate else []}).points()[0]

        ready_timeout_s, point_timeout_s = 1800, 1200
    else:
        model_dir = out / "toy-model"
        gpus = simulated_gpus(r, prof)
        workload, _ = local_workload(r, prof, *scaled_lengths(r, prof))
        cap = prof["max_concurrency"]

        def point_of(conc: int, rate: float) -> Point:
            load = conc if not rate else rate
            requests = max(prof["min_requests"], int(load * prof["requests_per_concurrency"]) + 1)
            return Point(conc, requests, round_warmup(conc, prof["max_warmup"]), rate)

        ready_timeout_s, point_timeout_s = 120, 600
    state_dir.mkdir(parents=True, exist_ok=True)
    thresholds = load_thresholds("local")
    rows: list[dict[str, Any]] = []
    measured_on, step_env, sampler = "Dynamo mocker (simulated)", {}, None
    dep = deploy_local(
        dgd,
        model_dir=model_dir,
        state_dir=state_dir,
        max_workers_per_component=prof["max_workers_per_component"],
        gpu=gpu,
    )
    (state_dir / DGD_FILE).write_text(json.dumps(dgd))  # what a restart of this deployment starts again
    try:
        if gpu is not None:
            from infersweep.local.gpu_run import start_gpu_side, worker_modules
            from infersweep.predict.source import MEASURED_ON_ENV

            sampler, step_env = start_gpu_side(out, gpu, str(gpus), out, modules=worker_modules(dgd))
            measured_on = step_env[MEASURED_ON_ENV]
        ready = wait_ready_restarting(
            state_dir,
            ready_timeout_s,
            max_workers_per_component=prof["max_workers_per_component"],
            gpu=gpu,
            log=log,
        )
        log(f"deployed {dep.name} at {dep.frontend_url}; ready in {ready:.1f} s")
        dep = load_local(state_dir)  # a restart moves the frontend to another port

        def measure(load: float) -> tuple[bool | None, str]:
            # a rate's in-flight cap: the recipe's (highest) concurrency, within what this machine takes
            conc = int(load) if axis == "concurrency" else min(max(w.concurrency), cap)
            rate = 0.0 if axis == "concurrency" else float(load)
            p = point_of(conc, rate)
            point = out / "points" / f"c{conc}"
            # the step's options from its declaration (a renamed or new required option fails here, by name)
            argv = [
                venv_python("aiperf"),
                "-m",
                f"steps.{AIPERF_POINT.module}",
                *AIPERF_POINT.argv(
                    {
                        "url": dep.frontend_url,
                        "model": dep.model_name,
                        "tokenizer": str(model_dir),
                        "concurrency": str(conc),
                        "request_rate": f"{rate:g}",
                        "requests": str(p.requests),
                        "warmup": str(p.warmup),
                        "workload": json.dumps(workload),
                        "max_error_rate": str(w.max_error_rate),
                        "timeout_s": str(point_timeout_s),
                        "out": str(point),
                        "aiperf": str(Path(venv_python("aiperf")).parent / "aiperf"),
                    }
                ),
            ]
            t0 = time.monotonic()
            subprocess.run(
                argv,
                env={**os.environ, **step_env, "PYTHONPATH": str(REPO_ROOT)},
                cwd=REPO_ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            folder = point_folder(str(point), rate)  # where the step put it (c<N>-rate<R> for a rate)
            # Judged with the local validity profile, as `run --local` judges its points: an invalid point
            # has no SLO verdict (infersweep.results.evidence), and the search counts it as a miss.
            row = point_row(folder, gpus, slo, {"run_id": out.name, "recipe": r.name}, thresholds)
            rows.append(row)
            log(
                f"  {axis} {load:g}: {row['slo_detail']} (ttft p50 {row.get('ttft_p50_ms', float('nan')):.1f} ms, "
                f"{row.get('output_throughput_p50_tok_s_per_user', float('nan')):.1f} tok/s/user, {time.monotonic() - t0:.1f} s)"
            )
            return row["slo_pass"], row["slo_detail"]

        search = bisect(measure, lo, hi, axis=axis, rel_tol=rel_tol)
    finally:
        if sampler is not None:
            sampler.stop()
        teardown_local(state_dir)
    (out / "slo-search.json").write_text(
        json.dumps(
            {
                "recipe": r.name,
                "measured_on": measured_on,
                "axis": axis,
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
    return search, rows
