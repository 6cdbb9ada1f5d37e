"""Nightly regression: one CronWorkflow per recipe of the suite (params/cluster.yaml `nightly`).

Why one CronWorkflow per recipe, each with `workflowSpec.workflowTemplateRef` to its pipeline template,
rather than one suite workflow: a Workflow cannot call another WorkflowTemplate's *entrypoint* as a step
(templateRef reaches single templates, and the pipeline's DAG reads `workflow.parameters`, which belong to
the calling workflow), and a suite that creates child Workflows through a `resource` template needs the
steps' ServiceAccount to create Workflows, hides each run one level down, and makes a retry rerun the
whole suite. One CronWorkflow per recipe gives each night one ordinary pipeline Workflow per recipe: the UI
shows, retries and resubmits it like an ad-hoc run, `argo list -l infersweep.io/recipe=X` finds it, and
its last step (regression-check) compares it with `s3://<bucket>/<baselines_prefix>/<recipe>/`.

All of a suite's CronWorkflows fire at the same time on purpose: each run's GPU span holds the GPU guard
of its pool (workflows/gpu_guard.py, on the pipeline template), so the runs download in parallel, queue for
GPUs, and run as many at once as the pool holds; an ad-hoc submit queues behind the same guard. `concurrencyPolicy: Forbid`
skips a night whose previous run of that recipe is still going. The arguments (DGD included) are rendered
at install time: re-run `infersweep install` after changing a recipe.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hera.workflows import CronWorkflow
from hera.workflows import models as m

from infersweep.cluster_settings import ClusterSettings
from infersweep.recipe import ResolvedRecipe
from infersweep.step_declarations import REAP
from workflows.gpu_guard import nightly_priority
from workflows.pipeline import pipeline_name, recipe_run, workflow_labels
from workflows.steps_library import Images, container_security_context, pod_security_context, step_settings

SUCCESSFUL_HISTORY = 7
FAILED_HISTORY = 14  # failed nights are the ones someone investigates: keep two weeks of them
STARTING_DEADLINE_S = 6 * 3600  # a controller down at 01:00 still starts the night's run until 07:00


def cron_name(recipe: str) -> str:
    # Argo appends a timestamp to a CronWorkflow's runs, so it limits the name to 52 characters.
    name = f"nightly-{recipe}"
    if len(name) > 52:
        name = f"{name[:43].rstrip('-')}-{hashlib.sha256(recipe.encode()).hexdigest()[:8]}"
    return name


def nightly_cron(r: ResolvedRecipe, settings: ClusterSettings, dgd_api: str = "v1beta1") -> dict[str, Any]:
    nightly = settings.nightly
    # Each point `regression.repetitions` times (default 3), as every submitted run (pipeline.recipe_points):
    # the regression check judges a change against the spread of the repetitions
    # (infersweep.results.regression); one run per point leaves the noise unknown.
    args = recipe_run(
        r,
        settings,
        dgd_api=dgd_api,
        overrides={"baseline-prefix": f"{nightly.baselines_prefix}/{r.name}"},
    ).arguments
    labels = {**workflow_labels(r), "infersweep.io/suite": "nightly"}
    cron = CronWorkflow(
        name=cron_name(r.name),
        namespace=settings.namespace,
        labels=labels,
        schedules=list(nightly.schedules),
        timezone=nightly.timezone,
        concurrency_policy="Forbid",
        starting_deadline_seconds=STARTING_DEADLINE_S,
        successful_jobs_history_limit=SUCCESSFUL_HISTORY,
        failed_jobs_history_limit=FAILED_HISTORY,
        workflow_template_ref=m.WorkflowTemplateRef(name=pipeline_name(r.recipe.engine, r.recipe.topology.mode)),
        arguments=args,
        # Nothing beside the template reference that `templateReferencing: Strict` refuses (workflows/strict.py):
        # the ServiceAccount and securityContext are the pipeline template's. A distinct priority per suite
        # recipe, so the night's runs queue in one total order on every lock (workflows/gpu_guard.py).
        priority=nightly_priority(settings, r.name),
        workflow_metadata=m.WorkflowMetadata(labels=labels),  # the nightly's runs carry the recipe's labels
    )
    return cron.to_dict()


def nightly_crons(settings: ClusterSettings, load, dgd_api: str = "v1beta1") -> list[dict[str, Any]]:
    """The suite's CronWorkflows; `load` resolves a recipe name (infersweep.recipe.load_recipe); `dgd_api` the
    DGD apiVersion the cluster's operator serves (`infersweep install --dgd-api`)."""
    return [nightly_cron(load(name), settings, dgd_api) for name in settings.nightly.suite]


