"""One reusable WorkflowTemplate per step (the pipeline's and the experiment's), built with Hera from the step's
declaration.

Each step is a container running `python -m steps.<module>` from the step image (or the AIPerf image for
benchmark points), declared once in infersweep/step_declarations.py: its inputs, container args and outputs
follow from that declaration, as does the step's own argparse parser. A pipeline composes the templates
through `step_task` (a `templateRef` whose arguments are checked against the step's inputs), so an
operator installs them once and every recipe reuses them.

Every step template carries what a cluster enforces (values in params/cluster.yaml `steps`):
  * securityContext: the pod runs as the images' USER (1000, images/*.Dockerfile) with runAsNonRoot and
    seccomp RuntimeDefault, each container with allowPrivilegeEscalation false and every capability
    dropped, the root filesystem read-only where the step writes nothing outside its volumes; so a
    namespace enforcing Pod Security "restricted" admits every pod (tests/house/test_pod_security.py).
  * resources (requests = limits for memory; AIPerf sized from the point's concurrency, see
    `aiperf_resources`), and activeDeadlineSeconds per step, so a hung step ends on its own.
  * retries by exit code on transient steps only: `retryPolicy: Always` with `expression` on exit code 75
    or an Error (steps/transient.py explains the Argo rule; OnError never retries a non-zero exit); every
    step exits through the one runner, steps/runner.py, which alone maps its errors to exit codes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hera.workflows import Artifact, Container, Parameter, Task, WorkflowTemplate
from hera.workflows import models as m

if TYPE_CHECKING:  # annotations only: the settings are loaded where needed
    from infersweep.cluster_settings import ClusterSettings, StepSettings

from infersweep.platform.select import PROMETHEUS_ENV
from infersweep.step_declarations import (  # noqa: F401
    DECLARED,
    DEPLOY,
    DEPLOYED_DGD,
    IMAGES_RAN,
    MODEL_CACHE,
    MODEL_COMMIT,
    NOT_SERVING,
    READY_FILE,
    RUN_DIR,
    WORKDIR,
)
from infersweep.step_interface import OUT, WORKFLOW_NAMESPACE, Step, input_ref  # noqa: F401

STEP_PREFIX = "infersweep-"
TRANSIENT_EXIT = 75  # steps/transient.py
# Argo v4.1.2 workflow/controller/operator.go processNodeRetries + buildRetryStrategyLocalScope:
# `lastRetry.exitCode` is a string ("-1" when the pod left none), `lastRetry.status` the node phase.
TRANSIENT_RETRY_EXPRESSION = f'lastRetry.status == "Error" || asInt(lastRetry.exitCode) == {TRANSIENT_EXIT}'


@dataclass(frozen=True)
class Images:
    steps: str
    aiperf: str


# The steps with a WorkflowTemplate of their own, in install order (declared in infersweep/step_declarations.py).
STEPS: list[Step] = [s for s in DECLARED if s.template]
STEP_BY_NAME = {s.name: s for s in STEPS}
SECRETS = {"hf-token": "hf-token-secret", "s3": "infersweep-s3"}


def step_template_name(step: Step) -> str:
    return STEP_PREFIX + step.name


def _mounts(step: Step) -> list[m.VolumeMount]:
    paths = {"workdir": WORKDIR, "model-cache": MODEL_CACHE}
    return [
        m.VolumeMount(name=v, mount_path=paths[v], read_only=True if v not in step.writes else None)
        for v in step.mounts
    ]


def step_settings(settings: ClusterSettings | None = None) -> StepSettings:
    """params/cluster.yaml `steps`: security identity, resources, deadlines and retries of step pods (a step
    without a deadline there gets its declaration's, infersweep/step_declarations.py)."""
    if settings is None:
        from infersweep.cluster_settings import load_cluster_settings

        settings = load_cluster_settings()
    return settings.steps


def pod_security_context(settings: StepSettings) -> m.PodSecurityContext:
    """Pod Security Standards "restricted" (kubernetes.io/docs/concepts/security/pod-security-standards):
    runAsNonRoot, a non-zero runAsUser, seccomp RuntimeDefault; fsGroup makes a fresh (root-owned) PVC
    writable by the images' USER."""
    sec = settings.security
    return m.PodSecurityContext(
        run_as_non_root=True,
        run_as_user=sec.run_as_user,
        run_as_group=sec.run_as_group,
        fs_group=sec.fs_group,
        seccomp_profile=m.SeccompProfile(type="RuntimeDefault"),
    )


def container_security_context(read_only_root: bool) -> m.SecurityContext:
    # "restricted": allowPrivilegeEscalation false and capabilities drop ALL on every container.
    return m.SecurityContext(
        allow_privilege_escalation=False,
        capabilities=m.Capabilities(drop=["ALL"]),
        read_only_root_filesystem=read_only_root,
        run_as_non_root=True,
    )


def _resources(cpu: str, memory: str) -> m.ResourceRequirements:
    # Memory limit = request (an OOM is the step's own, never a neighbour's); no CPU limit (throttling a
    # client or an uploader only makes the run slower, and for AIPerf it would skew the measurement).
    return m.ResourceRequirements(
        requests={"cpu": m.Quantity(cpu), "memory": m.Quantity(memory)}, limits={"memory": m.Quantity(memory)}
    )


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


def retry_max_duration_s(deadline_s: int, settings: StepSettings) -> int:
    """backoff.maxDuration for a step whose every attempt may run its whole deadline: (limit + 1) deadlines
    plus every backoff wait.

    Argo v4.1.2 (16a52d6) counts maxDuration from the *first* attempt's start: past it no retry starts ("Max
    duration limit exceeded", workflow/controller/operator.go processNodeRetries :1078-1092, and a backoff
    ending past it is not waited for, :1134-1137), and a retry that starts gets ARGO_DEADLINE = first start +
    maxDuration (:1146-1147, workflowpod.go getDeadline :993-1001), where argoexec kills it (executor.go
    monitorDeadline). A fixed 10m therefore left a model-cache download (6 h deadline) no retry after its first
    10 minutes. An explicit `steps.retry.max_duration` still applies when it is longer."""
    r = settings.retry
    waits = sum(_duration_s(r.backoff) * float(r.factor) ** i for i in range(int(r.limit)))
    derived = (int(r.limit) + 1) * int(deadline_s) + math.ceil(waits)
    return max(derived, math.ceil(_duration_s(r.max_duration))) if r.max_duration else derived


def _duration_s(v: str) -> float:
    """Argo's wfv1.ParseStringToDuration: a bare number is seconds, else a Go duration ("10s", "1m30s"; the
    forms params/cluster.yaml's Duration accepts)."""
    import re

    s = str(v).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * units[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s))


