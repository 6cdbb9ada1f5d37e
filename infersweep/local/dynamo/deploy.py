"""Realise a DynamoGraphDeployment (DGD) on this machine: real Dynamo processes, no K8s.

Mocker workers (infersweep.local.dynamo.command_lines), or with `--workers gpu` one real engine process per replica
on its GPUs (infersweep.local.gpu.workers), behind one Dynamo frontend. The deploy does not wait: see
infersweep.local.dynamo.wait.
"""

from __future__ import annotations

import shutil
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from infersweep.local.dynamo import procs
from infersweep.local.dynamo.command_lines import (
    dynamo_env,
    engine_cache_env,
    free_port,
    frontend_argv,
    frontend_port,
    mocker_argv,
    publishes_kv_events,
)
from infersweep.local.dynamo.deployment import ADOPTIONS_FILE, DISCOVERY_KEEPER, LocalDeployment, LocalDeploymentError
from infersweep.local.dynamo.dgd_reader import Component, engine_of, read_components, router_mode_of, served_model_name
from infersweep.local.dynamo.toy_model import build_toy_model
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.toolchain import default_dynamo_python


def deploy_local(
    dgd: dict,
    *,
    model_dir: Path,
    state_dir: Path,
    max_workers_per_component: int = 2,
    python: str | None = None,
    gpu: GpuWorkers | None = None,
    check_owners: bool | None = None,
) -> LocalDeployment:
    """Start the frontend and one mocker process per worker component (or, with `gpu`, one real engine
    process per replica on its GPUs: infersweep.local.gpu.workers); do not wait for ready.

    `check_owners` (default: with `gpu`) makes wait_ready_local check, once it serves, that every discovery
    entry has a living owner (LocalDeployment.check_owners).

    `model_dir` is built as a toy model if it has no config.json. Raises if processes recorded
    under `state_dir` still run (teardown first); with `gpu`, raises GpuShortfall before starting
    anything when the workers do not fit the GPUs here.
    """
    python = gpu.python if gpu else (python or default_dynamo_python())
    if not (Path(python).exists() or shutil.which(python)):
        raise LocalDeploymentError(
            f"no Dynamo interpreter at {python}: create .venv-dynamo or set INFERSWEEP_DYNAMO_PYTHON"
        )
    state_dir, model_dir = Path(state_dir).resolve(), Path(model_dir).resolve()
    if procs.alive(state_dir):
        raise LocalDeploymentError(f"{state_dir} still has live processes; teardown_local first")
    procs.stop_all(state_dir)  # forget records of dead processes
    components = read_components(dgd)
    if not (model_dir / "config.json").exists():
        build_toy_model(model_dir)

    # Stale registrations of dead workers would be routed to: start from empty discovery.
    discovery_dir = state_dir / "discovery"
    shutil.rmtree(discovery_dir, ignore_errors=True)
    discovery_dir.mkdir(parents=True)
    logs = state_dir / "logs"
    env = dynamo_env(discovery_dir, pin_loopback=gpu is None)
    backend = (dgd.get("spec") or {}).get("backendFramework")

    frontend = next((c for c in components if c.role == "frontend"), None)
    workers = [c for c in components if c.role != "frontend"]
    # Clients ask for the decode/aggregated worker's name; prefill workers serve the same one.
    main = next((c for c in workers if c.role != "prefill"), workers[0])
    http_port = frontend_port(state_dir)
    deployment = LocalDeployment(
        name=(dgd.get("metadata") or {}).get("name", "dgd"),
        state_dir=str(state_dir),
        frontend_url=f"http://127.0.0.1:{http_port}",
        model_name=served_model_name(main),
        router_mode=router_mode_of(frontend),
        model_dir=str(model_dir),
        created_at=time.time(),
        check_owners=gpu is not None if check_owners is None else check_owners,
    )
    group = procs.ProcessGroup(state_dir)
    if gpu is not None:
        return _deploy_gpu(deployment, group, frontend, workers, env, gpu)
    with _starting(deployment, group, grace_s=2):
        if deployment.check_owners:
            _spawn_discovery_keeper(group, state_dir, env, logs)
        for comp in workers:
            num_workers = worker_count(comp, max_workers_per_component)
            engine = engine_of(comp, backend)
            argv = mocker_argv(
                comp,
                python=python,
                model_dir=model_dir,
                num_workers=num_workers,
                kv_router=router_mode_of(frontend) == "kv",
                engine=engine,
            )
            from infersweep.predict.local_timing import timing_table_args  # calibrated timing (issue 15)

            argv += timing_table_args(dgd, comp.role, state_dir)
            group.spawn(comp.name, argv, env, logs / f"{comp.name}.log", cwd=state_dir)
            deployment.components.append(component_record(comp, engine, num_workers))
        spawn_frontend(group, frontend, env, python=python, http_port=http_port)
    return deployment


