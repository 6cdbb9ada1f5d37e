"""One reusable WorkflowTemplate per pipeline step, built with Hera.

Each step is a container running `python -m steps.<module>` from the step image (or the AIPerf image for
benchmark points); a pipeline composes them through `templateRef`, so an operator installs them once and
every recipe reuses them. Paths under /work (the run's workdir volume) and /model-cache (the model-cache
PVC) are the only places steps read and write; the pipeline provides both volumes.

Every step template carries what a cluster enforces (values in params/cluster.yaml `steps`):
  * securityContext: the pod runs as the images' USER (1000, images/*.Dockerfile) with runAsNonRoot and
    seccomp RuntimeDefault, each container with allowPrivilegeEscalation false and every capability
    dropped, the root filesystem read-only where the step writes nothing outside its volumes; so a
    namespace enforcing Pod Security "restricted" admits every pod (tests/test_pod_security.py).
  * resources (requests = limits for memory; AIPerf sized from the point's concurrency, see
    `aiperf_resources`), and activeDeadlineSeconds per step, so a hung step ends on its own.
  * retries by exit code on transient steps only: `retryPolicy: Always` with `expression` on exit code 75
    or an Error (steps/transient.py explains the Argo rule; OnError never retries a non-zero exit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hera.workflows import Artifact, Container, Parameter, WorkflowTemplate
from hera.workflows import models as m

if TYPE_CHECKING:  # annotations only: the settings are loaded where needed
    from infersweep.cluster_settings import ClusterSettings, StepSettings

WORKDIR = "/work"
RUN_DIR = f"{WORKDIR}/run"
READY_FILE = "ready.json"  # wait-ready's time-to-ready record, read by infersweep.results.context
MODEL_CACHE = "/model-cache"
OUT = "/tmp/outputs"  # output parameters are small files the controller reads back
STEP_PREFIX = "infersweep-"
DEPLOYED_DGD = f"{RUN_DIR}/deploy/dgd.yaml"  # the DGD as deploy applied it (per-run name, owner)
IMAGES_RAN = f"{RUN_DIR}/context/images.json"  # infersweep.results.context.IMAGES_RAN_FILE
NOT_SERVING = f"{RUN_DIR}/deploy/not-serving.txt"  # why wait-ready failed, for the verdict
# The commit model-cache resolved, for summarize in the exit handler (which cannot read task outputs).
MODEL_COMMIT = f"{RUN_DIR}/context/model-commit.txt"
TRANSIENT_EXIT = 75  # steps/transient.py
# Argo v4.1.2 workflow/controller/operator.go processNodeRetries + buildRetryStrategyLocalScope:
# `lastRetry.exitCode` is a string ("-1" when the pod left none), `lastRetry.status` the node phase.
TRANSIENT_RETRY_EXPRESSION = f'lastRetry.status == "Error" || asInt(lastRetry.exitCode) == {TRANSIENT_EXIT}'


@dataclass(frozen=True)
class Images:
    steps: str
    aiperf: str


@dataclass(frozen=True)
class StepSpec:
    name: str
    module: str
    inputs: list[tuple[str, str]]  # (parameter, description)
    args: list[str]
    image: str = "steps"
    outputs: list[str] = field(default_factory=list)
    artifacts: list[tuple[str, str]] = field(default_factory=list)  # (name, path)
    # written only on some outcomes (a failure's debug bundle): Argo must not fail the step when absent
    optional_artifacts: list[tuple[str, str]] = field(default_factory=list)
    mounts: tuple[str, ...] = ("workdir",)
    env_from_secret: str | None = None
    retry: bool = False  # only steps whose failure is transient and whose rerun cannot lose a measurement
    deadline_param: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    # The container writes nothing outside its volumes (no output files under /tmp/outputs, no
    # matplotlib cache): its root filesystem can be read-only.
    read_only_root: bool = False


def _p(name: str) -> str:
    return "{{inputs.parameters.%s}}" % name


STEPS: list[StepSpec] = [
    StepSpec("ensure-pvc", "ensure_pvc",
             [("pvc", "model-cache PVC name"), ("size", "size if it must be created"),
              ("storage-class", "storage class if it must be created ('' = cluster default)")],
             ["--name", _p("pvc"), "--namespace", "{{workflow.namespace}}", "--size", _p("size"),
              "--storage-class", _p("storage-class")], mounts=(), retry=True, read_only_root=True),
    StepSpec("model-cache", "model_cache",
             [("model", "Hugging Face model id"), ("revision", "commit SHA to pin"),
              ("source", "'hf' or file:///path for a folder on the PVC"),
              ("draft-model", "speculative-decoding draft model to cache too ('' = none)")],
             ["--model-id", _p("model"), "--revision", _p("revision"), "--cache-dir", MODEL_CACHE,
              "--source", _p("source"), "--draft-model", _p("draft-model"), "--model-dir-param", f"{OUT}/model-dir",
              "--commit-param", f"{OUT}/commit", "--commit-file", MODEL_COMMIT],
             outputs=["model-dir", "commit"], mounts=("workdir", "model-cache"), env_from_secret="hf-token", retry=True),
    StepSpec("deploy", "deploy",
             [("dgd", "DynamoGraphDeployment YAML (renamed per run: infersweep.names.dgd_run_name)")],
             ["--dgd", _p("dgd"), "--namespace", "{{workflow.namespace}}", "--run-id", "{{workflow.name}}",
              "--owner-name", "{{workflow.name}}", "--owner-uid", "{{workflow.uid}}",
              "--url-param", f"{OUT}/frontend-url", "--save", DEPLOYED_DGD],
             outputs=["frontend-url"], retry=True),
    StepSpec("wait-ready", "wait_ready",
             [("dgd-name", "DGD name"), ("model", "model /v1/models must list"),
              ("timeout-s", "fail when not serving after this many seconds"),
              ("api-version", "DGD apiVersion (v1beta1 or v1alpha1)")],
             ["--name", _p("dgd-name"), "--run-id", "{{workflow.name}}", "--namespace", "{{workflow.namespace}}",
              "--model", _p("model"), "--timeout-s", _p("timeout-s"), "--api-version", _p("api-version"),
              "--bundle", f"{OUT}/debug-bundle.json", "--images", IMAGES_RAN, "--failure", NOT_SERVING,
              "--ensure-from", DEPLOYED_DGD, "--ready-file", f"{RUN_DIR}/{READY_FILE}"],
             optional_artifacts=[("debug-bundle", f"{OUT}/debug-bundle.json")]),
    StepSpec("aiperf-point", "aiperf_point",
             [("url", "frontend URL"), ("model", "served model name"), ("tokenizer", "tokenizer folder"),
              ("concurrency", "concurrent requests (a rate point's in-flight cap)"),
              ("request-rate", "requests/s of an open-loop point, 0 = closed loop (folder c<N>-rate<R>)"),
              ("requests", "profiled requests"),
              ("warmup", "warmup requests"), ("workload", "the workload as JSON (isl/osl, seq_dist, prefix, turns, trace)"),
              ("max-error-rate", "failed-request fraction still counted as measured"),
              ("timeout-s", "stop the point (gracefully) after this many seconds"),
              ("ready-timeout-s", "readiness timeout when the point must bring the deployment back (a UI Retry)"),
              ("cpu", "CPU the AIPerf client gets (sized from the concurrency: aiperf_resources)"),
              ("memory", "memory the AIPerf client gets (sized from the concurrency: aiperf_resources)")],
             ["--url", _p("url"), "--model", _p("model"), "--tokenizer", _p("tokenizer"),
              "--concurrency", _p("concurrency"), "--request-rate", _p("request-rate"), "--requests", _p("requests"), "--warmup", _p("warmup"),
              "--workload", _p("workload"), "--max-error-rate", _p("max-error-rate"),
              "--timeout-s", _p("timeout-s"), "--out", f"{RUN_DIR}/points/c{_p('concurrency')}",
              "--result-param", f"{OUT}/result"],
             # AIPerf sleeps a fixed 2 s per point to flush its own server-metrics scrape; the scrape step
             # reads Prometheus instead, so that wait is GPU time spent on nothing (benchmarks/aiperf_startup.py).
             env={"AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD": "0"},
             image="aiperf", outputs=["result"], mounts=("workdir", "model-cache")),
    StepSpec("scrape", "scrape",
             [("prometheus-url", "Prometheus base URL ('' skips server metrics)"),
              ("dgd-name", "DGD name: every query is scoped to it"),
              ("context", "the run's context as JSON (its gpu_type prices the GPU-hours)")],
             ["--run-dir", RUN_DIR, "--prometheus-url", _p("prometheus-url"), "--namespace", "{{workflow.namespace}}",
              "--dgd-name", _p("dgd-name"), "--run-id", "{{workflow.name}}", "--context", _p("context")],
             read_only_root=True),
    StepSpec("summarize", "summarize",
             [("gpu-count", "GPUs the deployment uses"), ("slo", "SLO bounds as JSON"), ("title", "plot title"),
              ("context", "the run's context as JSON (recipe hash, images, model revision, ...)")],
             ["--run-dir", RUN_DIR, "--gpu-count", _p("gpu-count"), "--slo", _p("slo"), "--title", _p("title"),
              "--run-id", "{{workflow.name}}", "--context", _p("context"), "--model-commit-file", MODEL_COMMIT],
             artifacts=[("results-csv", f"{RUN_DIR}/summary/results.csv"),
                        ("results-parquet", f"{RUN_DIR}/summary/results.parquet"),
                        ("results-md", f"{RUN_DIR}/summary/results.md")],
             # a run that measured nothing has no plot to draw
             optional_artifacts=[("pareto-png", f"{RUN_DIR}/summary/pareto.png"),
                                 ("report-html", f"{RUN_DIR}/summary/report.html")]),
    StepSpec("publish", "publish",
             [("bucket", "S3 bucket"), ("prefix", "S3 key prefix of this run")],
             [RUN_DIR, "--bucket", _p("bucket"), "--prefix", _p("prefix"), "--retry-prefix"], env_from_secret="s3", retry=True,
             read_only_root=True),
    StepSpec("regression-check", "regression_check",
             [("bucket", "S3 bucket of results and baselines"),
              ("baseline-prefix", "S3 prefix of the recipe's baseline run ('' skips the check)"),
              ("tolerances", "regression tolerances per metric as JSON (the recipe's regression section)")],
             ["--run-dir", RUN_DIR, "--bucket", _p("bucket"), "--baseline-prefix", _p("baseline-prefix"),
              "--tolerances", _p("tolerances"),
              "--report", f"{OUT}/regression.md"], env_from_secret="s3",
             optional_artifacts=[("regression-report", f"{OUT}/regression.md")]),
    StepSpec("verdict", "verdict",
             [("points", "the sweep's points as JSON")],
             ["--run-dir", RUN_DIR, "--points", _p("points")], read_only_root=True),
    StepSpec("teardown", "teardown",
             [("dgd-name", "DGD base name"), ("api-version", "DGD apiVersion (v1beta1 or v1alpha1)")],
             ["--name", _p("dgd-name"), "--run-id", "{{workflow.name}}", "--owner-uid", "{{workflow.uid}}",
              "--namespace", "{{workflow.namespace}}", "--api-version", _p("api-version")],
             mounts=(), retry=True, read_only_root=True),
]
STEP_BY_NAME = {s.name: s for s in STEPS}
SECRETS = {"hf-token": "hf-token-secret", "s3": "infersweep-s3"}


def step_template_name(step: StepSpec) -> str:
    return STEP_PREFIX + step.name


def _mounts(step: StepSpec) -> list[m.VolumeMount]:
    paths = {"workdir": WORKDIR, "model-cache": MODEL_CACHE}
    return [m.VolumeMount(name=v, mount_path=paths[v]) for v in step.mounts]


def step_settings(settings: ClusterSettings | None = None) -> StepSettings:
    """params/cluster.yaml `steps`: security identity, resources, deadlines and retries of step pods; every
    step of STEPS must have a deadline (ClusterSettingsError naming the missing ones)."""
    if settings is None:
        from infersweep.cluster_settings import load_cluster_settings

        settings = load_cluster_settings()
    missing = settings.steps.missing_deadlines([s.name for s in STEPS])
    if missing:
        from infersweep.cluster_settings import ClusterSettingsError

        raise ClusterSettingsError("\n".join(f"params/cluster.yaml: {line}" for line in missing))
    return settings.steps


def pod_security_context(settings: StepSettings) -> m.PodSecurityContext:
    """Pod Security Standards "restricted" (kubernetes.io/docs/concepts/security/pod-security-standards):
    runAsNonRoot, a non-zero runAsUser, seccomp RuntimeDefault; fsGroup makes a fresh (root-owned) PVC
    writable by the images' USER."""
    sec = settings.security
    return m.PodSecurityContext(run_as_non_root=True, run_as_user=sec.run_as_user, run_as_group=sec.run_as_group,
                                fs_group=sec.fs_group, seccomp_profile=m.SeccompProfile(type="RuntimeDefault"))