# What deploy does after its lane wait: apply the DGD and save it (seconds, with room for a slow API server).
DEPLOY_AFTER_LANE_S = 120


def step_deadline_s(step: Step, settings: StepSettings) -> int:
    """The step pod's activeDeadlineSeconds (params/cluster.yaml steps.deadlines_s, else the declaration's).

    deploy's must outlast its lane wait (infersweep/platform/operations.py LANE_WAIT_S) plus the apply: with
    both at 600 s the kubelet killed the pod ("Pod was active on the node longer than the specified
    deadline") before LaneHeld could name the DGDs holding the lane, and the node failed without its reason."""
    d = int(settings.deadlines_s.get(step.name, step.deadline_s))
    if step.name == "deploy":
        from infersweep.params_files import RecipeError
        from infersweep.platform.operations import LANE_WAIT_S

        need = int(LANE_WAIT_S) + DEPLOY_AFTER_LANE_S
        if d < need:
            raise RecipeError(
                f"params/cluster.yaml steps.deadlines_s.deploy: {d} s is shorter than deploy's GPU-lane wait "
                f"({LANE_WAIT_S:.0f} s) plus {DEPLOY_AFTER_LANE_S} s to apply the DGD; set it to at least {need}"
            )
    return d


def _retry(settings: StepSettings, deadline_s: int) -> m.RetryStrategy:
    r = settings.retry
    return m.RetryStrategy(
        limit=str(r.limit),
        retry_policy="Always",
        expression=TRANSIENT_RETRY_EXPRESSION,
        backoff=m.Backoff(
            duration=r.backoff, factor=str(r.factor), max_duration=f"{retry_max_duration_s(deadline_s, settings)}s"
        ),
    )


def ensure_deployed_container(
    images: Images, read_only_root: bool = True, pinned: dict[str, str] | None = None, token: bool = False
) -> m.UserContainer:
    """The points' init container: bring the run's DGD back when it is missing (a UI Retry re-runs failed
    points but not deploy; steps/deploy.py --ensure), then wait until it serves. A no-op GET + readiness
    check on a first run."""
    return m.UserContainer(
        name="ensure-deployed",
        image=images.steps,
        command=["python", "-m", "steps.deploy"],
        args=DEPLOY.argv(
            {
                "ensure": True,
                "dgd_file": DEPLOYED_DGD,
                "namespace": WORKFLOW_NAMESPACE,
                "model": input_ref("model"),
                "timeout_s": input_ref("ready-timeout-s"),
            }
        ),
        volume_mounts=[m.VolumeMount(name="workdir", mount_path=WORKDIR)]
        # the pod's token, in this container only (PodAccount.init_only)
        + ([m.VolumeMount(name=TOKEN_VOLUME, mount_path=TOKEN_PATH, read_only=True)] if token else []),
        env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1")]
        + [m.EnvVar(name=k, value=v) for k, v in (pinned or {}).items()],
        security_context=container_security_context(read_only_root),
        resources=_resources("100m", "256Mi"),
    )


