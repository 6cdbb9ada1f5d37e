"""One Argo WorkflowTemplate per experiment, built with Hera from the installed step WorkflowTemplates
(templateRef by name, never copies), and the Workflow that runs it: a `workflowTemplateRef` and nothing a
controller in `templateReferencing: Strict`/`Secure` refuses (workflows/strict.py; argo-workflows v4.1.2
workflow/util/merge.go ValidateUserOverrides). Every container is a declared step
(infersweep/step_declarations.py), the experiment's own included (mark-start, record-ready, archive, compare,
experiment-verdict), so each gets the steps' securityContext, resources, deadline and log archive.

`infersweep install` installs the template of every experiment in params/experiments/;
`infersweep experiment submit` applies the template (unchanged when the install put it there) and creates
the Workflow.

DAG: ensure-pvc -> the model caches -> treatments -> compare -> publish-report -> experiment-verdict.
`treatments`, per treatment run in plan order (infersweep.experiment.plan: with `blocks: N`, N ABBA blocks, each
run its own step; a run on empty KV caches warms every shared prefix first, infersweep.experiment.warmup):
  [teardown of the previous deployment, on a full redeploy] -> deploy (apply the treatment's DGD: a new one
  on a full redeploy, else the same DGD patched, which the operator turns into a frontend swap, a scale or a
  worker restart, see infersweep.experiment.restart) -> wait-ready, with mark-start before the deploy and
  record-ready after (time-to-ready) -> sweep (the AIPerf points, one at a time, failFast off) -> summarize
  -> publish (to <prefix>/experiments/<experiment>/<workflow>/<treatment>, once; a pointer at
  <prefix>/<recipe>/<workflow>-<treatment> makes it a run of its recipe, where `infersweep runs` lists it and
  `report` / `compare` read it: infersweep/results/index.py) -> archive (the run folder moves
  to /work/treatments/<treatment>, since the step templates write one run to /work/run).
The next treatment starts when the previous one's archive has run, whatever happened before it (every
outcome, Omitted included: Argo's depends grammar, common.TaskResult in argo-workflows), so a failed
treatment does not stop the others. Then compare writes the experiment report and publish-report publishes
it; experiment-verdict (the leaf) fails the Workflow when a treatment failed. The exit handler deletes every
DGD the experiment may have created (teardown is idempotent).

The GPU guard (workflows/gpu_guard.py) is held by the `treatments` template only, the admission of the
largest treatment: GPUs are reserved from the first deploy to the last archive, never through the model
downloads or the report. Argo frees a template's lock when its node is fulfilled (operator.go
executeTemplate), before the exit handler's teardown: every DGD carries the lane labels on which the next
run's deploy waits (infersweep.dgd.deployable_dgd), as a recipe run's does.

Local mode runs this same template and Workflow (infersweep/local/experiment_run.py). A patched DGD's
readiness: the wait-ready step ignores a status whose observedGeneration is below the DGD's generation
(infersweep/platform/readiness.py dgd_ready); the rolling update's own phase (status.rollingUpdate) is not
read yet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

import yaml
from hera.workflows import DAG, Parameter, Task, Workflow, WorkflowTemplate
from hera.workflows import models as m

from infersweep.aiperf.point import parse_points, points_text
from infersweep.cluster_settings import ClusterSettings
from infersweep.dgd import deployable_dgd, pool_is_exact
from infersweep.experiment.kv_reset import mark_reset
from infersweep.experiment.plan import Plan
from infersweep.experiment.plan import Step as PlanStep
from infersweep.experiment.restart import RestartClass
from infersweep.experiment.spec import REPORT_FOLDER
from infersweep.experiment.warmup import warmed_points
from infersweep.names import dns_label
from infersweep.recipe import RecipeError, ResolvedRecipe
from infersweep.recipe.release import for_dgd_api
from infersweep.recipe_context import recipe_context
from infersweep.validity_thresholds import step_steadiness
from workflows.gpu_guard import recipes_synchronization
from workflows.pipeline import QUEUE_BUDGET_S, points_json
from workflows.steps_library import step_task
from workflows.template_spec import point_task, workflow_spec

TEMPLATE_PREFIX = "infersweep-experiment-"
ANY_OUTCOME = "(%s.Succeeded || %s.Failed || %s.Errored || %s.Skipped || %s.Omitted)"


# The sweep template's inputs: each treatment's points and what its point tasks read (template_spec.point_task).
SWEEP_INPUTS = ("points", "url", "tokenizer", "model", "workload", "max-error-rate", "timeout-s", "ready-timeout-s")


def _input(name: str) -> str:
    return "{{inputs.parameters.%s}}" % name


def _any(task: str) -> str:
    return ANY_OUTCOME % ((task,) * 5)


def _compact(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"))


def dgd_names(plan: Plan) -> list[str]:
    """One DGD per full-redeploy group, in plan order: <experiment>-<group>."""
    names, group = [], -1
    for step in plan.steps:
        if step.transition.cls is RestartClass.FULL:
            group += 1
        names.append(f"{plan.experiment.name}-{group}")
    return names


def template_name(experiment: str) -> str:
    """The experiment's WorkflowTemplate: `infersweep-experiment-<name>` (a DNS label, cut + hash when long)."""
    return dns_label(TEMPLATE_PREFIX + experiment)