def worker_count(comp: Component, cap: int) -> int:
    """The mocker workers a component runs here: its replicas (a multinode replica spans nodeCount pods; each
    counts as a worker here), at most `cap` (params/local.yaml max_workers_per_component)."""
    return max(1, min(comp.replicas * comp.node_count, cap))


@contextmanager
def _starting(deployment: LocalDeployment, group: "procs.ProcessGroup", *, grace_s: float) -> Iterator[None]:
    """Processes started inside: all stopped when one fails to start (or on Ctrl-C); else recorded in the
    deployment, which is saved (deployment.json)."""
    try:
        yield
    except BaseException:
        procs.stop_all(group.state_dir, grace_s=grace_s)
        raise
    deployment.processes = group.records()
    deployment.save()


def component_record(comp: Component, engine: str, num_workers: int) -> dict:
    """What deployment.json says one worker component realises (LocalDeployment.components)."""
    return {
        "name": comp.name,
        "role": comp.role,
        "engine": engine,
        "module": comp.module,
        "replicas": comp.replicas,
        "node_count": comp.node_count,
        "num_workers": num_workers,
        "model_name": served_model_name(comp),
        "kv_events": publishes_kv_events(comp),
    }


def spawn_frontend(
    group: "procs.ProcessGroup", frontend: Component | None, env: dict[str, str], *, python: str, http_port: int
) -> str:
    """Start the deployment's `dynamo.frontend` (named as the DGD's Frontend component); its name."""
    name = frontend.name if frontend else "Frontend"
    argv = frontend_argv(frontend, python=python, http_port=http_port)
    group.spawn(name, argv, env, group.state_dir / "logs" / f"{name}.log", cwd=group.state_dir)
    return name


def _spawn_discovery_keeper(group: "procs.ProcessGroup", state_dir: Path, env: dict[str, str], logs: Path) -> None:
    """The deployment's keeper of discovery entries its living workers lost (infersweep.local.dynamo.discovery_keeper:
    ai-dynamo 1.3.1's file store orphaned one in 5 of 5 H200 starts). A process of the deployment like the others:
    torn down with them, and its exit fails the wait like theirs."""
    from infersweep.local.dynamo import discovery_keeper

    (state_dir / ADOPTIONS_FILE).unlink(missing_ok=True)  # a fresh store: nothing of it adopted yet
    argv = [
        sys.executable,
        discovery_keeper.__file__,  # standard library only: runs as a script under the tool's interpreter
        "--store",
        str(state_dir / "discovery"),
        "--adoptions",
        str(state_dir / ADOPTIONS_FILE),
    ]
    group.spawn(DISCOVERY_KEEPER, argv, env, logs / f"{DISCOVERY_KEEPER}.log", cwd=state_dir)


