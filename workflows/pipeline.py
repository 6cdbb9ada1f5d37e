"""The benchmark pipeline WorkflowTemplate (one per engine x topology) and the Workflow that runs a recipe.

Main DAG: ensure-pvc -> model-cache -> gpu-span [deploy -> wait-ready -> points (AIPerf, one at a time)].
Exit handler (whatever ended the run): teardown || scrape -> summarize -> publish -> regression-check +
verdict. Teardown starts as soon as the last point ends; the verdict fails the run when a point failed or
nothing was measured, after the measured points are published. Nothing in the main DAG follows a point,
so the Argo UI's Retry re-runs exactly the failed points (the points bring the deployment back
themselves, steps/deploy.py --ensure) and then the whole exit handler. Results flow between steps through
the run's workdir volume, never through parameters. The DGD is named per run
(infersweep.names.dgd_run_name). The GPU guard (workflows/gpu_guard.py) is held by the gpu-span template
only: GPUs are reserved from deploy to the last point, never through the download or the bookkeeping.
"""

from __future__ import annotations

import json
from operator import attrgetter
from typing import Any, NamedTuple

import yaml
from hera.workflows import DAG, Parameter, Task, Workflow, WorkflowTemplate
from hera.workflows import models as m

from infersweep.aiperf.point import Point, PointError, parse_points, repeated
from infersweep.cluster_settings import ClusterSettings
from infersweep.dgd import deployable_dgd
from infersweep.dgd.render import dgd_base_name
from infersweep.dgd.render import labels as recipe_labels
from infersweep.names import label_value
from infersweep.pipeline_params import LOCK_PARAMS, PARAMS
from infersweep.recipe import RecipeError, ResolvedRecipe
from infersweep.recipe_context import recipe_context
from infersweep.validity_thresholds import step_steadiness
from workflows.gpu_guard import guard_arguments, span_synchronization
from workflows.steps_library import aiperf_resources, step_task
from workflows.template_spec import point_task, workflow_spec

# (name, description for the Argo UI form, enum or None): the declarations in infersweep/pipeline_params.py, in
# their order (the GPU guard's gpu-lock-N last).
PIPELINE_PARAMS: list[tuple[str, str, list[str] | None]] = [
    (p.name, p.help, list(p.enum) if p.enum else None) for p in PARAMS
]


def pipeline_name(engine: str, mode: str) -> str:
    return f"infersweep-{engine}-{mode}"


def _wf(name: str) -> str:
    return "{{workflow.parameters.%s}}" % name


# Each step the pipeline runs once, by its task's name (the step's own): its inputs -> the workflow parameter
# that gives each (the points, publish and verdict take more than a parameter and are built where they run).
_STEP_PARAMS: dict[str, dict[str, str]] = {
    "deploy": {"dgd": "dgd"},
    "wait-ready": {
        "dgd-name": "dgd-name",
        "model": "model",
        "timeout-s": "ready-timeout-s",
        "api-version": "dgd-api-version",
    },
    "teardown": {"dgd-name": "dgd-name", "api-version": "dgd-api-version"},
    "scrape": {"prometheus-url": "prometheus-url", "dgd-name": "dgd-name", "context": "context"},
    "summarize": {"gpu-count": "gpu-count", "slo": "slo", "title": "recipe", "context": "context"},
    "regression-check": {"bucket": "s3-bucket", "baseline-prefix": "baseline-prefix", "tolerances": "regression"},
    "ensure-pvc": {"pvc": "model-cache-pvc", "size": "model-cache-size", "storage-class": "storage-class"},
    "model-cache": {
        "model": "model",
        "revision": "model-revision",
        "source": "model-source",
        "draft-model": "draft-model",
    },
}


def _step(step: str, depends: str | None = None) -> Task:
    """The task of `step`, named as the step, its inputs the workflow parameters _STEP_PARAMS names."""
    arguments = {name: _wf(param) for name, param in _STEP_PARAMS[step].items()}
    return step_task(step, name=step, depends=depends, arguments=arguments)


def _completed(task: str) -> str:
    """`depends` on a task having run to an end, whatever it was (not Omitted, not Skipped): its dependent runs
    after a failure too (dag.go: Succeeded, Failed and Errored are the task results of a completed pod)."""
    return f"{task}.Succeeded || {task}.Failed || {task}.Errored"


def pipeline_defaults(settings: ClusterSettings) -> dict[str, str]:
    """Values a submit may leave out: each parameter's declared default, or its cluster setting from
    params/cluster.yaml (infersweep/pipeline_params.py)."""
    out = {}
    for p in _DEFAULTS_ORDER:
        if p.setting:
            out[p.name] = attrgetter(p.setting)(settings)
        elif p.default is not None:
            out[p.name] = p.default
    return out