def container_security_context(read_only_root: bool) -> m.SecurityContext:
    # "restricted": allowPrivilegeEscalation false and capabilities drop ALL on every container.
    return m.SecurityContext(allow_privilege_escalation=False, capabilities=m.Capabilities(drop=["ALL"]),
                             read_only_root_filesystem=read_only_root, run_as_non_root=True)


def _resources(cpu: str, memory: str) -> m.ResourceRequirements:
    # Memory limit = request (an OOM is the step's own, never a neighbour's); no CPU limit (throttling a
    # client or an uploader only makes the run slower, and for AIPerf it would skew the measurement).
    return m.ResourceRequirements(requests={"cpu": m.Quantity(cpu), "memory": m.Quantity(memory)},
                                  limits={"memory": m.Quantity(memory)})


def aiperf_resources(concurrency: int, settings: StepSettings | None = None) -> dict[str, str]:
    """CPU and memory for an AIPerf point at `concurrency`, so the client is never the bottleneck.

    AIPerf 0.13 (aiperf/workers/worker_manager.py WorkerManager.__init__) starts
    max(1, min(int(cpu_count * 0.75) - 1, MAX_WORKERS_CAP=32)) worker processes, capped at the
    concurrency, where cpu_count is the *node's* count (multiprocessing.cpu_count ignores cgroup limits),
    plus its control services and record processors. So: one core per two workers plus a base for the
    services, memory per worker plus a base; requests, so the scheduler finds the room.
    """
    a = (settings or step_settings()).aiperf
    workers = max(1, min(int(concurrency), a.max_workers))
    cpu = a.cpu_base + math.ceil(workers * a.cpu_per_worker)
    memory_mi = a.memory_base_mi + workers * a.memory_per_worker_mi
    return {"cpu": str(cpu), "memory": f"{memory_mi}Mi"}