def _deploy_gpu(
    deployment: LocalDeployment,
    group: "procs.ProcessGroup",
    frontend: Component | None,
    workers: list[Component],
    env: dict[str, str],
    gpu: GpuWorkers,
) -> LocalDeployment:
    """deploy_local with real engine workers: one process per replica on the GPUs the plan gives it."""
    from infersweep.local.gpu.fake_gpu import fake_gpu_count, fake_gpus
    from infersweep.local.gpu.workers import EngineLaunch, detect_gpus, engine_pythons, plan_workers

    if gpu.gpus:
        gpus = list(gpu.gpus)
    else:  # a step's deploy: the GPUs here, or the fake ones the run was started with
        gpus = fake_gpus(fake_gpu_count(), gpu.fake_gpu_type) if gpu.fake_gpu_type else detect_gpus()
    state_dir, model_dir, logs = Path(deployment.state_dir), Path(deployment.model_dir), group.state_dir / "logs"
    base_env = env | engine_cache_env(gpu.engine_cache) | {"HF_HOME": str(state_dir / "hf-home")}
    plan = plan_workers(
        workers,
        gpus,
        EngineLaunch(python=gpu.python, model_dir=str(model_dir), weights=gpu.weights, pythons=engine_pythons()),
        base_env=base_env,
        free_port=free_port,
        served_name_of=served_model_name,
    )
    with _starting(deployment, group, grace_s=10):
        # After the plan: a GpuShortfall above has started nothing, the keeper included.
        if deployment.check_owners:
            _spawn_discovery_keeper(group, state_dir, env, logs)
        by_name = {c.name: c for c in workers}
        runs = {w.name: w.argv for w in plan}
        if gpu.fake_gpu_type:
            # The last moment: the rendered engine command stays recorded (rendered_argv) as what would have run.
            runs = {w.name: fake_engine_argv(by_name[w.component], w.argv, model_dir, frontend) for w in plan}
        for w in plan:
            group.spawn(w.name, runs[w.name], w.env, logs / f"{w.name}.log", cwd=state_dir)
        for comp in workers:
            mine = [w for w in plan if w.component == comp.name]
            deployment.components.append(
                component_record(comp, engine_of(comp), len(mine))
                | {
                    "workers": [
                        {
                            "name": w.name,
                            "gpus": w.gpus,
                            "memory_fraction": w.memory_fraction,
                            "system_port": int(w.env["DYN_SYSTEM_PORT"]),
                            "kv_events_port": w.kv_events_port,
                            "weights": gpu.weights,
                        }
                        | (
                            {
                                "fake_gpu": True,
                                "rendered_argv": w.argv,
                                "cuda_visible_devices": w.env["CUDA_VISIBLE_DEVICES"],
                            }
                            if gpu.fake_gpu_type
                            else {}
                        )
                        for w in mine
                    ],
                }
            )
        http_port = int(deployment.frontend_url.rsplit(":", 1)[1])
        spawn_frontend(group, frontend, env, python=gpu.python, http_port=http_port)
    return deployment


def fake_engine_argv(comp: Component, rendered: list[str], model_dir: Path, frontend: Component | None) -> list[str]:
    """Under INFERSWEEP_FAKE_GPU: the rendered engine command of one replica replaced by Dynamo's mocker (one
    simulated engine, the component's engine flags translated) behind infersweep/local/gpu/fake_engine.py."""
    from infersweep.local.gpu.fake_gpu import engine_launcher

    python = default_dynamo_python()
    mocker = mocker_argv(
        comp,
        python=python,
        model_dir=Path(model_dir),
        num_workers=1,
        kv_router=router_mode_of(frontend) == "kv",
        engine=engine_of(comp),
    )
    return engine_launcher(comp.role, rendered, mocker, python=python)


def spawn_mockers(
    group: "procs.ProcessGroup",
    components: list,
    dgd: dict,
    env: dict[str, str],
    state_dir: Path,
    *,
    python: str,
    model_dir: Path,
    cap: int,
) -> list[tuple]:
    """Start one mocker process per component; (component, workers, engine) of each."""
    started = []
    for c in components:
        n = worker_count(c, cap)
        engine = engine_of(c, (dgd.get("spec") or {}).get("backendFramework"))
        group.spawn(
            c.name,
            mocker_argv(c, python=python, model_dir=model_dir, num_workers=n, engine=engine),
            env,
            state_dir / "logs" / f"{c.name}.log",
            cwd=state_dir,
        )
        started.append((c, n, engine))
    return started