# The order of the defaults is the order of a rendered Workflow's arguments (recipe_run starts from them):
# the declarations' order, but draft-model, which joined after the others, after baseline-prefix as it always
# was, so that rendered Workflows stay byte-identical.
_DEFAULTS_ORDER = [p for p in PARAMS if p.name != "draft-model"]
_DEFAULTS_ORDER.insert(
    [p.name for p in _DEFAULTS_ORDER].index("baseline-prefix") + 1, next(p for p in PARAMS if p.name == "draft-model")
)


def _param(name: str, description: str, enum: list[str] | None, defaults: dict[str, str]) -> Parameter:
    kw: dict[str, Any] = {"name": name, "description": description}
    if enum:
        kw["enum"] = enum
    if name in defaults:  # no default: the submit must give it (Argo refuses the workflow otherwise)
        kw["value"] = defaults[name]
    return Parameter(**kw)


# The workflow deadline (activeDeadlineSeconds) counts from the Workflow's start (operator.go
# getWorkflowDeadline: status.startedAt + activeDeadlineSeconds), and a run waiting for its GPU lane is a
# running Workflow whose gpu-span node is Pending "Waiting for lock" (the lock is the span template's, not the
# Workflow's, so the Workflow starts at once). So the deadline is the longest a run may take to download and
# wait for its lane, plus the span's budget: a run that queued for up to QUEUE_BUDGET_S still has at least
# SPAN_BUDGET_S from the lock. Argo gives a DAG node no deadline of its own (validate.go validateNonLeaf refuses
# activeDeadlineSeconds on DAG/steps templates, and `timeout` is for leaves only), so inside the span the bound
# besides the workflow's is its pods' own deadlines, each counted from the pod's start, after the lock:
# deploy, wait-ready, each point (workflowpod.go createWorkflowPod: a pod gets min(its template's
# activeDeadlineSeconds, the time left to the workflow deadline)). The exit handler's pods are not cut by the
# workflow deadline (the same function skips it for onExit pods), so teardown and publish still run after it.
QUEUE_BUDGET_S = 18 * 3600  # download + waiting for the lane (the catalog all at once queues H100 runs ~16 h)
SPAN_BUDGET_S = 6 * 3600  # from the lock: deploy, ready, the points


def pipeline_template(
    engine: str,
    mode: str,
    settings: ClusterSettings,
    *,
    point_parallelism: int = 1,
    workdir_size: str = "20Gi",
    queue_budget_s: int = QUEUE_BUDGET_S,
    span_budget_s: int = SPAN_BUDGET_S,
) -> WorkflowTemplate:
    defaults = pipeline_defaults(settings)
    spec = workflow_spec(
        settings,
        name=pipeline_name(engine, mode),
        labels={
            "app.kubernetes.io/managed-by": "infersweep",
            "infersweep.io/kind": "pipeline",
            "infersweep.io/engine": engine,
            "infersweep.io/topology": mode,
        },
        entrypoint="pipeline",
        workdir_size=workdir_size,
        model_cache_claim=_wf("model-cache-pvc"),
        deadline_s=queue_budget_s + span_budget_s,
    )
    with WorkflowTemplate(**spec, arguments=[_param(n, d, e, defaults) for n, d, e in PIPELINE_PARAMS]) as wt:
        _gpu_span(settings, point_parallelism)
        _exit_handler()
        _main_dag()
    return wt


def _gpu_span(settings: ClusterSettings, point_parallelism: int) -> None:
    """The GPU-holding span: the DGD applied, ready, and measured, one point at a time (points share the
    deployment: parallelism), a failed point not cancelling the others (failFast false). The points are its
    leaves, so it fails when any point fails (dag.go assessDAGPhase judges a DAG by its leaf tasks), and nothing
    in the main DAG runs after them: a failed point has no Succeeded descendant, which is what lets the UI's
    Retry re-run it (util.go FormulateRetryWorkflow retries a failed pod only when isDescendantNodeSucceeded is
    false). Teardown and the bookkeeping are the exit handler's.
    It is also the only template that holds the GPU guard (workflows/gpu_guard.py): GPUs are reserved from
    deploy to the last point, never through the download or the bookkeeping."""
    with DAG(
        name="gpu-span",
        inputs=[Parameter(name="points"), Parameter(name="tokenizer")],
        parallelism=point_parallelism,
        fail_fast=False,
        synchronization=span_synchronization(settings),
    ):
        deploy = _step("deploy")
        ready = _step("wait-ready")
        point = point_task(
            url="{{tasks.deploy.outputs.parameters.frontend-url}}",
            model=_wf("model"),
            workload=_wf("workload"),
            max_error_rate=_wf("max-error-rate"),
            timeout_s=_wf("point-timeout-s"),
            ready_timeout_s=_wf("ready-timeout-s"),
        )
        deploy >> ready >> point