def _labels(plan: Plan) -> dict[str, str]:
    return {
        "app.kubernetes.io/managed-by": "infersweep",
        "infersweep.io/kind": "experiment",
        "infersweep.io/experiment": plan.experiment.name,
    }


def experiment_workflow(plan: Plan, settings: ClusterSettings, *, namespace: str | None = None) -> Workflow:
    """The Workflow a submit creates: the experiment's template by reference, and nothing else a controller in
    Strict/Secure reference mode refuses (its `spec.priority`, the GPU guard's queue order, is stamped by the
    submit: workflows/gpu_guard.py submit_priority)."""
    return Workflow(
        generate_name=f"{plan.experiment.name}-",
        namespace=namespace or settings.namespace,
        labels=_labels(plan),
        workflow_template_ref=m.WorkflowTemplateRef(name=template_name(plan.experiment.name)),
    )


def experiment_template(
    plan: Plan,
    settings: ClusterSettings,
    *,
    dgd_api: str = "v1beta1",
    workdir_size: str = "50Gi",
    model_source: str = "hf",
    ready_timeout_s: int = 1800,
    treatment_args: Callable[[ResolvedRecipe], dict[str, str]] | None = None,
) -> WorkflowTemplate:
    """Everything the experiment runs. `model_source`, `ready_timeout_s` and `treatment_args` (per treatment:
    "points", "workload", "gpu-count" replacing the recipe's) are how local mode scales the same template
    down (infersweep.local.experiment_run), as `run --local` overrides a recipe workflow's parameters."""
    e = plan.experiment
    gpu_types = {s.treatment.recipe.recipe.gpu.type for s in plan.steps}
    if len(gpu_types) > 1:
        raise RecipeError(
            f"{e.path}: treatments: they use GPU types {sorted(gpu_types)}; an experiment holds one "
            "GPU pool, so give every treatment the same gpu.type"
        )
    # A treatment patched in place rolls its workers within what is left of the admission. One choice for
    # every treatment: the rollout annotations are part of the pod template the worker hash covers, so a
    # difference between two treatments would itself roll the workers (infersweep.experiment.restart).
    treatments = [s.treatment.recipe for s in plan.steps]
    run = _Treatments(
        plan=plan,
        settings=settings,
        dgd_api=dgd_api,
        ready_timeout_s=ready_timeout_s,
        treatment_args=treatment_args,
        names=dgd_names(plan),
        caches=_model_caches(plan),
        prefix=f"{settings.s3.prefix}/experiments/{e.name}/{{{{workflow.name}}}}",
        largest=max(treatments, key=lambda t: t.gpu_capacity),
        exact=pool_is_exact(treatments, settings),
    )
    spec = workflow_spec(
        settings,
        name=template_name(e.name),
        labels=_labels(plan),
        entrypoint="experiment",
        workdir_size=workdir_size,
        model_cache_claim=settings.model_cache.pvc,
        deadline_s=_deadline_s(plan),
    )
    with WorkflowTemplate(**spec) as wt:
        with DAG(name="sweep", parallelism=1, fail_fast=False, inputs=[Parameter(name=n) for n in SWEEP_INPUTS]):
            point_task(
                url=_input("url"),
                model=_input("model"),
                workload=_input("workload"),
                max_error_rate=_input("max-error-rate"),
                timeout_s=_input("timeout-s"),
                ready_timeout_s=_input("ready-timeout-s"),
            )
        with DAG(name="exit-handler"):
            for name in dict.fromkeys(run.names):
                step_task("teardown", name=f"teardown-{name}", arguments={"dgd-name": name, "api-version": dgd_api})
        points = _treatments_dag(run)
        _experiment_dag(run, model_source, points)
    return wt