def _retry(settings: StepSettings) -> m.RetryStrategy:
    r = settings.retry
    return m.RetryStrategy(limit=str(r.limit), retry_policy="Always", expression=TRANSIENT_RETRY_EXPRESSION,
                           backoff=m.Backoff(duration=r.backoff, factor=str(r.factor), max_duration=r.max_duration))


def ensure_deployed_container(images: Images, read_only_root: bool = True) -> m.UserContainer:
    """The points' init container: bring the run's DGD back when it is missing (a UI Retry re-runs failed
    points but not deploy; steps/deploy.py --ensure), then wait until it serves. A no-op GET + readiness
    check on a first run."""
    return m.UserContainer(
        name="ensure-deployed", image=images.steps, command=["python", "-m", "steps.deploy"],
        args=["--ensure", "--dgd-file", DEPLOYED_DGD, "--namespace", "{{workflow.namespace}}",
              "--model", _p("model"), "--timeout-s", _p("ready-timeout-s")],
        volume_mounts=[m.VolumeMount(name="workdir", mount_path=WORKDIR)],
        env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1")],
        security_context=container_security_context(read_only_root),
        resources=_resources("100m", "256Mi"))


def step_container(step: StepSpec, images: Images, secrets: dict[str, str] | None = None,
                   settings: StepSettings | None = None) -> Container:
    secrets = secrets or SECRETS
    settings = settings or step_settings()
    env_from = None
    if step.env_from_secret:
        # Credentials reach the step only as env from a Secret: never as parameters, never in YAML.
        env_from = [m.EnvFromSource(secret_ref=m.SecretEnvSource(name=secrets[step.env_from_secret], optional=True))]
    if step.name == "aiperf-point":
        resources = _resources(_p("cpu"), _p("memory"))
    else:
        r = settings.resources_of(step.name)
        resources = _resources(r.cpu, r.memory)
    return Container(
        name=step.name,
        image=images.aiperf if step.image == "aiperf" else images.steps,
        command=["python", "-m", f"steps.{step.module}"],
        args=step.args,
        inputs=[Parameter(name=n, description=d) for n, d in step.inputs],
        outputs=[Parameter(name=o, value_from=m.ValueFrom(path=f"{OUT}/{o}")) for o in step.outputs]
        + [Artifact(name=n, path=p, archive=m.ArchiveStrategy(none=m.NoneStrategy())) for n, p in step.artifacts]
        + [Artifact(name=n, path=p, optional=True, archive=m.ArchiveStrategy(none=m.NoneStrategy()))
           for n, p in step.optional_artifacts],
        volume_mounts=_mounts(step) or None,
        env_from=env_from,
        env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1")] + [m.EnvVar(name=k, value=v) for k, v in step.env.items()],
        retry_strategy=_retry(settings) if step.retry else None,
        init_containers=[ensure_deployed_container(images)] if step.name == "aiperf-point" else None,
        security_context=container_security_context(step.read_only_root),
        pod_security_context=pod_security_context(settings),
        resources=resources,
        active_deadline_seconds=settings.deadlines_s[step.name],
        # Logs of every step pod go to the artifact repository: a finished run's logs outlive its pods.
        archive_location=m.ArtifactLocation(archive_logs=True),
    )


def step_workflow_templates(images: Images, labels: dict[str, str] | None = None,
                            settings: ClusterSettings | None = None) -> list[WorkflowTemplate]:
    if settings is None:
        from infersweep.cluster_settings import load_cluster_settings

        settings = load_cluster_settings()
    steps = step_settings(settings)
    wts = []
    for step in STEPS:
        # The spec-level ServiceAccount and securityContext apply when someone submits a step template on
        # its own (`argo submit --from workflowtemplate/...`); through templateRef the caller's apply.
        with WorkflowTemplate(name=step_template_name(step),
                              labels={"app.kubernetes.io/managed-by": "infersweep", "infersweep.io/kind": "step",
                                      **(labels or {})},
                              service_account_name=settings.service_account,
                              security_context=pod_security_context(steps)) as wt:
            step_container(step, images, settings=steps)
        wts.append(wt)
    return wts