def _exit_handler() -> None:
    """Runs as soon as the main DAG ends, whatever ended it: success, a failure, `argo stop`, the workflow
    deadline (not `argo terminate`: operator.go operate() runs onExit only when
    ShutdownStrategy.ShouldExecute(true), false for Terminate; the reaper CronWorkflow covers that). Teardown
    releases the GPUs at once; beside it the measured points are scraped, summarised and published; the verdict
    (last) fails the run when any point failed or nothing was measured (an exit handler that fails makes a
    Succeeded workflow Failed: operator.go operate()).
    One at a time on the workdir: the workdir is a ReadWriteOnce PVC, and two pods on different nodes cannot
    mount it at once (the second waits in ContainerCreating on Multi-Attach while its activeDeadlineSeconds,
    counted from the pod's start, runs). So every task that mounts it follows the previous one (scrape ->
    summarize -> publish -> regression-check -> verdict); only teardown, which mounts nothing, runs beside them
    (tests/workflows/test_pipeline_lifecycle.py checks every template). The exit handler is judged by its leaves
    (dag.go assessDAGPhase), and a failure a later task's `depends` accepts is not a leaf's: the verdict is told
    the phases of scrape and regression-check and fails the run for them too (steps/verdict.py --exit-steps)."""
    with DAG(name="exit-handler"):
        _step("teardown")
        _step("scrape")
        # A scrape that fails (a query the run needs returned no series: steps/scrape.py exits 1) fails
        # the run loudly, but the measured points are still summarised and published.
        summarize = _step("summarize", depends=_completed("scrape"))
        publish = step_task(
            "publish",
            name="publish",
            arguments={
                "bucket": _wf("s3-bucket"),
                "prefix": f"{_wf('s3-prefix')}/{_wf('recipe')}/{{{{workflow.name}}}}",
                "store-prefix": "",  # the run's own prefix is its place in the results store
            },
        )
        check = _step("regression-check")
        exit_steps = {t: "{{tasks.%s.status}}" % t for t in ("scrape", "regression-check")}
        step_task(
            "verdict",
            name="verdict",
            depends=_completed("regression-check"),
            arguments={"points": _wf("points"), "exit-steps": json.dumps(exit_steps, separators=(",", ":"))},
        )
        summarize >> publish >> check


def _main_dag() -> None:
    """The model cache PVC ensured, the model downloaded, then the GPU span (the points read the model there)."""
    with DAG(name="pipeline"):
        pvc = _step("ensure-pvc")
        cache = _step("model-cache")
        span = Task(
            name="gpu-span",
            template="gpu-span",
            arguments={"points": _wf("points"), "tokenizer": "{{tasks.model-cache.outputs.parameters.model-dir}}"},
        )
        pvc >> cache >> span


class RecipeRun(NamedTuple):
    """A recipe's run as rendered: the DGD it deploys, a dict, and the arguments of its pipeline template (all
    strings, as Argo parameters are), whose `dgd` is that DGD serialised once. A renderer needs both
    (workflows/render.py writes the DGD beside the Workflow)."""

    dgd: dict[str, Any]
    arguments: dict[str, str]