def _deadline_s(plan: Plan) -> int:
    """The wait for the GPU lane counts against a workflow's deadline (the lock is taken inside the running
    Workflow, on the treatments template), so the deadline is the pipeline's queue budget plus the span's own:
    every point may run to its timeout, plus an hour per treatment for deploys and bookkeeping."""
    points_s = sum(
        len(s.treatment.recipe.recipe.workload.concurrency) * s.treatment.recipe.recipe.workload.point_timeout_s
        for s in plan.steps
    )
    return QUEUE_BUDGET_S + points_s + 3600 * len(plan.steps)


def _model_caches(plan: Plan) -> dict[tuple[str, str, str], str]:
    """(model, revision, draft model) -> its model-cache task, one per distinct model of the treatments."""
    caches: dict[tuple[str, str, str], str] = {}
    for s in plan.steps:
        r = s.treatment.recipe
        caches.setdefault(_model_key(r), f"model-cache-{len(caches)}")
    return caches


def _model_key(r: ResolvedRecipe) -> tuple[str, str, str]:
    return (r.model.id, r.model.revision, r.draft_model or "")


@dataclass(frozen=True)
class _Treatments:
    """What every treatment's tasks read: the plan, the options of the template, and what is chosen once for
    all treatments (their DGD names, model caches, publish prefix, the admission held and the rollout)."""

    plan: Plan
    settings: ClusterSettings
    dgd_api: str
    ready_timeout_s: int
    treatment_args: Callable[[ResolvedRecipe], dict[str, str]] | None
    names: list[str]
    caches: dict[tuple[str, str, str], str]
    prefix: str
    largest: ResolvedRecipe
    exact: bool


def _treatments_dag(run: _Treatments) -> dict[str, str]:
    """The GPU-holding span: from the first deploy to the last archive, with the GPU guard's admission of the
    largest treatment (a template lock, held only while this node runs: Argo v4.1.2 operator.go
    executeTemplate acquires before the node starts and releases when it is fulfilled). The model caches it
    reads come in as inputs: a nested template sees only its own inputs, not the outer tasks.
    Returns each treatment's points (the `points` text), for the verdict."""
    cache_inputs = [f"{kind}-{n}" for n in range(len(run.caches)) for kind in ("model-dir", "commit")]
    treatment_points: dict[str, str] = {}
    with DAG(
        name="treatments",
        inputs=[Parameter(name=n) for n in cache_inputs],
        synchronization=recipes_synchronization([s.treatment.recipe for s in run.plan.steps], run.settings),
    ):
        for i, s in enumerate(run.plan.steps):
            treatment_points[s.treatment.name] = _treatment(run, i, s)
    return treatment_points


