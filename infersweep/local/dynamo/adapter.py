"""The local DGD adapter: a DGD realised as Dynamo processes on this machine, and the environment that selects it.

`infersweep run --local` (infersweep/local/run.py, experiment_run.py) gives every step it runs the
environment `step_env()` returns: the adapter to load (INFERSWEEP_PLATFORM_ADAPTER, a "module:attr" spec
that infersweep.platform.select.get_platform imports, so neither infersweep/platform nor steps/ imports
local mode) and this adapter's own settings, whose names are defined here and nowhere else; it also tells the
summarize step that results are simulated and where the deployments' timing is (infersweep.predict.source's
variable, so that module need not know this adapter's names or layout).
The Dynamo-process modules are imported where they are used: `step_env` and a teardown stay cheap.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from infersweep.platform.protocol import BadInput
from infersweep.platform.select import ADAPTER_ENV, LOCAL_WORKERS_ENV, PLATFORM_ENV
from infersweep.predict.source import SIMULATED_DEPLOYMENTS_ENV

if TYPE_CHECKING:
    from infersweep.local.dynamo.deployment import WorkerStart
    from infersweep.local.gpu.workers import GpuWorkers

NAME = "local"  # the value of INFERSWEEP_PLATFORM in local mode (selects the validity profile of that name)
STATE_ENV = "INFERSWEEP_LOCAL_STATE"  # where each deployment's processes are recorded: <state>/dgd/<name>/
MODEL_DIR_ENV = "INFERSWEEP_LOCAL_MODEL_DIR"  # the toy model the mocker workers serve
MAX_WORKERS_ENV = "INFERSWEEP_LOCAL_MAX_WORKERS"  # workers per component (local mode scales replicas down)
PROM_TARGETS_ENV = "INFERSWEEP_LOCAL_PROM_TARGETS"  # the local Prometheus's file_sd targets file (optional)
WORKERS_ENV = LOCAL_WORKERS_ENV  # mocker (default) | gpu: real engine workers on this machine's GPUs
WEIGHTS_ENV = "INFERSWEEP_LOCAL_WEIGHTS"  # gpu workers: dummy (random weights, real kernels) | cache
GPU_PYTHON_ENV = "INFERSWEEP_GPU_PYTHON"  # gpu workers: the interpreter with ai-dynamo + the engine
ENGINE_CACHE_ENV = "INFERSWEEP_ENGINE_CACHE"  # gpu workers: compile caches kept between runs
WORKER_KINDS = ("mocker", "gpu")
DEFAULT_MAX_WORKERS = 2


def deployments_dir(state_dir: Path) -> Path:
    """Where this adapter keeps each deployment's processes, logs and timing: <this>/<DGD name>/."""
    return Path(state_dir) / "dgd"


def step_env(
    *,
    state_dir: Path,
    model_dir: Path,
    max_workers: int,
    prom_targets: Path | None = None,
    gpu: "GpuWorkers | None" = None,
) -> dict[str, str]:
    """The environment the local executor gives every step: select this adapter and configure it, and say
    that the results are simulated (mocker workers) and where the deployments recorded their timing
    (infersweep.predict.source). With real engine workers (`gpu`) nothing is simulated."""
    env = {
        ADAPTER_ENV: f"{__name__}:from_env",
        STATE_ENV: str(state_dir),
        MODEL_DIR_ENV: str(model_dir),
        MAX_WORKERS_ENV: str(max_workers),
    } | platform_env(gpu)
    if gpu is None:
        env[SIMULATED_DEPLOYMENTS_ENV] = str(deployments_dir(state_dir))
    else:
        env |= {WEIGHTS_ENV: gpu.weights, GPU_PYTHON_ENV: gpu.python}
        if gpu.engine_cache:
            env[ENGINE_CACHE_ENV] = gpu.engine_cache
    if prom_targets:
        env[PROM_TARGETS_ENV] = str(prom_targets)
    return env


def platform_env(gpu: "GpuWorkers | None") -> dict[str, str]:
    """The part of step_env that says what the steps run on: this platform, the workers' kind and any fake GPUs.
    It selects the validity profile summarize judges by (infersweep.validity_thresholds.load_thresholds), so local
    mode renders the step's steadiness thresholds from it before the steps' environment exists."""
    env = {PLATFORM_ENV: NAME, WORKERS_ENV: "mocker" if gpu is None else "gpu"}
    if (
        gpu is not None and gpu.fake_gpu_type
    ):  # the steps' deploys find the same fake GPUs (infersweep.local.gpu.fake_gpu)
        from infersweep.local.gpu.fake_gpu import FAKE_GPU_ENV, FAKE_GPU_TYPE_ENV

        env |= {FAKE_GPU_ENV: str(len(gpu.gpus)), FAKE_GPU_TYPE_ENV: gpu.fake_gpu_type}
    return env