def step_container(
    step: Step,
    images: Images,
    secrets: dict[str, str] | None = None,
    settings: StepSettings | None = None,
    s3_env: dict[str, str] | None = None,
    pinned: dict[str, str] | None = None,
    accounts: PodAccount | None = None,
) -> Container:
    secrets = secrets or SECRETS
    accounts = accounts or PodAccount(None, "")
    # An S3-compatible endpoint (MinIO: params/cluster.yaml s3.endpoint) reaches the S3 steps as env.
    s3_env = (s3_env or {}) if step.env_from_secret == "s3" else {}
    settings = settings or step_settings()
    env_from = None
    if step.env_from_secret:
        # Credentials reach the step only as env from a Secret: never as parameters, never in YAML.
        env_from = [m.EnvFromSource(secret_ref=m.SecretEnvSource(name=secrets[step.env_from_secret], optional=True))]
    if step.name == "aiperf-point":
        resources = _resources(input_ref("cpu"), input_ref("memory"))
    else:
        r = settings.resources_of(step.name)
        resources = _resources(r.cpu, r.memory)
    return Container(
        name=step.name,
        image=images.aiperf if step.image == "aiperf" else images.steps,
        command=["python", "-m", f"steps.{step.module}"],
        args=step.template_args(),
        inputs=[Parameter(name=n, description=d) for n, d in step.template_inputs()],
        outputs=[Parameter(name=n, value_from=m.ValueFrom(path=p)) for n, p in step.template_outputs()]
        + [Artifact(name=n, path=p, archive=m.ArchiveStrategy(none=m.NoneStrategy())) for n, p in step.artifacts]
        + [
            Artifact(name=n, path=p, optional=True, archive=m.ArchiveStrategy(none=m.NoneStrategy()))
            for n, p in step.template_optional_artifacts()
        ],
        volume_mounts=_mounts(step) or None,
        env_from=env_from,
        env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1")]
        + [m.EnvVar(name=k, value=v) for k, v in step.env.items()]
        + [m.EnvVar(name=k, value=v) for k, v in s3_env.items()]
        + [m.EnvVar(name=k, value=v) for k, v in pinned_env(step.name, pinned).items()],
        retry_strategy=_retry(settings, step_deadline_s(step, settings)) if step.retry else None,
        init_containers=[
            ensure_deployed_container(
                images, pinned=pinned_env("deploy", pinned), token=bool(accounts.init_only and accounts.account)
            )
        ]
        if step.name == "aiperf-point"
        else None,
        security_context=container_security_context(step.read_only_root),
        pod_security_context=pod_security_context(settings),
        resources=resources,
        # the cluster's deadline for the step (params/cluster.yaml steps.deadlines_s), else the declaration's
        active_deadline_seconds=step_deadline_s(step, settings),
        # Logs of every step pod go to the artifact repository: a finished run's logs outlive its pods.
        archive_location=m.ArtifactLocation(archive_logs=True),
        **accounts.template_fields(),
    )


@dataclass(frozen=True)
class PodAccount:
    """Which token a step pod holds. `account`: the step's own ServiceAccount (workflows/cluster.py
    STEP_RULES, for a step that calls the Kubernetes API). None: no token in the pod's containers
    (`automountServiceAccountToken: false`); Argo then needs `executor.serviceAccountName` (`executor`),
    whose token Secret it mounts into its own init and wait containers only, to report the outputs
    (argo-workflows v4.1.2 workflow/controller/workflowpod.go setupServiceAccount :1826-1857,
    newExecContainer :1314-1320). These are template-level fields, so they travel with the template through a
    templateRef and beat the Workflow's spec-level account (:1827-1830).

    `init_only`: the account's token reaches the init containers only (aiperf-point: its ensure-deployed init
    container calls the API, AIPerf in the main container does not): no automount, and a projected token
    volume (TOKEN_VOLUME) that only the init containers mount."""

    account: str | None
    executor: str
    init_only: bool = False

    def template_fields(self) -> dict[str, Any]:
        if self.account and not self.init_only:
            return {"service_account_name": self.account}
        if not self.executor:
            return {}  # a template rendered on its own (tests): the caller's account applies
        fields: dict[str, Any] = {
            "automount_service_account_token": False,
            "executor": m.ExecutorConfig(service_account_name=self.executor),
        }
        if self.account:
            fields |= {"service_account_name": self.account, "volumes": [token_volume()]}
        return fields