def _treatment(run: _Treatments, i: int, s: PlanStep) -> str:
    """Treatment i's tasks, after the previous treatment's archive whatever happened to it; its points."""
    # its release's images (the cluster's dynamo_release, else the one dgd_api picks)
    r: ResolvedRecipe = for_dgd_api(s.treatment.recipe, run.dgd_api, release=run.settings.dynamo_release)
    t = f"t{i}"
    w = r.recipe.workload
    args = {
        "points": points_text(w.points()),
        "workload": _compact(w.aiperf_workload() | step_steadiness(w.length(), env={})),  # as workflows/pipeline.py
        "gpu-count": str(r.gpu_count),
    } | (run.treatment_args(r) if run.treatment_args else {})
    # A step on empty caches (a deploy, a restart, a reset) warms every shared prefix before its
    # window opens (infersweep.experiment.warmup): the compulsory first misses are not measured.
    args["points"] = points_text(
        warmed_points(parse_points(args["points"]), json.loads(args["workload"]), s.starts_empty)
    )
    cache = run.caches[_model_key(r)].removeprefix("model-cache-")
    _deploy(run, i, s, r)
    Task(
        name=f"{t}-sweep",
        template="sweep",
        # after record-ready, whatever its outcome: both mount the run's ReadWriteOnce workdir, and
        # two pods on different nodes cannot (the attach-detach controller's Multi-Attach error)
        depends=f"{t}-wait-ready && {_any(f'{t}-record-ready')}",
        arguments={
            "points": points_json(parse_points(args["points"]), run.settings),
            "ready-timeout-s": str(run.ready_timeout_s),
            "url": f"{{{{tasks.{t}-deploy.outputs.parameters.frontend-url}}}}",
            "tokenizer": "{{inputs.parameters.model-dir-%s}}" % cache,
            "model": r.model.id,
            "workload": args["workload"],
            "max-error-rate": str(w.max_error_rate),
            "timeout-s": str(w.point_timeout_s),
        },
    )
    _bookkeeping(run, i, s, r, args["gpu-count"], cache)
    return args["points"]


def _deploy(run: _Treatments, i: int, s: PlanStep, r: ResolvedRecipe) -> None:
    """[teardown of the previous DGD, on a full redeploy] -> mark-start -> deploy -> wait-ready -> record-ready."""
    t = f"t{i}"
    start_after = [_any(f"t{i - 1}-archive")] if i else []
    if s.transition.cls is RestartClass.FULL and i > 0:
        step_task(
            "teardown",
            name=f"{t}-teardown",
            depends=" && ".join(start_after),
            arguments={"dgd-name": run.names[i - 1], "api-version": run.dgd_api},
        )
        start_after = [f"{t}-teardown"]
    step_task("mark-start", name=f"{t}-mark-start", depends=" && ".join(start_after) or None)
    # The same DGD a recipe run applies (infersweep.dgd.deployable_dgd), scheduling step included:
    # under Kueue/KAI/Volcano its pods carry the queue's labels, under the Argo guard the DGD the
    # lane labels of the admission the experiment holds (its largest treatment's).
    dgd = deployable_dgd(
        r, run.settings, api_version=run.dgd_api, name=run.names[i], held_for=run.largest, exact_pool=run.exact
    )
    if s.reset:  # empty the kept workers' KV caches first (infersweep.experiment.kv_reset)
        dgd = mark_reset(dgd, str(i))
    step_task(
        "deploy",
        name=f"{t}-deploy",
        depends=_any(f"{t}-mark-start"),
        arguments={"dgd": yaml.safe_dump(dgd, sort_keys=False)},
    )
    step_task(
        "wait-ready",
        name=f"{t}-wait-ready",
        depends=f"{t}-deploy",
        arguments={
            "dgd-name": run.names[i],
            "model": r.model.id,
            "timeout-s": str(run.ready_timeout_s),
            "api-version": run.dgd_api,
        },
    )
    step_task("record-ready", name=f"{t}-record-ready", depends=f"{t}-wait-ready")