def gpu_workers_from_env(env: Mapping[str, str]) -> "GpuWorkers | None":
    kind = env.get(WORKERS_ENV) or "mocker"
    if kind not in WORKER_KINDS:
        raise BadInput(f"{WORKERS_ENV}={kind!r}: choose one of {', '.join(WORKER_KINDS)}")
    if kind == "mocker":
        return None
    from infersweep.local.gpu.fake_gpu import fake_gpu_count, fake_gpu_type
    from infersweep.local.gpu.workers import GpuWorkers

    if not env.get(GPU_PYTHON_ENV):
        raise BadInput(
            f"--workers gpu needs {GPU_PYTHON_ENV}: an interpreter with ai-dynamo and the engine "
            "(scripts/setup.sh --gpu builds .venv-gpu; an offline host: gpu-bundle's venv-site-vllm)"
        )
    return GpuWorkers(
        python=env[GPU_PYTHON_ENV],
        weights=env.get(WEIGHTS_ENV) or "dummy",
        engine_cache=env.get(ENGINE_CACHE_ENV) or None,
        fake_gpu_type=fake_gpu_type(env) if fake_gpu_count(env) else None,
    )


def from_env(environ: Mapping[str, str] | None = None) -> "LocalPlatform":
    """The adapter as `step_env()` configured it (the factory INFERSWEEP_PLATFORM_ADAPTER names)."""
    env = os.environ if environ is None else environ
    if not env.get(STATE_ENV):
        raise BadInput(f"the local adapter needs {STATE_ENV} (its state directory); infersweep run --local sets it")
    model_dir, targets = env.get(MODEL_DIR_ENV), env.get(PROM_TARGETS_ENV)
    return LocalPlatform(
        Path(env[STATE_ENV]),
        model_dir=Path(model_dir) if model_dir else None,
        max_workers=int(env.get(MAX_WORKERS_ENV) or DEFAULT_MAX_WORKERS),
        prom_targets=Path(targets) if targets else None,
        gpu=gpu_workers_from_env(env),
    )