REAPER_NAME = "infersweep-reaper"


def reaper_template(settings: ClusterSettings, dgd_api: str = "v1beta1") -> dict[str, Any]:
    return reaper_workflow_template(settings, dgd_api).to_dict()


def reaper_workflow_template(settings: ClusterSettings, dgd_api: str = "v1beta1"):
    """The GPU reaper's WorkflowTemplate (what runs: its ServiceAccount, securityContext, the reap step);
    `reaper_cron` runs it. A CronWorkflow with inline templates is refused under `templateReferencing:
    Strict` (argo-workflows v4.1.2 workflow/controller/operator.go setExecWorkflow; workflows/strict.py).
    It lists the DGDs at `dgd_api`, the apiVersion `infersweep install --dgd-api` says the operator serves:
    an operator of Dynamo 0.9 or before serves only v1alpha1 (a v1beta1 list is a 404 there, and nothing would
    be reaped); the 1.3 and 1.6.1 operators serve both, converting, so either lists every DGD
    (params/engines/releases/*.yaml operator_serves, with their evidence)."""
    from hera.workflows import Container, WorkflowTemplate

    steps = step_settings(settings)
    images = Images(steps=settings.images.steps, aiperf=settings.images.aiperf)
    with WorkflowTemplate(
        name=REAPER_NAME,
        namespace=settings.namespace,
        labels={"app.kubernetes.io/managed-by": "infersweep", "infersweep.io/kind": "reaper"},
        entrypoint="reap",
        service_account_name=settings.reaper.service_account,
        security_context=pod_security_context(steps),
        active_deadline_seconds=600,
        pod_gc=m.PodGC(strategy="OnPodSuccess"),
        ttl_strategy=m.TTLStrategy(seconds_after_completion=3600),
        archive_logs=True,
    ) as wt:
        Container(
            name=REAP.name,
            image=images.steps,
            command=["python", "-m", f"steps.{REAP.module}"],
            args=REAP.template_args() + ["--api-version", dgd_api],
            env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1")],
            security_context=container_security_context(True),
            resources=m.ResourceRequirements(
                requests={"cpu": m.Quantity("100m"), "memory": m.Quantity("256Mi")},
                limits={"memory": m.Quantity("256Mi")},
            ),
            active_deadline_seconds=300,
            retry_strategy=m.RetryStrategy(
                limit="2",
                retry_policy="Always",
                expression='lastRetry.status == "Error" || asInt(lastRetry.exitCode) == 75',
                backoff=m.Backoff(duration="10s", factor="2"),
            ),
        )
    return wt


def reaper_cron(settings: ClusterSettings) -> dict[str, Any]:
    """The GPU reaper: every `reaper.schedule` (2 minutes), delete the DGDs whose Workflow is over.

    Why: `argo terminate` skips the exit handler (argo-workflows v4.1.2 workflow/controller/operator.go,
    operate(): the onExit node runs only when ShutdownStrategy.ShouldExecute(true), false for Terminate),
    so a terminated run's DGD would hold its GPUs until the Workflow is garbage-collected days later.
    `concurrencyPolicy: Replace` so a stuck reaper never blocks the next one; its own runs are kept one
    hour (ttl) and its pods deleted on success (the template's settings, reaper_template).
    """
    cron = CronWorkflow(
        name=REAPER_NAME,
        namespace=settings.namespace,
        labels={"app.kubernetes.io/managed-by": "infersweep", "infersweep.io/kind": "reaper"},
        schedules=[settings.reaper.schedule],
        timezone="Etc/UTC",
        concurrency_policy="Replace",
        starting_deadline_seconds=60,
        successful_jobs_history_limit=1,
        failed_jobs_history_limit=3,
        workflow_template_ref=m.WorkflowTemplateRef(name=REAPER_NAME),
    )
    return cron.to_dict()
