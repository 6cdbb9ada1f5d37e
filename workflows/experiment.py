"""One Argo Workflow per experiment, built with Hera from the installed step WorkflowTemplates (templateRef
by name, never copies) plus three small workdir steps of its own.

DAG, per treatment in plan order (infersweep.experiment.plan):
  [teardown of the previous deployment, on a full redeploy] -> deploy (apply the treatment's DGD: a new one
  on a full redeploy, else the same DGD patched, which the operator turns into a frontend swap, a scale or a
  worker restart, see infersweep.experiment.restart) -> wait-ready, with mark-start before the deploy and record-ready after (time-to-ready) ->
  sweep (the AIPerf points, one at a time, failFast off) -> summarize -> publish (to
  <prefix>/experiments/<experiment>/<workflow>/<treatment>) -> archive (the run folder moves to
  /work/treatments/<treatment>, since the step templates write one run to /work/run).
The next treatment starts when the previous one's archive has run, whatever happened before it (every
outcome, Omitted included: Argo's depends grammar, common.TaskResult in argo-workflows), so a failed
treatment does not stop the others. Then compare (infersweep.experiment.compare_step) writes the
experiment report and publish-report publishes it. The exit handler deletes every DGD the experiment
may have created (teardown is idempotent), and the Workflow holds the GPU guard's admission of its largest treatment (workflows/gpu_guard.py) for
its whole run, so no other workflow takes the GPUs between treatments.

Local mode runs this same document (infersweep/local/experiment_run.py). A patched DGD's readiness: the
wait-ready step ignores a status whose observedGeneration is below the DGD's generation
(infersweep/platform/readiness.py dgd_ready); the rolling update's own phase (status.rollingUpdate) is not read yet.
"""

from __future__ import annotations

import json
from typing import Any, Callable

import yaml
from hera.workflows import DAG, Container, Parameter, Task, Workflow
from hera.workflows import models as m

from infersweep.cluster_settings import ClusterSettings, Images
from infersweep.experiment.kv_reset import mark_reset
from infersweep.experiment.plan import Plan
from infersweep.experiment.restart import RestartClass
from infersweep.recipe import RecipeError, ResolvedRecipe
from infersweep.recipe.release import for_dgd_api
from infersweep.recipe_context import recipe_context
from workflows.gpu_guard import recipes_synchronization
from workflows.pipeline import points_json, spare_gpus
from workflows.dgd import default_surge_gpus, render_dgd
from workflows.steps_library import RUN_DIR, WORKDIR, step_task

TREATMENTS_DIR = f"{WORKDIR}/treatments"
ANY_OUTCOME = "(%s.Succeeded || %s.Failed || %s.Errored || %s.Skipped || %s.Omitted)"


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


def _workdir_container(name: str, images: Images, inputs: list[str], args: list[str]) -> Container:
    return Container(name=name, image=images.steps, command=["python", "-m", "infersweep.experiment.workdir_step"],
                     args=args, inputs=[Parameter(name=n) for n in inputs],
                     volume_mounts=[m.VolumeMount(name="workdir", mount_path=WORKDIR)])