def _bookkeeping(run: _Treatments, i: int, s: PlanStep, r: ResolvedRecipe, gpu_count: str, cache: str) -> None:
    """summarize -> publish (to <prefix>/<treatment>) -> archive (the run folder to /work/treatments/<name>)."""
    t = f"t{i}"
    slo = {k: v for k, v in r.recipe.slo.model_dump().items() if v is not None}
    # The summarize step accepts only the run-context keys it knows (steps/summarize.py
    # --context, infersweep.results.context): the treatment's recipe context, as a recipe run
    # has, plus the experiment, treatment, restart class and factor levels (also in the title and prefix),
    # and the commit its model cache resolved. That commit comes from the cache task's output (an
    # input of this template), not from the file model-cache writes into /work/run (MODEL_COMMIT, the
    # pipeline's way): the file leaves with the first treatment's archive, and with two models
    # another cache may overwrite it.
    context = recipe_context(r, run.settings) | {
        "experiment": run.plan.experiment.name,
        "treatment": s.treatment.name,
        "restart_class": s.transition.cls.label,
        "levels": s.treatment.levels,
        "model_commit": "{{inputs.parameters.commit-%s}}" % cache,
        "kv_cache_state": s.cache,
        "order_pass": s.order_pass,
        "base_treatment": s.base or s.treatment.name,
    }
    step_task(
        "summarize",
        name=f"{t}-summarize",
        depends=f"{_any(f'{t}-sweep')} && {_any(f'{t}-record-ready')}",
        arguments={
            "gpu-count": gpu_count,
            "slo": _compact(slo),
            "title": s.treatment.name,
            "context": json.dumps(context, separators=(",", ":"), sort_keys=True),
        },
    )
    # Published once, under the experiment; `store-prefix` makes it also a run of its recipe in the results
    # store (<prefix>/<recipe>/<workflow>-<treatment>) by a pointer, not a second upload: `infersweep runs`
    # lists it beside the recipe's other runs, `report` / `compare` / `regress` read it through the pointer
    # (a store lists only <base>/<recipe>/<run-id>, infersweep/results/index.py).
    step_task(
        "publish",
        name=f"{t}-publish",
        depends=f"{t}-summarize",
        arguments={
            "bucket": run.settings.s3.bucket,
            "prefix": f"{run.prefix}/{s.treatment.name}",
            "store-prefix": f"{run.settings.s3.prefix}/{r.name}/{{{{workflow.name}}}}-{s.treatment.name}",
        },
    )
    step_task(
        "archive",
        name=f"{t}-archive",
        depends=_any(f"{t}-publish"),
        arguments={"treatment": s.treatment.name},
    )


def _experiment_dag(run: _Treatments, model_source: str, treatment_points: dict[str, str]) -> None:
    """ensure-pvc -> the model caches -> treatments -> compare -> publish-report -> experiment-verdict."""
    settings, caches = run.settings, run.caches
    with DAG(name="experiment"):
        step_task(
            "ensure-pvc",
            name="ensure-pvc",
            arguments={
                "pvc": settings.model_cache.pvc,
                "size": settings.model_cache.size,
                "storage-class": settings.model_cache.storage_class,
            },
        )
        for (model, revision, draft), cache in caches.items():
            step_task(
                "model-cache",
                name=cache,
                depends="ensure-pvc",
                arguments={"model": model, "revision": revision, "source": model_source, "draft-model": draft},
            )
        Task(
            name="treatments",
            template="treatments",
            depends=" && ".join(caches.values()),
            arguments={
                f"{kind}-{cache.removeprefix('model-cache-')}": "{{tasks.%s.outputs.parameters.%s}}" % (cache, kind)
                for cache in caches.values()
                for kind in ("model-dir", "commit")
            },
        )
        step_task(
            "compare",
            name="compare",
            depends=_any("treatments"),
            arguments={"experiment": run.plan.experiment.path.read_text()},
        )
        step_task(
            "publish",
            name="publish-report",
            depends="compare",
            arguments={"bucket": settings.s3.bucket, "prefix": f"{run.prefix}/{REPORT_FOLDER}", "store-prefix": ""},
        )
        # The leaf that makes a failed treatment fail the Workflow (dag.go assessDAGPhase judges a DAG by
        # its leaves, and compare/publish-report succeed whatever the treatments did), after the report
        # is published.
        step_task(
            "experiment-verdict",
            name="verdict",
            depends=_any("publish-report"),
            arguments={
                "points": _compact(
                    {s.treatment.name: json.loads(treatment_points[s.treatment.name]) for s in run.plan.steps}
                )
            },
        )
