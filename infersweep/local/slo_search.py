"""`infersweep slo-search RECIPE --local`: the knee of one local deployment.

One deployment (the recipe's DGD on Dynamo's frontend + mocker workers, as `infersweep run --local` starts
it: infersweep.local.dynamo.deploy_local) stays up while infersweep.slo_search.bisect chooses the loads; each
probe is one real `steps.aiperf_point` run (the step the pipeline runs) in OUT/points/, judged by the
results table's own SLO check (infersweep.results.table.point_row). The deployment is torn down at the end,
whatever happens.

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

import yaml

from infersweep.aiperf import point_folder
from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.dynamo import deploy_local, teardown_local, wait_ready_local
from infersweep.local.run import local_profile, local_workload, scaled_lengths, simulated_gpus
from infersweep.paths import REPO_ROOT, venv_python
from infersweep.recipe import RecipeError, load_recipe
from infersweep.results.table import point_row
from infersweep.results.validity import load_thresholds
from infersweep.slo_search import Search, bisect
from infersweep.step_declarations import AIPERF_POINT
from workflows.pipeline import recipe_arguments


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
) -> tuple[Search, list[dict[str, Any]]]:
    r = load_recipe(recipe_ref)
    slo = slo if slo is not None else {k: v for k, v in r.recipe.slo.model_dump().items() if v is not None}
    if not slo:
        raise RecipeError(f"{recipe_ref}: slo: the recipe states no SLO to search under; add slo: or give --slo")
    prof = local_profile()
    w = r.recipe.workload
    workload, _ = local_workload(r, prof, *scaled_lengths(r, prof))
    if workload.get("fixed_schedule"):
        raise RecipeError(
            f"{recipe_ref}: workload.trace.fixed_schedule: a replay has one load; search a recipe "
            "whose load is concurrency or request_rate"
        )
    dgd = yaml.safe_load(recipe_arguments(r, load_cluster_settings())["dgd"])
    out = Path(out).resolve()
    state_dir, model_dir = out / "deployment", out / "toy-model"
    state_dir.mkdir(parents=True, exist_ok=True)
    gpus = simulated_gpus(r, prof)
    thresholds = load_thresholds("local")
    rows: list[dict[str, Any]] = []
    dep = deploy_local(
        dgd, model_dir=model_dir, state_dir=state_dir, max_workers_per_component=prof["max_workers_per_component"]
    )
    try:
        log(f"deployed {dep.name} at {dep.frontend_url}; ready in {wait_ready_local(state_dir, 120):.1f} s")

        def measure(load: float) -> tuple[bool | None, str]:
            # a rate's in-flight cap: the recipe's (highest) concurrency, within what this machine takes
            conc = int(load) if axis == "concurrency" else min(max(w.concurrency), prof["max_concurrency"])
            rate = 0.0 if axis == "concurrency" else float(load)
            requests = max(prof["min_requests"], int(load * prof["requests_per_concurrency"]) + 1)
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
                        "requests": str(requests),
                        "warmup": str(min(prof["max_warmup"], conc)),
                        "workload": json.dumps(workload),
                        "max_error_rate": str(w.max_error_rate),
                        "timeout_s": "600",
                        "out": str(point),
                        "aiperf": str(Path(venv_python("aiperf")).parent / "aiperf"),
                    }
                ),
            ]
            t0 = time.monotonic()
            subprocess.run(
                argv,
                env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
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
        teardown_local(state_dir)
    (out / "slo-search.json").write_text(
        json.dumps(
            {
                "recipe": r.name,
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
