"""`infersweep experiment run --local FILE`: render the experiment's one Workflow (workflows/experiment.py)
exactly as for a cluster, scaled down by params/local.yaml like `run --local`, and run it here with the
local Argo executor (infersweep/local/argo/): the step templates run in their venvs, the workdir and the
model cache are folders, S3 is a real local server, and the DGD is a Dynamo frontend + mocker workers whose
re-applies follow the operator's semantics (infersweep.local.dynamo.adapter.LocalPlatform.apply_dgd ->
infersweep.local.dynamo.reconfigure.apply_local: a router change swaps only the frontend).

`resume`: the folder of an earlier `experiment run --local`. Treatments whose archived folder holds a
results table are kept as they are; a new Workflow `<run>-rN` runs the others (its plan recomputed over
them, so its first one is a fresh deploy) on the same workdir, and its comparison step reports on all.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from infersweep.cluster_settings import ClusterSettings, load_cluster_settings
from infersweep.experiment.plan import KEEPS_WORKERS, Plan, Step, make_plan
from infersweep.experiment.restart import RestartClass, Transition, classify
from infersweep.experiment.spec import Experiment, load_experiment
from infersweep.local.argo import LocalArgo, Node
from infersweep.local.executor import execute, failed_step_lines
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.phases import (
    RunFolder,
    earlier_workflow,
    finish_gpu,
    gpu_side,
    local_services,
    new_run_id,
    next_attempt,
    write_rendered,
)
from infersweep.local.profile import LocalProfile, load_local_profile
from infersweep.local.scale import scaled_arguments, scaled_points, scaled_workload, unscaled_arguments
from infersweep.local.toolchain import check_before_deploying
from infersweep.local.workers import LocalWorkers
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


def experiment_scale_note(plan: Plan, prof: LocalProfile) -> list[str]:
    """What local mode changed in each treatment (infersweep.local.scale_note), said before the run: the claim
    is about the recipes as written, the numbers are about these copies."""
    from infersweep.local.scale_note import scale_note

    lines: list[str] = []
    for s in plan.steps:
        r = s.treatment.recipe
        note = scale_note(r, prof, scaled_workload(r, prof), scaled_points(r, prof), prof.max_workers_per_component)
        lines += [f"treatment {s.treatment.name}: {note[0]}", *note[1:]]
    return lines


@dataclass
class LocalExperimentOptions:
    """How `experiment run --local` runs (run_experiment_local's keyword arguments)."""

    out_root: Path = Path("runs")
    cache_root: Path = Path(".infersweep")
    resume: Path | None = None
    dgd_api: str = "v1beta1"
    on_event: Callable[[str, Node], None] | None = None
    on_started: Callable[[LocalArgo], None] | None = None
    workers: LocalWorkers = field(default_factory=LocalWorkers)


@dataclass
class TreatmentWorkers:
    """What the treatments run on: mocker workers on the toy model, each treatment scaled down; or real engine
    workers on one model folder, each treatment as it is, on the GPUs the widest one takes."""

    model_dir: Path
    treatment_args: Callable[[ResolvedRecipe], dict[str, str]]
    ready_timeout_s: int = 120
    gpu: GpuWorkers | None = None
    gpu_count: int | None = None


def _experiment_folder(ref: str | Path | None, o: LocalExperimentOptions) -> tuple[Experiment, Plan, RunFolder, list]:
    """(experiment, plan, where it runs, treatments kept): a new run; or a --resume's next attempt over the
    treatments an earlier attempt did not finish."""
    if o.resume is None:
        if ref is None:
            raise RecipeError("infersweep experiment run --local FILE: give an experiment file or name")
        e = load_experiment(ref)
        run_id = new_run_id(e.name)
        return e, make_plan(e), RunFolder(run_id, (o.out_root / run_id).resolve()), []
    run_dir = Path(o.resume).resolve()
    workflow = earlier_workflow(run_dir, f"--resume {o.resume}", "experiment run")
    labels = (workflow.get("metadata") or {}).get("labels") or {}
    recorded = run_dir / SPEC_PATH
    e = load_experiment(
        ref or (recorded.read_text().strip() if recorded.is_file() else labels.get("infersweep.io/experiment", ""))
    )
    if labels.get("infersweep.io/experiment") != e.name:
        raise RecipeError(
            f"--resume {o.resume}: that run is of experiment {labels.get('infersweep.io/experiment')!r}, not {e.name!r}"
        )
    kept = [n for n in finished_treatments(run_dir) if n in {s.treatment.name for s in make_plan(e).steps}]
    plan = _replan(make_plan(e), set(kept))
    if not plan.steps:
        raise RecipeError(
            f"--resume {o.resume}: every treatment already has results ({', '.join(kept)}); nothing to run"
        )
    run_id, rendered = next_attempt(run_dir)
    return e, plan, RunFolder(run_id, run_dir, rendered), kept


def _treatment_workers(
    plan: Plan, o: LocalExperimentOptions, settings: ClusterSettings, prof: LocalProfile
) -> TreatmentWorkers:
    """The mocker side (scaled, the toy model) or the GPU side: one model folder for every treatment, the GPUs
    each treatment's workers take checked before anything starts."""
    cache_root = o.cache_root.resolve()
    if not o.workers.gpu:
        check_before_deploying(None)  # one line naming a tool that would not start, and the fix
        return TreatmentWorkers(cache_root / "toy-model", lambda r: scaled_arguments(r, prof))
    from infersweep.dgd import deployable_dgd
    from infersweep.local.dynamo.gpu_fit import check_fits
    from infersweep.local.dynamo.toy_model import model_folder

    models = {s.treatment.recipe.model.id for s in plan.steps}
    if len(models) > 1:
        raise RecipeError(
            f"--workers gpu: the treatments use {len(models)} models ({', '.join(sorted(models))}); "
            "a local GPU experiment serves one model folder: give every treatment the same model"
        )
    gpu = o.workers.start_settings(o.cache_root, gpu_type=plan.steps[0].treatment.recipe.recipe.gpu.type)
    check_before_deploying(gpu.python)
    model_dir = model_folder(models.pop(), gpu.weights, cache_root)
    used = max(
        check_fits(
            deployable_dgd(s.treatment.recipe, settings, name="fit"),
            list(gpu.gpus),
            python=gpu.python,
            model_dir=model_dir,
            weights=gpu.weights,
        )
        for s in plan.steps
    )
    # Real engines take each treatment as it is: its own sweep and lengths, server-counted tokens.
    return TreatmentWorkers(model_dir, lambda r: unscaled_arguments(r, used, gpu), 1800, gpu, used)


def _render_experiment(
    plan: Plan, settings: ClusterSettings, o: LocalExperimentOptions, folder: RunFolder, side: TreatmentWorkers
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The experiment's template, scaled down here, and the Workflow that only references it: the two documents
    a cluster gets (workflows/experiment.py), each strict, written to the attempt's rendered folder."""
    from workflows.experiment import experiment_template, experiment_workflow

    template = experiment_template(
        plan,
        settings,
        dgd_api=o.dgd_api,
        model_source=f"file://{side.model_dir}",
        ready_timeout_s=side.ready_timeout_s,
        treatment_args=side.treatment_args,
    ).to_dict()
    workflow = experiment_workflow(plan, settings, namespace="local").to_dict()
    workflow["metadata"].pop("generateName", None)
    workflow["metadata"]["name"] = folder.run_id
    validate_document(template)
    validate_document(workflow)
    # Every step template is engine-independent; the pipeline template that comes with them is unused here.
    first = plan.steps[0].treatment.recipe
    templates = library_templates(settings, first.recipe.engine, first.recipe.topology.mode) + [template]
    write_rendered(folder.rendered_dir, workflow, templates, width=120)
    return workflow, templates


def _gpu_stack(plan: Plan) -> dict[str, Any]:
    """start_gpu_side's words on the stack: every treatment's engine modules and images."""
    from infersweep.dgd.render import render_dgd
    from infersweep.local.dynamo.gpu_fit import worker_modules
    from infersweep.local.gpu.run import dgd_images

    dgds = [render_dgd(s.treatment.recipe, name="fit") for s in plan.steps]
    return {
        "modules": set().union(*(worker_modules(d) for d in dgds)),
        "rendered_image": ", ".join(sorted({i for d in dgds for i in dgd_images(d)})) or None,
    }


@dataclass
class _ExperimentRun:
    """One `experiment run --local`: its experiment, plan and options, where it runs, what it runs on."""

    experiment: Experiment
    plan: Plan
    options: LocalExperimentOptions
    folder: RunFolder
    prof: LocalProfile
    settings: ClusterSettings
    side: TreatmentWorkers


def _execute_experiment(c: _ExperimentRun, workflow: dict[str, Any], templates: list[dict[str, Any]]):
    """The services started, the Workflow run to its end (`argo stop` on Ctrl-C / SIGTERM: the exit handler
    still tears the deployment down), the published treatments kept on disk; every process stopped."""
    from infersweep.local.disk_store import STORE_DIR, keep_experiment

    plan, o, folder, settings, side = c.plan, c.options, c.folder, c.settings, c.side
    with local_services(settings, folder.state_dir, run_id=folder.run_id) as svc:
        env = svc.step_env(
            model_dir=side.model_dir,
            max_workers=c.prof.max_workers_per_component,
            gpu=side.gpu,
        )
        stack = _gpu_stack(plan) if side.gpu is not None else {}
        with gpu_side(folder.run_dir, side.gpu, str(side.gpu_count), folder.state_dir, **stack) as gpu_env:
            namespace = workflow["metadata"].get("namespace", "default")
            services = svc.executor(o, env | gpu_env, [s.treatment.recipe for s in plan.steps], namespace)
            status = folder.run_dir / f"status{folder.rendered.removeprefix('rendered')}.json"
            argo, root = execute(
                workflow, templates, services, run_id=folder.run_id, run_dir=folder.run_dir, status_file=status
            )
            # The S3 server is about to go: the treatments it published stay listable as a store folder on disk.
            s3c = svc.s3.client()
            store = keep_experiment(
                s3c, settings.s3.bucket, settings.s3.prefix, c.experiment.name, folder.run_dir.parent / STORE_DIR
            )
    return argo, root, store


def run_experiment_local(
    ref: str | Path | None, options: LocalExperimentOptions | None = None, **fields: Any
) -> LocalExperimentRun:
    """Run the experiment here. `fields`: LocalExperimentOptions's, and `workers`/`weights`/`gpu_python`/
    `engine_cache` as for `run --local` (infersweep.local.run.run_local): with "gpu" the treatments run on real
    engine workers on this machine's GPUs, unscaled."""
    o = options or LocalExperimentOptions(workers=LocalWorkers.take(fields), **fields)
    t_start = time.monotonic()
    e, plan, folder, kept = _experiment_folder(ref, o)
    prof, settings = load_local_profile(), load_cluster_settings()
    side = _treatment_workers(plan, o, settings, prof)
    if o.resume is None:  # only now: a refusal above (no GPU, workers that do not fit) leaves nothing behind
        folder.run_dir.mkdir(parents=True, exist_ok=True)
        (folder.run_dir / SPEC_PATH).write_text(str(e.path.resolve()))  # what --resume loads again
    workflow, templates = _render_experiment(plan, settings, o, folder, side)
    if side.gpu is None:
        from infersweep.local.dynamo.toy_model import build_toy_model

        print("\n".join(experiment_scale_note(plan, prof)), flush=True)
        build_toy_model(side.model_dir)
    c = _ExperimentRun(e, plan, o, folder, prof, settings, side)
    argo, root, store = _execute_experiment(c, workflow, templates)
    finish_gpu(folder.run_dir, folder.state_dir, side.gpu)
    report_file = folder.run_dir / REPORT
    report = json.loads(report_file.read_text()) if report_file.is_file() else None
    return LocalExperimentRun(
        folder.run_id,
        folder.run_dir,
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