def experiment_workflow(plan: Plan, settings: ClusterSettings, *, namespace: str | None = None,
                        dgd_api: str = "v1beta1", workdir_size: str = "50Gi", model_source: str = "hf",
                        ready_timeout_s: int = 1800,
                        treatment_args: Callable[[ResolvedRecipe], dict[str, str]] | None = None) -> Workflow:
    """`model_source`, `ready_timeout_s` and `treatment_args` (per treatment: "points", "workload",
    "gpu-count" replacing the recipe's) are how local mode scales the same workflow down
    (infersweep.local.experiment_run), as `run --local` overrides a recipe workflow's parameters."""
    e = plan.experiment
    gpu_types = {s.treatment.recipe.recipe.gpu.type for s in plan.steps}
    if len(gpu_types) > 1:
        raise RecipeError(f"{e.path}: treatments: they use GPU types {sorted(gpu_types)}; an experiment holds one "
                          "GPU pool, so give every treatment the same gpu.type")
    images = settings.images
    names = dgd_names(plan)
    s3 = settings.s3
    prefix = f"{s3.prefix}/experiments/{e.name}/{{{{workflow.name}}}}"
    points_s = sum(len(s.treatment.recipe.recipe.workload.concurrency) * s.treatment.recipe.recipe.workload.point_timeout_s
                   for s in plan.steps)
    with Workflow(
        generate_name=f"{e.name}-",
        namespace=namespace or settings.namespace,
        labels={"app.kubernetes.io/managed-by": "infersweep", "infersweep.io/kind": "experiment",
                "infersweep.io/experiment": e.name},
        entrypoint="experiment",
        on_exit="exit-handler",
        volume_claim_templates=[m.PersistentVolumeClaim(
            metadata=m.ObjectMeta(name="workdir"),
            spec=m.PersistentVolumeClaimSpec(access_modes=["ReadWriteOnce"], resources=m.VolumeResourceRequirements(
                requests={"storage": m.Quantity(workdir_size)})))],
        volumes=[m.Volume(name="model-cache", persistent_volume_claim=m.PersistentVolumeClaimVolumeSource(
            claim_name=settings.model_cache.pvc))],
        # Every point may run to its timeout, plus an hour per treatment for deploys and bookkeeping.
        active_deadline_seconds=points_s + 3600 * len(plan.steps),
        pod_gc=m.PodGC(strategy="OnPodSuccess"),
        ttl_strategy=m.TTLStrategy(seconds_after_completion=7 * 24 * 3600),
        service_account_name=settings.service_account,
        artifact_repository_ref=m.ArtifactRepositoryRef(config_map=settings.artifact_repository.configmap,
                                                        key=settings.artifact_repository.key),
        # The experiment holds its GPUs from the first deploy to the last teardown: the guard's admission of
        # its largest treatment, for the whole Workflow.
        synchronization=recipes_synchronization([s.treatment.recipe for s in plan.steps], settings),
    ) as wf:
        with DAG(name="sweep", parallelism=1, fail_fast=False,
                 inputs=[Parameter(name=n) for n in ("points", "url", "tokenizer", "model", "workload",
                                                     "max-error-rate", "timeout-s", "ready-timeout-s")]):
            step_task("aiperf-point", name="point", with_param="{{inputs.parameters.points}}",
                      arguments={"url": "{{inputs.parameters.url}}", "model": "{{inputs.parameters.model}}",
                                 "tokenizer": "{{inputs.parameters.tokenizer}}", "concurrency": "{{item.concurrency}}", "request-rate": "{{item.request_rate}}",
                                 "requests": "{{item.requests}}", "warmup": "{{item.warmup}}",
                                 "workload": "{{inputs.parameters.workload}}",
                                 "max-error-rate": "{{inputs.parameters.max-error-rate}}",
                                 "timeout-s": "{{inputs.parameters.timeout-s}}",
                                 # the point's ensure-deployed init container brings a deleted DGD back (UI Retry)
                                 "ready-timeout-s": "{{inputs.parameters.ready-timeout-s}}",
                                 "cpu": "{{item.cpu}}", "memory": "{{item.memory}}"})
        _workdir_container("mark-start", images, [], ["mark-start", "--out", RUN_DIR])
        _workdir_container("record-ready", images, [], ["record-ready", "--out", RUN_DIR])
        _workdir_container("verdict", images, ["points"],
                           ["verdict", "--treatments-dir", TREATMENTS_DIR, "--points", "{{inputs.parameters.points}}"])
        _workdir_container("archive", images, ["treatment"],
                           ["archive", "--run-dir", RUN_DIR, "--to", f"{TREATMENTS_DIR}/{{{{inputs.parameters.treatment}}}}"])
        Container(name="compare", image=images.steps, command=["python", "-m", "infersweep.experiment.compare_step"],
                  args=["--experiment", "{{inputs.parameters.experiment}}", "--treatments-dir", TREATMENTS_DIR,
                        "--out", RUN_DIR],
                  inputs=[Parameter(name="experiment")],
                  volume_mounts=[m.VolumeMount(name="workdir", mount_path=WORKDIR)])

        with DAG(name="exit-handler"):
            for name in dict.fromkeys(names):
                step_task("teardown", name=f"teardown-{name}",
                          arguments={"dgd-name": name, "api-version": dgd_api})

        with DAG(name="experiment"):
            pvc = step_task("ensure-pvc", name="ensure-pvc",
                            arguments={"pvc": settings.model_cache.pvc, "size": settings.model_cache.size,
                                       "storage-class": settings.model_cache.storage_class})
            caches: dict[tuple[str, str, str], str] = {}
            for s in plan.steps:
                r = s.treatment.recipe
                key = (r.model.id, r.model.revision, r.draft_model or "")
                if key not in caches:
                    caches[key] = f"model-cache-{len(caches)}"
                    step_task("model-cache", name=caches[key], depends="ensure-pvc",
                              arguments={"model": key[0], "revision": key[1], "source": model_source, "draft-model": key[2]})
            previous_end: str | None = None
            treatment_points: dict[str, str] = {}
            # The Workflow holds the admission of its largest treatment (recipes_synchronization); a treatment
            # patched in place rolls its workers within what is left of it. One choice for every treatment:
            # the rollout annotations are part of the pod template the worker hash covers, so a difference
            # between two treatments would itself roll the workers (infersweep.experiment.restart).
            treatments = [s.treatment.recipe for s in plan.steps]
            largest = max(treatments, key=lambda t: t.gpu_capacity)
            exact = any(default_surge_gpus(t) > spare_gpus(t, settings, largest) for t in treatments)
            for i, (s, dgd_name) in enumerate(zip(plan.steps, names)):
                r: ResolvedRecipe = for_dgd_api(s.treatment.recipe, dgd_api)  # its release's images
                t = f"t{i}"
                w = r.recipe.workload
                args = {"points": _compact(w.points()), "workload": _compact(w.aiperf_workload()),
                        "gpu-count": str(r.gpu_count)} | (treatment_args(r) if treatment_args else {})
                cache = caches[(r.model.id, r.model.revision, r.draft_model or "")]
                start_after = [cache] + ([_any(previous_end)] if previous_end else [])
                if s.transition.cls is RestartClass.FULL and i > 0:
                    step_task("teardown", name=f"{t}-teardown", depends=" && ".join(start_after),
                              arguments={"dgd-name": names[i - 1], "api-version": dgd_api})
                    start_after = [f"{t}-teardown"]
                Task(name=f"{t}-mark-start", template="mark-start", depends=" && ".join(start_after))
                dgd = render_dgd(r, api_version=dgd_api, name=dgd_name, pvc=settings.model_cache.pvc,
                                 hf_secret=settings.hf_token_secret, spare_gpus=0 if exact else None)
                if s.reset:  # empty the kept workers' KV caches first (infersweep.experiment.kv_reset)
                    dgd = mark_reset(dgd, str(i))
                step_task("deploy", name=f"{t}-deploy", depends=_any(f"{t}-mark-start"),
                          arguments={"dgd": yaml.safe_dump(dgd, sort_keys=False)})
                step_task("wait-ready", name=f"{t}-wait-ready", depends=f"{t}-deploy",
                          arguments={"dgd-name": dgd_name, "model": r.model.id, "timeout-s": str(ready_timeout_s),
                                     "api-version": dgd_api})
                Task(name=f"{t}-record-ready", template="record-ready", depends=f"{t}-wait-ready")
                Task(name=f"{t}-sweep", template="sweep", depends=f"{t}-wait-ready",
                     arguments={"points": points_json(json.loads(args["points"]), settings),
                                "ready-timeout-s": str(ready_timeout_s),
                                "url": f"{{{{tasks.{t}-deploy.outputs.parameters.frontend-url}}}}",
                                "tokenizer": f"{{{{tasks.{cache}.outputs.parameters.model-dir}}}}",
                                "model": r.model.id, "workload": args["workload"],
                                "max-error-rate": str(w.max_error_rate), "timeout-s": str(w.point_timeout_s)})
                slo = {k: v for k, v in r.recipe.slo.model_dump().items() if v is not None}
                # The summarize step accepts only the run-context keys it knows (steps/summarize.py
                # --context, infersweep.results.context): the treatment's recipe context, as a recipe run
                # has, plus the experiment, treatment, restart class and factor levels (also in the title and prefix),
                # and the commit its model cache resolved. That commit comes from the cache task's output, not
                # from the file model-cache writes into /work/run (MODEL_COMMIT, the pipeline's way): the file
                # leaves with the first treatment's archive, and with two models another cache may overwrite it.
                context = recipe_context(r, settings) | {
                    "experiment": e.name, "treatment": s.treatment.name, "restart_class": s.transition.cls.label,
                    "levels": s.treatment.levels, "model_commit": f"{{{{tasks.{cache}.outputs.parameters.commit}}}}",
                    "kv_cache_state": s.cache, "order_pass": s.order_pass, "base_treatment": s.base or s.treatment.name}
                step_task("summarize", name=f"{t}-summarize",
                          depends=f"{_any(f'{t}-sweep')} && {_any(f'{t}-record-ready')}",
                          arguments={"gpu-count": args["gpu-count"], "slo": _compact(slo), "title": s.treatment.name,
                                     "context": json.dumps(context, separators=(",", ":"), sort_keys=True)})
                step_task("publish", name=f"{t}-publish", depends=f"{t}-summarize",
                          arguments={"bucket": s3.bucket, "prefix": f"{prefix}/{s.treatment.name}"})
                Task(name=f"{t}-archive", template="archive", depends=_any(f"{t}-publish"),
                     arguments={"treatment": s.treatment.name})
                treatment_points[s.treatment.name] = args["points"]
                previous_end = f"{t}-archive"
            spec_text = e.path.read_text()
            compare = Task(name="compare", template="compare", depends=_any(previous_end),
                           arguments={"experiment": spec_text})
            step_task("publish", name="publish-report", depends="compare",
                      arguments={"bucket": s3.bucket, "prefix": f"{prefix}/report"})
            # The leaf that makes a failed treatment fail the Workflow (dag.go assessDAGPhase judges a DAG by
            # its leaves, and compare/publish-report succeed whatever the treatments did), after the report
            # is published.
            Task(name="verdict", template="verdict", depends=_any("publish-report"),
                 arguments={"points": _compact({s.treatment.name: json.loads(treatment_points[s.treatment.name])
                                                for s in plan.steps})})
            del pvc, compare
    return wf