class LocalPlatform:
    """A DGD realised as a Dynamo frontend + mocker workers on this machine (no GPU, no Kubernetes)."""

    def __init__(
        self,
        state_dir: Path,
        *,
        model_dir: Path | None = None,
        max_workers: int = 2,
        prom_targets: Path | None = None,
        gpu: "GpuWorkers | None" = None,
    ) -> None:
        self.gpu = gpu  # real engine workers on this machine's GPUs (None: mocker workers)
        self.state_dir = state_dir
        self.model_dir = model_dir  # the toy model the mocker workers serve (needed to apply a DGD)
        self.max_workers = max_workers  # per component: local mode scales a recipe's replicas down to this
        self.prom_targets = prom_targets  # the local Prometheus's file_sd targets (None: no Prometheus)

    def _start(self) -> "WorkerStart":
        from infersweep.local.dynamo.deployment import WorkerStart

        return WorkerStart(self.max_workers, gpu=self.gpu)

    def _dgd_dir(self, name: str) -> Path:
        return deployments_dir(self.state_dir) / name

    def ensure_pvc(
        self,
        name: str,
        namespace: str,
        size: str,
        storage_class: str,
        *,
        bound_timeout_s: float = 300.0,
        poll_s: float = 2.0,
    ) -> str:
        # Locally the "PVC" is a folder the runner mounts at the cache path; nothing to create.
        return "local"

    def apply_dgd(
        self, dgd: dict[str, Any], namespace: str, owner: dict[str, str] | None, *, patch_own: bool = True
    ) -> str:
        """Apply `dgd` as the operator would: created afresh when nothing runs; over a running deployment
        of the same name, reconciled by what changed (infersweep.local.dynamo.reconfigure.apply_local: same spec
        -> nothing, as for a retried deploy step; router -> frontend swap on the same port; engine
        arguments -> worker restart; model/TP/topology -> full redeploy). apply_local returns after the
        change is made, so the wait-ready that follows never sees the old processes as the new spec.
        `patch_own` (the cluster adapter's: patch a DGD this run already owns) changes nothing here: a
        running deployment of this run's name is this run's."""
        from infersweep.local.dynamo import procs
        from infersweep.local.dynamo.deployment import load_local, teardown_local
        from infersweep.local.dynamo.reconfigure import apply_local

        d = self._dgd_dir(dgd["metadata"]["name"])
        if (d / "deployment.json").exists():
            try:
                dep = load_local(d)
                healthy = bool(dep.processes) and all(procs.record_alive(r) for r in dep.processes)
            except Exception:
                healthy = False
            if not healthy:
                # A resumed run finds the deployment its first attempt tore down (or one with a dead
                # process): stop what is left and start afresh rather than hand out a dead URL.
                teardown_local(d)
        if self.model_dir is None:
            raise BadInput(
                f"the local adapter has no model directory: set {MODEL_DIR_ENV} (infersweep run --local "
                f"sets it for every step it runs)"
            )
        # No KEDA here: build and validate the ScaledObjects all the same, so a bad one fails locally too.
        from infersweep.platform.keda import scaled_objects
        from infersweep.schemas import validate_document

        for so in scaled_objects(dgd, namespace):
            validate_document(so)
        dep, cls = apply_local(dgd, model_dir=self.model_dir, state_dir=d, start=self._start())
        print(
            f"local apply: {'created' if cls is None else cls.label}; processes "
            + ", ".join(f"{r['name']}={r['pid']}" for r in dep.processes),
            flush=True,
        )
        if self.prom_targets:
            # The local Prometheus scrapes the frontend's /metrics from now on (file_sd, refreshed each second).
            # Target labels as Dynamo's PodMonitor dynamo-frontend gives a cluster's frontend (the Prometheus
            # Operator's namespace/pod, dynamo_namespace from the pod label the operator sets to
            # "<namespace>-<dgd>"): see params/metrics.yaml, so the same scoped queries work here.
            from infersweep.local.standins.prometheus import write_targets

            name = dgd["metadata"]["name"]
            # Real engine workers (--workers gpu) are scraped too, through their Dynamo system port, labelled as
            # Dynamo's PodMonitor dynamo-worker labels a cluster's (dynamo_component_type from the component's
            # role): the engine's own first-token histograms (params/metrics.yaml `engine`) then come from the
            # engine, not only from the frontend. The mocker's workers expose no engine series.
            workers = [
                (
                    [f"127.0.0.1:{w['system_port']}"],
                    {
                        "namespace": namespace,
                        "pod": f"{name}-{c['name'].lower()}-{w['name']}",
                        "dynamo_component_type": str(c.get("role") or "worker"),
                    },
                )
                for c in dep.components
                for w in c.get("workers", [])
                if w.get("system_port")
            ]
            write_targets(
                self.prom_targets,
                [dep.frontend_url.removeprefix("http://")],
                {"namespace": namespace, "dynamo_namespace": f"{namespace}-{name}", "pod": f"{name}-frontend-local"},
                more=workers,
            )
        return dep.frontend_url

    def wait_ready(
        self,
        name: str,
        namespace: str,
        model: str,
        timeout_s: float,
        *,
        api_version: str = "v1beta1",
        bundle_path: Path | None = None,
    ) -> float:
        # Local processes have no API objects to bundle: the runner keeps their logs under the run dir.
        from infersweep.local.dynamo import reconfigure

        return reconfigure.wait_ready_restarting(
            self._dgd_dir(name),
            timeout_s,
            start=self._start(),
            log=lambda line: print(line, flush=True),
        )

    def image_ids(self, name: str, namespace: str) -> dict[str, str]:
        return {}  # processes on this machine: no images, no digests

    def applied_at(self, name: str, namespace: str, api_version: str) -> float | None:
        """When the local deploy started the DGD's processes (deployment.json created_at)."""
        from infersweep.local.dynamo.deployment import load_local

        return load_local(self._dgd_dir(name)).created_at or None

    def list_dgds(self, namespace: str, api_version: str, label_selector: str) -> list[str]:
        # Local mode deploys one run at a time on this machine (no GPU pool shared between runs): no lane holder.
        return []

    def runtime_namespaces(self, name: str, namespace: str, api_version: str) -> dict[str, str]:
        return {}  # no operator: no per-generation worker namespaces (the scrape uses the base namespace)

    def delete_dgd(self, name: str, namespace: str, api_version: str, *, owner_uid: str = "") -> bool:
        from infersweep.local.dynamo.deployment import teardown_local

        d = self._dgd_dir(name)
        if not (d / "deployment.json").exists():
            return False
        teardown_local(d)
        return True
