"""The phases every local driver shares: `run --local` (run.py), `experiment run --local` (experiment_run.py),
the launcher (launcher_run.py) and, for its deployment and GPU side, `slo-search --local` (slo_search.py).

- the run folder: a new run's id, an earlier run's rendered workflow, the next attempt's id and folder;
- render: the documents written where `argo` would have them (rendered/), the ConfigMaps a cluster would hold,
  the interpreter of each step image;
- execute: the stand-ins for the cluster's services (S3, Prometheus), the steps' environment, the GPU side
  (NVML sampler, the words that say what ran), and whatever happens, every process of the run stopped.
(scale.py cuts the recipe to this machine; publish.py keeps what a run published.)
"""

from __future__ import annotations

import os
import sys
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator

import yaml

from infersweep.cluster_settings import ClusterSettings
from infersweep.local.dynamo import procs
from infersweep.local.dynamo.adapter import step_env
from infersweep.local.executor import ARTIFACT_BUCKET, StepServices
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.standins.prometheus import BINARY as PROMETHEUS_BINARY
from infersweep.local.standins.prometheus import LocalPrometheus, free_port
from infersweep.local.standins.s3server import LocalS3
from infersweep.names import dns_label
from infersweep.paths import venv_python
from infersweep.recipe import RecipeError, ResolvedRecipe

# ---------------------------------------------------------------- the run folder


def new_run_id(name: str) -> str:
    """`<name>-<UTC time>`: a new run's id and folder name."""
    return dns_label(f"{name[:40]}-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}")


def earlier_workflow(run_dir: Path, said: str, command: str = "run") -> dict[str, Any]:
    """The workflow an earlier `infersweep <command> --local` rendered into `run_dir`; `said`: how the user named
    the folder (`--resume runs/x`), for the error when it is not one."""
    first = Path(run_dir) / "rendered" / "workflow.yaml"
    if not first.is_file():
        raise RecipeError(
            f"{said}: not the folder of an `infersweep {command} --local` run "
            "(no rendered/workflow.yaml); give runs/<run-id>"
        )
    return yaml.safe_load(first.read_text())


def workflow_parameters(workflow: dict[str, Any]) -> dict[str, Any]:
    """A Workflow's arguments: name -> value."""
    return {p["name"]: p.get("value") for p in workflow["spec"]["arguments"]["parameters"]}


def next_attempt(run_dir: Path) -> tuple[str, str]:
    """(run id, rendered folder name) of the next attempt in an earlier run's folder: `<run>-rN`, `rendered-rN`
    (a new workflow on the same workdir, never over what the earlier attempts published)."""
    n = len(list(Path(run_dir).glob("rendered*"))) + 1
    return dns_label(f"{Path(run_dir).name[:56]}-r{n}"), f"rendered-r{n}"


# ---------------------------------------------------------------- render


def write_rendered(folder: Path, workflow: dict[str, Any], templates: list[dict[str, Any]], width: int = 80) -> None:
    """The documents as `argo submit` would be given them: <folder>/workflow.yaml and templates/<name>.yaml."""
    (folder / "templates").mkdir(parents=True, exist_ok=True)
    (folder / "workflow.yaml").write_text(yaml.safe_dump(workflow, sort_keys=False, width=width))
    for t in templates:
        (folder / "templates" / f"{t['metadata']['name']}.yaml").write_text(yaml.safe_dump(t, sort_keys=False))


def cluster_configmaps(
    settings: ClusterSettings, recipes: list[ResolvedRecipe], namespace: str
) -> dict[str, dict[str, str]]:
    """The ConfigMaps a cluster would hold for these recipes (`infersweep install`'s kubectl set), so the
    workflow's semaphores are honoured here exactly as there (a missing one fails the run at start)."""
    from workflows.cluster import kubectl_manifests

    return {
        f"{namespace}/{d['metadata']['name']}": {k: str(v) for k, v in (d.get("data") or {}).items()}
        for d in kubectl_manifests(settings, recipes)
        if d.get("kind") == "ConfigMap"
    }


def step_pythons(settings: ClusterSettings) -> dict[str, str]:
    """The interpreter each step image runs here: the steps' (this one) and AIPerf's venv."""
    return {settings.images.steps: sys.executable, settings.images.aiperf: venv_python("aiperf")}


# ---------------------------------------------------------------- execute


def local_prometheus(state_dir: Path, port: int | None = None) -> LocalPrometheus | None:
    """A real Prometheus scraping the local deployments (their deploy writes its targets file), on `port` (an
    earlier run's) or a free one; None where no binary is installed: no server metrics."""
    if not Path(PROMETHEUS_BINARY).exists():
        return None
    return LocalPrometheus(state_dir / "prometheus-targets.json", port=port or free_port())


