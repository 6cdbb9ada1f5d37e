"""`infersweep experiment run --local FILE`: render the experiment's one Workflow (workflows/experiment.py)
exactly as for a cluster, scaled down by params/local.yaml like `run --local`, and run it here with the
local Argo executor (infersweep/local/argo/): the step templates run in their venvs, the workdir and the
model cache are folders, S3 is a real local server, and the DGD is a Dynamo frontend + mocker workers whose
re-applies follow the operator's semantics (infersweep.local.adapter.LocalPlatform.apply_dgd ->
infersweep.local.reconfigure.apply_local: a router change swaps only the frontend).

`resume`: the folder of an earlier `experiment run --local`. Treatments whose archived folder holds a
results table are kept as they are; a new Workflow `<run>-rN` runs the others (its plan recomputed over
them, so its first one is a fresh deploy) on the same workdir, and its comparison step reports on all.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

import yaml

from infersweep.aiperf.point import points_text
from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import KEEPS_WORKERS, Plan, Step, make_plan
from infersweep.experiment.restart import RestartClass, Transition, classify
from infersweep.experiment.spec import load_experiment
from infersweep.local import procs
from infersweep.local.adapter import step_env
from infersweep.local.argo import LocalArgo, Node
from infersweep.local.executor import ARTIFACT_BUCKET, execute, failed_step_lines
from infersweep.local.run import local_profile, scaled_points, scaled_workload, simulated_gpus
from infersweep.local.standins.s3server import LocalS3
from infersweep.local.toolchain import check_before_deploying
from infersweep.local.toy_model import build_toy_model
from infersweep.names import dns_label
from infersweep.paths import venv_python
from infersweep.recipe import RecipeError, ResolvedRecipe
from infersweep.schemas import validate_document
from workflows.render import library_templates

TREATMENTS = Path("volumes") / "workdir" / "treatments"  # workflows.experiment.TREATMENTS_DIR, in a run folder
SPEC_PATH = "experiment-path"  # the experiment file this run folder is of
REPORT = Path("volumes") / "workdir" / "run" / "experiment-report.json"


@dataclass
class LocalExperimentRun:
    run_id: str
    run_dir: Path
    phase: str
    plan: Plan  # what this run ran (on a resume: only the unfinished treatments)
    kept: list[str]  # treatments finished by an earlier attempt and not run again
    report: dict[str, Any] | None  # experiment-report.json of the comparison step
    root: Node
    seconds: float
    message: str = ""
    failed_steps: list[str] = field(default_factory=list)  # as LocalRun's (infersweep/local/run.py)
    store: Path | None = None  # the treatments as published, kept on disk (infersweep.local.disk_store)

    @property
    def report_text(self) -> str:
        f = self.run_dir / REPORT.with_suffix(".md")
        return f.read_text() if f.is_file() else ""


def finished_treatments(run_dir: Path) -> list[str]:
    """Treatments an earlier attempt archived with a results table holding a measured point. A treatment
    whose deploy or readiness failed still gets a summary (an empty table): it is not finished, as the
    report counts it missing (infersweep.experiment.report.experiment_report)."""
    import pandas as pd

    from infersweep.results.table import OK_STATUSES

    d = run_dir / TREATMENTS
    done = []
    for p in sorted(d.iterdir()) if d.is_dir() else []:
        table = p / "summary" / "results.parquet"
        if table.is_file():
            df = pd.read_parquet(table)
            if "status" in df.columns and df["status"].isin(OK_STATUSES).any():
                done.append(p.name)
    return done


def _replan(plan: Plan, keep: set[str]) -> Plan:
    """The plan's steps without the kept treatment runs, each keeping its block, pass and base; transitions
    and cache states recomputed (the first is a fresh deploy; a kept worker's cache is reset or inherited as
    the experiment says: infersweep.experiment.plan.make_plan)."""
    left = [s for s in plan.steps if s.treatment.name not in keep]
    reset = plan.experiment.spec.kv_cache == "reset"
    steps = []
    for i, s in enumerate(left):
        tr = Transition(RestartClass.FULL, ()) if i == 0 else classify(left[i - 1].treatment.recipe, s.treatment.recipe)
        if i == 0 or tr.cls not in KEEPS_WORKERS:
            cache = "fresh"
        else:
            cache = "reset" if reset else f"warm after {left[i - 1].treatment.name}"
        steps.append(Step(s.treatment, tr, cache, s.order_pass, s.base, s.block))
    return Plan(plan.experiment, steps)


def _scaled(prof: dict[str, Any]) -> Callable[[ResolvedRecipe], dict[str, str]]:
    def args(r: ResolvedRecipe) -> dict[str, str]:
        return {
            "points": points_text(scaled_points(r, prof)),
            "workload": json.dumps(scaled_workload(r, prof), separators=(",", ":")),
            "gpu-count": str(simulated_gpus(r, prof)),
        }

    return args


def experiment_scale_note(plan: Plan, prof: dict[str, Any]) -> list[str]:
    """What local mode changed in each treatment (infersweep.local.scale_note), said before the run: the claim
    is about the recipes as written, the numbers are about these copies."""
    from infersweep.local.scale_note import scale_note

    lines: list[str] = []
    for s in plan.steps:
        r = s.treatment.recipe
        note = scale_note(r, prof, scaled_workload(r, prof), scaled_points(r, prof), prof["max_workers_per_component"])
        lines += [f"treatment {s.treatment.name}: {note[0]}", *note[1:]]
    return lines


def run_experiment_local(
    ref: str | Path | None,
    *,
    out_root: Path = Path("runs"),
    cache_root: Path = Path(".infersweep"),
    resume: Path | None = None,
    dgd_api: str = "v1beta1",
    on_event: Callable[[str, Node], None] | None = None,
    on_started: Callable[[LocalArgo], None] | None = None,
    workers: str = "mocker",
    weights: str = "dummy",
    gpu_python: str | None = None,
    engine_cache: Path | None = None,
) -> LocalExperimentRun:
    """`workers`/`weights`/`gpu_python`/`engine_cache`: as for `run --local` (infersweep.local.run.run_local):
    with "gpu" the treatments run on real engine workers on this machine's GPUs, unscaled."""
    t_start = time.monotonic()
    kept: list[str] = []
    rendered = "rendered"
    if resume is not None:
        run_dir = Path(resume).resolve()
        first = run_dir / "rendered" / "workflow.yaml"
        if not first.is_file():
            raise RecipeError(
                f"--resume {resume}: not the folder of an `infersweep experiment run --local` run "
                "(no rendered/workflow.yaml); give runs/<run-id>"
            )
        labels = (yaml.safe_load(first.read_text()).get("metadata") or {}).get("labels") or {}
        recorded = run_dir / SPEC_PATH
        e = load_experiment(
            ref or (recorded.read_text().strip() if recorded.is_file() else labels.get("infersweep.io/experiment", ""))
        )
        if labels.get("infersweep.io/experiment") != e.name:
            raise RecipeError(
                f"--resume {resume}: that run is of experiment "
                f"{labels.get('infersweep.io/experiment')!r}, not {e.name!r}"
            )
        kept = [n for n in finished_treatments(run_dir) if n in {s.treatment.name for s in make_plan(e).steps}]
        plan = _replan(make_plan(e), set(kept))
        if not plan.steps:
            raise RecipeError(
                f"--resume {resume}: every treatment already has results ({', '.join(kept)}); nothing to run"
            )
        n = len(list(run_dir.glob("rendered*"))) + 1
        run_id = dns_label(f"{run_dir.name[:56]}-r{n}")
        rendered = f"rendered-r{n}"
    else:
        if ref is None:
            raise RecipeError("infersweep experiment run --local FILE: give an experiment file or name")
        e = load_experiment(ref)
        plan = make_plan(e)
        run_id = dns_label(f"{e.name[:40]}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}")
        run_dir = (out_root / run_id).resolve()
    prof = local_profile()
    settings = load_cluster_settings()
    cache_root = cache_root.resolve()
    model_dir = cache_root / "toy-model"
    state_dir = run_dir / "state"
    treatment_args, ready_timeout_s, gpu = _scaled(prof), 120, None
    if workers != "gpu":
        check_before_deploying(None)  # one line naming a tool that would not start, and the fix
    if workers == "gpu":
        from infersweep.dgd import deployable_dgd
        from infersweep.local.gpu_run import check_fits, gpu_workers, model_folder

        models = {s.treatment.recipe.model.id for s in plan.steps}
        if len(models) > 1:
            raise RecipeError(
                f"--workers gpu: the treatments use {len(models)} models ({', '.join(sorted(models))}); "
                "a local GPU experiment serves one model folder: give every treatment the same model"
            )
        gpu = gpu_workers(
            gpu_python, weights, engine_cache, cache_root, gpu_type=plan.steps[0].treatment.recipe.recipe.gpu.type
        )
        check_before_deploying(gpu.python)
        model_dir = model_folder(models.pop(), weights, cache_root)
        used = {
            s.treatment.name: check_fits(
                deployable_dgd(s.treatment.recipe, settings, name="fit"),
                list(gpu.gpus),
                python=gpu.python,
                model_dir=model_dir,
                weights=weights,
            )
            for s in plan.steps
        }

        def treatment_args(r: ResolvedRecipe) -> dict[str, str]:
            # Real engines take each treatment as it is: its own sweep and lengths, server-counted tokens.
            w = r.recipe.workload.aiperf_workload() | {"server_token_count": True}
            return {"workload": json.dumps(w, separators=(",", ":")), "gpu-count": str(max(used.values()))}

        ready_timeout_s = 1800

    if resume is None:  # only now: a refusal above (no GPU, workers that do not fit) leaves nothing behind
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / SPEC_PATH).write_text(str(e.path.resolve()))  # what --resume loads again
    from workflows.experiment import experiment_template, experiment_workflow

    # The experiment's template, scaled down here, and the Workflow that only references it: the two documents
    # a cluster gets (workflows/experiment.py), each strict.
    template = experiment_template(
        plan,
        settings,
        dgd_api=dgd_api,
        model_source=f"file://{model_dir}",
        ready_timeout_s=ready_timeout_s,
        treatment_args=treatment_args,
    ).to_dict()
    workflow = experiment_workflow(plan, settings, namespace="local").to_dict()
    workflow["metadata"].pop("generateName", None)
    workflow["metadata"]["name"] = run_id
    validate_document(template)
    validate_document(workflow)
    # Every step template is engine-independent; the pipeline template that comes with them is unused here.
    first = plan.steps[0].treatment.recipe
    templates = library_templates(settings, first.recipe.engine, first.recipe.topology.mode) + [template]
    (run_dir / rendered / "templates").mkdir(parents=True, exist_ok=True)
    (run_dir / rendered / "workflow.yaml").write_text(yaml.safe_dump(workflow, sort_keys=False, width=120))
    for t in templates:
        (run_dir / rendered / "templates" / f"{t['metadata']['name']}.yaml").write_text(
            yaml.safe_dump(t, sort_keys=False)
        )
    if gpu is None:
        print("\n".join(experiment_scale_note(plan, prof)), flush=True)
        build_toy_model(model_dir)

    from workflows.cluster import kubectl_manifests

    namespace = workflow["metadata"].get("namespace", "default")
    recipes = [s.treatment.recipe for s in plan.steps]
    configmaps = {
        f"{namespace}/{d['metadata']['name']}": {k: str(v) for k, v in (d.get("data") or {}).items()}
        for d in kubectl_manifests(settings, recipes)
        if d.get("kind") == "ConfigMap"
    }
    pythons = {settings.images.steps: sys.executable, settings.images.aiperf: venv_python("aiperf")}
    s3 = LocalS3(buckets=[settings.s3.bucket, ARTIFACT_BUCKET])
    sampler = None
    run_token = f"{run_id}-{uuid.uuid4().hex[:8]}"  # procs.RUN_MARKER: this run's processes, folder or not
    try:
        s3.start()
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
        env[procs.RUN_MARKER] = run_token
        env |= s3.env() | step_env(
            state_dir=state_dir,
            model_dir=model_dir,  # the steps' DGD adapter: local
            max_workers=prof["max_workers_per_component"],
            gpu=gpu,
        )
        if gpu is not None:
            from infersweep.dgd.render import render_dgd
            from infersweep.local.gpu_run import dgd_images, start_gpu_side, worker_modules

            dgds = [render_dgd(s.treatment.recipe, name="fit") for s in plan.steps]
            modules = set().union(*(worker_modules(d) for d in dgds))
            images = ", ".join(sorted({i for d in dgds for i in dgd_images(d)})) or None
            sampler, gpu_env = start_gpu_side(
                run_dir, gpu, str(max(used.values())), state_dir, modules=modules, rendered_image=images
            )
            env |= gpu_env
        # `argo stop` on Ctrl-C / SIGTERM: the exit handler still tears the deployment down
        argo, root = execute(
            workflow,
            templates,
            run_id=run_id,
            run_dir=run_dir,
            status_file=run_dir / f"status{rendered.removeprefix('rendered')}.json",
            cache_root=cache_root,
            pythons=pythons,
            env=env,
            s3_client=s3.client(),
            configmaps=configmaps,
            on_event=on_event,
            on_started=on_started,
        )
        from infersweep.local.disk_store import STORE_DIR, keep_experiment

        # The S3 server is about to go: the treatments it published stay listable as a store folder on disk.
        store = keep_experiment(s3.client(), settings.s3.bucket, settings.s3.prefix, e.name, run_dir.parent / STORE_DIR)
    finally:
        if sampler is not None:
            sampler.stop()
        for d in sorted((state_dir / "dgd").glob("*")) if (state_dir / "dgd").exists() else []:
            procs.stop_all(d)  # belt and braces: no Dynamo process outlives the run
        procs.stop_run_processes(run_token)  # nor one whose records went with a deleted run folder
        s3.stop()
    if gpu is not None:
        from infersweep.local.gpu_run import write_gpu_record

        write_gpu_record(run_dir, state_dir)
    report_file = run_dir / REPORT
    report = json.loads(report_file.read_text()) if report_file.is_file() else None
    return LocalExperimentRun(
        run_id,
        run_dir,
        argo.phase,
        plan,
        kept,
        report,
        root,
        time.monotonic() - t_start,
        argo.message,
        failed_step_lines(argo),
        store,
    )