def recipe_run(
    r: ResolvedRecipe,
    settings: ClusterSettings,
    *,
    dgd_api: str = "v1beta1",
    points: list[Point] | None = None,
    overrides: dict[str, str] | None = None,
) -> RecipeRun:
    """A run of `r`: its DGD and its pipeline template's arguments, `overrides` (`--set`) applied."""
    overrides = overrides or {}
    w = r.recipe.workload
    slo = {k: v for k, v in r.recipe.slo.model_dump().items() if v is not None}
    dgd = deployable_dgd(r, settings, api_version=dgd_api)
    args = pipeline_defaults(settings)
    args.update(
        {
            "recipe": r.name,
            "dgd-name": dgd_base_name(r.name),
            "dgd": "",  # the DGD's YAML, written below once its name is settled (the place keeps the order)
            "dgd-api-version": dgd_api,
            "model": r.model.id,
            "model-revision": r.model.revision,
            "draft-model": r.draft_model or "",
            "points": points_json(points if points is not None else recipe_points(r), settings),
            # a point with a budget is judged steady by the step too; a cluster's steps set no
            # INFERSWEEP_PLATFORM, so summarize judges by the default profile, and so does the step (env {})
            "workload": json.dumps(w.aiperf_workload() | step_steadiness(w.length(), env={}), separators=(",", ":")),
            "max-error-rate": str(w.max_error_rate),
            "point-timeout-s": str(w.point_timeout_s),
            "gpu-count": str(r.gpu_count),
            "slo": json.dumps(slo, separators=(",", ":")),
            "regression": json.dumps(r.recipe.regression.for_judge(), separators=(",", ":")),
            "context": json.dumps(recipe_context(r, settings), separators=(",", ":"), sort_keys=True),
            **guard_arguments(r, settings),
        }
    )
    for k, v in overrides.items():
        if k in LOCK_PARAMS:
            raise RecipeError(
                f"--set {k}: the GPU guard's locks follow from the recipe's GPU count and cannot be set; "
                "change gpu.count in the recipe or gpu_pools in params/cluster.yaml"
            )
        if k not in args:
            raise RecipeError(f"--set {k}: no such parameter; parameters are {sorted(set(args) - set(LOCK_PARAMS))}")
        args[k] = v
    if "dgd" in overrides:  # the user's own DGD, as text: read once
        dgd = yaml.safe_load(args["dgd"])
    else:
        if "dgd-name" in overrides:
            # deploy names the DGD from the YAML, wait-ready/teardown from dgd-name: keep them one name
            dgd["metadata"]["name"] = args["dgd-name"]
        args["dgd"] = yaml.safe_dump(dgd, sort_keys=False)
    if "points" in overrides:
        try:
            args["points"] = points_json(parse_points(args["points"]), settings)
        except PointError as e:
            raise RecipeError(f"--set points: {e}") from None
    return RecipeRun(dgd, args)


def recipe_points(r: ResolvedRecipe) -> list[Point]:
    """The recipe's sweep, each point `regression.repetitions` times (default 3) in interleaved rounds
    (infersweep.aiperf.point.repeated): a submitted run presents its numbers as results, so each carries the
    spread of its repetitions (a confidence interval, and the noise a regression verdict is judged against)."""
    return repeated(r.recipe.workload.points(), r.recipe.regression.repetitions)


def points_json(points: list[Point], settings: ClusterSettings | None = None) -> str:
    """The sweep's points as the `points` parameter, each with the AIPerf client's resources for its
    concurrency (steps_library.aiperf_resources) so the point pod asks for what it needs. Every item carries
    `request_rate` (0: closed loop) and `repetition` (0: the first): the point task reads {{item.request_rate}}
    and {{item.repetition}}, and Argo errors a node whose item lacks a key it names."""
    return json.dumps(
        [
            {
                **p.as_dict(),
                "repetition": p.repetition,
                **aiperf_resources(p.concurrency, settings.steps if settings else None),
            }
            for p in points
        ],
        separators=(",", ":"),
    )


def workflow_labels(r: ResolvedRecipe) -> dict[str, str]:
    """The DGD's labels plus model and GPU count, so `argo list -l infersweep.io/model=...` filters runs."""
    return {
        **recipe_labels(r),
        "infersweep.io/model": label_value(r.model.id),
        "infersweep.io/gpu-count": str(r.gpu_count),
    }


def recipe_workflow(
    r: ResolvedRecipe, args: dict[str, str], namespace: str, settings: ClusterSettings | None = None
) -> Workflow:
    """The Workflow a submit creates: it references the pipeline template, so the UI can resubmit it.

    It names the template and gives arguments only: the ServiceAccount and pod securityContext are the
    template's. A Workflow that set them beside `workflowTemplateRef` is errored by a controller in
    `templateReferencing: Strict`/`Secure` (argo-workflows v4.1.2 workflow/util/merge.go
    ValidateUserOverrides; workflows/strict.py). Its `spec.priority` (the GPU guard's queue order,
    workflows/gpu_guard.py submit_priority) is stamped by the submit, not here: a render is reproducible."""
    if settings is None:
        from infersweep.cluster_settings import load_cluster_settings

        settings = load_cluster_settings()
    return Workflow(
        generate_name=f"{r.name[:40]}-",
        namespace=namespace,
        labels=workflow_labels(r),
        workflow_template_ref=m.WorkflowTemplateRef(name=pipeline_name(r.recipe.engine, r.recipe.topology.mode)),
        arguments=args,
    )