TOKEN_VOLUME = "kube-api-access"
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"  # where the kubernetes client's in-cluster config reads


def token_volume() -> m.Volume:
    """The volume the ServiceAccount admission plugin adds for an automounted token, spelled out so that one
    container can mount it (kubernetes.io/docs/reference/access-authn-authz/service-accounts-admin/ "Bound
    service account token volume"): a bound, expiring token of the pod's own account, the cluster CA from the
    kube-root-ca.crt ConfigMap, the namespace from the downward API."""
    return m.Volume(
        name=TOKEN_VOLUME,
        projected=m.ProjectedVolumeSource(
            sources=[
                m.VolumeProjection(
                    service_account_token=m.ServiceAccountTokenProjection(path="token", expiration_seconds=3607)
                ),
                m.VolumeProjection(
                    config_map=m.ConfigMapProjection(
                        name="kube-root-ca.crt", items=[m.KeyToPath(key="ca.crt", path="ca.crt")]
                    )
                ),
                m.VolumeProjection(
                    downward_api=m.DownwardAPIProjection(
                        items=[
                            m.DownwardAPIVolumeFile(
                                path="namespace",
                                field_ref=m.ObjectFieldSelector(api_version="v1", field_path="metadata.namespace"),
                            )
                        ]
                    )
                ),
            ]
        ),
    )


def step_pod_account(step: str, settings: ClusterSettings) -> PodAccount:
    from workflows.cluster import INIT_ONLY, step_account

    return PodAccount(step_account(settings, step), settings.service_account, init_only=step in INIT_ONLY)


# Values a step takes from the installed settings, fixed in its template's env: a Workflow that references
# the template can change its parameters but not its container (templateReferencing Strict/Secure), so a
# submitter cannot widen them (docs/security.md). deploy/wait-ready (and the points' ensure-deployed init
# container): the DGD policy; scrape: the one Prometheus it may query.
PINNED_BY_STEP = {
    "deploy": ("INFERSWEEP_DGD_POLICY",),
    "wait-ready": ("INFERSWEEP_DGD_POLICY",),
    "scrape": (PROMETHEUS_ENV,),
}


def pinned_values(settings: ClusterSettings) -> dict[str, str]:
    from infersweep.platform.dgd_policy import POLICY_ENV, DgdPolicy

    return {POLICY_ENV: DgdPolicy.from_settings(settings).to_json(), PROMETHEUS_ENV: settings.prometheus_url}


def pinned_env(step: str, pinned: dict[str, str] | None) -> dict[str, str]:
    return {k: pinned[k] for k in PINNED_BY_STEP.get(step, ()) if pinned and k in pinned}


def step_task(step: str, **task: Any) -> Task:
    """A DAG task that runs the step's WorkflowTemplate (by templateRef). Its `arguments` must be exactly
    the step's inputs (Step.check_arguments: Argo would ignore a misspelt one and fail a missing one only
    when the task runs)."""
    if step not in STEP_BY_NAME:
        raise ValueError(f"no step {step!r}; steps are {sorted(STEP_BY_NAME)}")
    spec = STEP_BY_NAME[step]
    spec.check_arguments(task.get("arguments") or {})
    return Task(template_ref=m.TemplateRef(name=step_template_name(spec), template=spec.name), **task)


def step_workflow_templates(
    images: Images, labels: dict[str, str] | None = None, settings: ClusterSettings | None = None
) -> list[WorkflowTemplate]:
    if settings is None:
        from infersweep.cluster_settings import load_cluster_settings

        settings = load_cluster_settings()
    steps = step_settings(settings)
    # The Secret names of params/cluster.yaml (they were the defaults' names whatever the file said).
    secrets = {"hf-token": settings.hf_token_secret, "s3": settings.s3.credentials_secret}
    s3_env = {
        k: v
        for k, v in (("AWS_ENDPOINT_URL", settings.s3.endpoint_url), ("AWS_DEFAULT_REGION", settings.s3.region))
        if v
    }
    wts = []
    for step in STEPS:
        # The spec-level ServiceAccount and securityContext apply when someone submits a step template on
        # its own (`argo submit --from workflowtemplate/...`); through templateRef the caller's apply.
        with WorkflowTemplate(
            name=step_template_name(step),
            labels={"app.kubernetes.io/managed-by": "infersweep", "infersweep.io/kind": "step", **(labels or {})},
            service_account_name=settings.service_account,
            security_context=pod_security_context(steps),
        ) as wt:
            step_container(
                step,
                images,
                secrets=secrets,
                settings=steps,
                s3_env=s3_env,
                pinned=pinned_values(settings),
                accounts=step_pod_account(step.name, settings),
            )
        wts.append(wt)
    return wts