@dataclass
class Services:
    """The stand-ins a local run talks to, as the steps' environment names them."""

    settings: ClusterSettings
    state_dir: Path  # the run's deployments: <state_dir>/dgd/<name>/
    s3: LocalS3
    prometheus: LocalPrometheus | None
    run_token: str | None  # procs.RUN_MARKER: this run's processes, whether their records survive or not

    def step_env(self, *, model_dir: Path, max_workers: int, gpu: GpuWorkers | None) -> dict[str, str]:
        """The environment every step runs with: this one's (HF_HUB_OFFLINE dropped: see AIPerf's note in
        steps.aiperf_point), the run's marker, S3's, and the local DGD adapter's (infersweep.local.dynamo.adapter)."""
        env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
        if self.run_token:
            env[procs.RUN_MARKER] = self.run_token
        prom_targets = self.prometheus.targets_file if self.prometheus else None
        return (
            env
            | self.s3.env()
            | step_env(
                state_dir=self.state_dir,  # the steps' DGD adapter: local
                model_dir=model_dir,
                max_workers=max_workers,
                prom_targets=prom_targets,
                gpu=gpu,
            )
        )

    def executor(self, c: Any, env: dict[str, str], recipes: list[ResolvedRecipe], namespace: str) -> StepServices:
        """What the executor runs a workflow of these recipes on (infersweep.local.executor.StepServices); `c`:
        the driver's options (cache_root, on_event, on_started), `env`: the steps' environment."""
        return StepServices(
            cache_root=c.cache_root.resolve(),
            pythons=step_pythons(self.settings),
            env=env,
            s3_client=self.s3.client(),
            configmaps=cluster_configmaps(self.settings, recipes, namespace),
            on_event=c.on_event,
            on_started=c.on_started,
        )


def stop_deployments(state_dir: Path) -> None:
    """Belt and braces: whatever the exit handlers did, no Dynamo process of the run outlives it."""
    for d in sorted((state_dir / "dgd").glob("*")) if (state_dir / "dgd").exists() else []:
        procs.stop_all(d)


@contextmanager
def local_services(
    settings: ClusterSettings,
    state_dir: Path,
    *,
    s3: LocalS3 | None = None,
    prometheus: LocalPrometheus | None = None,
    run_id: str | None = None,
) -> Iterator[Services]:
    """S3 (a given one is kept running after the run) and Prometheus started; on the way out, whatever happens,
    the run's deployments and processes stopped (with `run_id`, also those whose records went with a deleted run
    folder: procs.RUN_MARKER), then the services."""
    run_token = f"{run_id}-{uuid.uuid4().hex[:8]}" if run_id else None
    own_s3 = s3 is None
    s3 = s3 or LocalS3(buckets=[settings.s3.bucket, ARTIFACT_BUCKET])
    try:
        if own_s3:
            s3.start()
        if prometheus:
            try:
                prometheus.start()
            except (OSError, RuntimeError) as e:  # metrics enrich a run, they never stop one
                print(f"prometheus did not start, server metrics will be skipped: {e}", file=sys.stderr)
        yield Services(settings, state_dir, s3, prometheus, run_token)
    finally:
        stop_deployments(state_dir)
        if run_token:
            procs.stop_run_processes(run_token)  # and none whose records went with a deleted run folder
        if own_s3:
            s3.stop()
        if prometheus:
            prometheus.stop()


@contextmanager
def gpu_side(
    run_dir: Path, gpu: GpuWorkers | None, gpu_count: str | None, state_dir: Path, **stack: Any
) -> Iterator[dict[str, str]]:
    """With real engine workers: the NVML sampler for the run (stopped on the way out) and the environment that
    tells the steps what ran (infersweep.local.gpu.run.start_gpu_side; `stack`: its modules, versions,
    rendered_image). Nothing with mocker workers."""
    if gpu is None:
        yield {}
        return
    from infersweep.local.gpu.run import start_gpu_side

    sampler, env = start_gpu_side(run_dir, gpu, gpu_count, state_dir, **stack)
    try:
        yield env
    finally:
        if sampler is not None:
            sampler.stop()


def finish_gpu(run_dir: Path, state_dir: Path, gpu: GpuWorkers | None) -> None:
    """telemetry/startup.json of a GPU run (infersweep.local.gpu.run.write_gpu_record), once its workers stopped."""
    if gpu is not None:
        from infersweep.local.gpu.run import write_gpu_record

        write_gpu_record(run_dir, state_dir)


@dataclass
class RunFolder:
    """Where one attempt runs: runs/<run id>/ (or an earlier run's folder), its documents in `rendered`."""

    run_id: str
    run_dir: Path
    rendered: str = "rendered"  # rendered-rN for the Nth attempt in an earlier run's folder

    @property
    def state_dir(self) -> Path:
        return self.run_dir / "state"

    @property
    def rendered_dir(self) -> Path:
        return self.run_dir / self.rendered
