"""One reusable WorkflowTemplate per pipeline step, built with Hera.

Each step is a container running `python -m steps.<module>` from the step image (or the AIPerf image for
benchmark points); a pipeline composes them through `templateRef`, so an operator installs them once and
every recipe reuses them. Paths under /work (the run's workdir volume) and /model-cache (the model-cache
PVC) are the only places steps read and write; the pipeline provides both volumes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hera.workflows import Artifact, Container, Parameter, WorkflowTemplate
from hera.workflows import models as m

WORKDIR = "/work"
RUN_DIR = f"{WORKDIR}/run"
MODEL_CACHE = "/model-cache"
OUT = "/tmp/outputs"  # output parameters are small files the controller reads back
STEP_PREFIX = "infersweep-"


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


def _p(name: str) -> str:
    return "{{inputs.parameters.%s}}" % name


STEPS: list[StepSpec] = [
    StepSpec("ensure-pvc", "ensure_pvc",
             [("pvc", "model-cache PVC name"), ("size", "size if it must be created"),
              ("storage-class", "storage class if it must be created ('' = cluster default)")],
             ["--name", _p("pvc"), "--namespace", "{{workflow.namespace}}", "--size", _p("size"),
              "--storage-class", _p("storage-class")], mounts=(), retry=True),
    StepSpec("model-cache", "model_cache",
             [("model", "Hugging Face model id"), ("revision", "commit SHA to pin"),
              ("source", "'hf' or file:///path for a folder on the PVC"),
              ("draft-model", "speculative-decoding draft model to cache too ('' = none)")],
             ["--model-id", _p("model"), "--revision", _p("revision"), "--cache-dir", MODEL_CACHE,
              "--source", _p("source"), "--draft-model", _p("draft-model"), "--model-dir-param", f"{OUT}/model-dir", "--commit-param", f"{OUT}/commit"],
             outputs=["model-dir", "commit"], mounts=("model-cache",), env_from_secret="hf-token", retry=True),
    StepSpec("deploy", "deploy",
             [("dgd", "DynamoGraphDeployment YAML")],
             ["--dgd", _p("dgd"), "--namespace", "{{workflow.namespace}}", "--owner-name", "{{workflow.name}}",
              "--owner-uid", "{{workflow.uid}}", "--url-param", f"{OUT}/frontend-url"],
             outputs=["frontend-url"], mounts=(), retry=True),
    StepSpec("wait-ready", "wait_ready",
             [("dgd-name", "DGD name"), ("model", "model /v1/models must list"),
              ("timeout-s", "fail when not serving after this many seconds"),
              ("api-version", "DGD apiVersion (v1beta1 or v1alpha1)")],
             ["--name", _p("dgd-name"), "--namespace", "{{workflow.namespace}}", "--model", _p("model"),
              "--timeout-s", _p("timeout-s"), "--api-version", _p("api-version"),
              "--bundle", f"{OUT}/debug-bundle.json"], mounts=(),
             optional_artifacts=[("debug-bundle", f"{OUT}/debug-bundle.json")]),
    StepSpec("aiperf-point", "aiperf_point",
             [("url", "frontend URL"), ("model", "served model name"), ("tokenizer", "tokenizer folder"),
              ("concurrency", "concurrent requests (a rate point's in-flight cap)"),
              ("request-rate", "requests/s of an open-loop point, 0 = closed loop (folder c<N>-rate<R>)"),
              ("requests", "profiled requests"),
              ("warmup", "warmup requests"), ("workload", "the workload as JSON (isl/osl, seq_dist, prefix, turns, trace)"),
              ("max-error-rate", "failed-request fraction still counted as measured"),
              ("timeout-s", "stop the point (gracefully) after this many seconds")],
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
             [("prometheus-url", "Prometheus base URL ('' skips server metrics)")],
             ["--run-dir", RUN_DIR, "--prometheus-url", _p("prometheus-url")]),
    StepSpec("summarize", "summarize",
             [("gpu-count", "GPUs the deployment uses"), ("slo", "SLO bounds as JSON"), ("title", "plot title"),
              ("context", "the run's context as JSON (recipe hash, images, model revision, ...)"),
              ("model-commit", "the model commit the model-cache step resolved")],
             ["--run-dir", RUN_DIR, "--gpu-count", _p("gpu-count"), "--slo", _p("slo"), "--title", _p("title"),
              "--run-id", "{{workflow.name}}", "--context", _p("context"), "--model-commit", _p("model-commit")],
             artifacts=[("results-csv", f"{RUN_DIR}/summary/results.csv"),
                        ("results-parquet", f"{RUN_DIR}/summary/results.parquet"),
                        ("results-md", f"{RUN_DIR}/summary/results.md"),
                        ("pareto-png", f"{RUN_DIR}/summary/pareto.png"),
                        ("report-html", f"{RUN_DIR}/summary/report.html")]),
    StepSpec("publish", "publish",
             [("bucket", "S3 bucket"), ("prefix", "S3 key prefix of this run")],
             [RUN_DIR, "--bucket", _p("bucket"), "--prefix", _p("prefix")], env_from_secret="s3", retry=True),
    StepSpec("regression-check", "regression_check",
             [("bucket", "S3 bucket of results and baselines"),
              ("baseline-prefix", "S3 prefix of the recipe's baseline run ('' skips the check)"),
              ("tolerances", "regression tolerances per metric as JSON (the recipe's regression section)")],
             ["--run-dir", RUN_DIR, "--bucket", _p("bucket"), "--baseline-prefix", _p("baseline-prefix"),
              "--tolerances", _p("tolerances"),
              "--report", f"{OUT}/regression.md"], env_from_secret="s3",
             optional_artifacts=[("regression-report", f"{OUT}/regression.md")]),
    StepSpec("teardown", "teardown",
             [("dgd-name", "DGD name"), ("api-version", "DGD apiVersion (v1beta1 or v1alpha1)")],
             ["--name", _p("dgd-name"), "--namespace", "{{workflow.namespace}}", "--api-version", _p("api-version")],
             mounts=(), retry=True),
]
STEP_BY_NAME = {s.name: s for s in STEPS}
SECRETS = {"hf-token": "hf-token-secret", "s3": "infersweep-s3"}


def step_template_name(step: StepSpec) -> str:
    return STEP_PREFIX + step.name


def _mounts(step: StepSpec) -> list[m.VolumeMount]:
    paths = {"workdir": WORKDIR, "model-cache": MODEL_CACHE}
    return [m.VolumeMount(name=v, mount_path=paths[v]) for v in step.mounts]


def step_container(step: StepSpec, images: Images, secrets: dict[str, str] | None = None) -> Container:
    secrets = secrets or SECRETS
    env_from = None
    if step.env_from_secret:
        # Credentials reach the step only as env from a Secret: never as parameters, never in YAML.
        env_from = [m.EnvFromSource(secret_ref=m.SecretEnvSource(name=secrets[step.env_from_secret], optional=True))]
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
        retry_strategy=m.RetryStrategy(limit="2", retry_policy="OnError",
                                       backoff=m.Backoff(duration="10s", factor="2")) if step.retry else None,
    )


def step_workflow_templates(images: Images, labels: dict[str, str] | None = None) -> list[WorkflowTemplate]:
    wts = []
    for step in STEPS:
        with WorkflowTemplate(name=step_template_name(step),
                              labels={"app.kubernetes.io/managed-by": "infersweep", "infersweep.io/kind": "step",
                                      **(labels or {})}) as wt:
            step_container(step, images)
        wts.append(wt)
    return wts
