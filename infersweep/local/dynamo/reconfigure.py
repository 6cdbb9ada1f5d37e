"""Applying a DGD over a running local deployment the way the Dynamo operator would.

`infersweep.local.dynamo.adapter.LocalPlatform.apply_dgd` today returns the running deployment's URL when its processes
are alive, whatever the new DGD says: a patched DGD (an experiment's next treatment) would be ignored
locally while a cluster applies it. `apply_local` is the stand-in with the operator's semantics
(infersweep.experiment.restart.dgd_class, from Dynamo's worker-spec hash and rolling-update docs):

- LOAD (same spec): nothing happens;
- FRONTEND: only the frontend process is replaced, on the same port (the Service keeps its address);
  the mocker workers keep running and stay registered in the file discovery store;
- SCALE: the worker processes whose local worker count changes are restarted (locally a component is
  one mocker process running `num_workers` engines, so it cannot add one engine in place); a scale the
  local cap (max_workers_per_component) hides changes nothing; the frontend stays;
- WORKER: every worker process restarts (the operator rolls all workers together), the frontend stays;
- FULL: everything is stopped and the new DGD deployed afresh.
The last DGD applied is kept as dgd.json beside deployment.json so the next apply can be classified.
"""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

from infersweep.experiment.kv_reset import reset_token, without_reset
from infersweep.experiment.restart import RestartClass, dgd_class
from infersweep.local.dynamo import procs
from infersweep.local.dynamo.commands import dynamo_env, mocker_argv
from infersweep.local.dynamo.deploy import deploy_local, spawn_frontend, worker_count
from infersweep.local.dynamo.deployment import (
    DEPLOYMENT_FILE,
    LocalDeployment,
    LocalDeploymentError,
    UnownedDiscoveryEntries,
    load_local,
    teardown_local,
)
from infersweep.local.dynamo.dgd_reader import engine_of, read_components, router_mode_of
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.gpu.workers import GpuWorkers
from infersweep.local.toolchain import default_dynamo_python

DGD_FILE = "dgd.json"


def _stop(state_dir: Path, names: set[str], grace_s: float = 5) -> None:
    """Stop the named processes of a deployment and forget their records (the others keep running)."""
    with procs._locked(state_dir):
        records = procs.read_records(state_dir)
        chosen = [r for r in records if r["name"] in names]
        for r in chosen:
            procs._signal_group(r, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while any(procs.record_alive(r) for r in chosen) and time.monotonic() < deadline:
            time.sleep(0.05)
        for r in chosen:
            procs._signal_group(r, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while any(procs.record_alive(r) for r in chosen) and time.monotonic() < deadline:
            time.sleep(0.05)
        procs._write_records(state_dir, [r for r in records if r["name"] not in names])


def restart_local(
    state_dir: Path,
    *,
    why: str,
    max_workers_per_component: int = 2,
    python: str | None = None,
    gpu: GpuWorkers | None = None,
) -> LocalDeployment:
    """Stop every process of a deployment and start the DGD it last applied (dgd.json) afresh, on a new
    discovery store. Nothing of the given-up start is lost: its logs stay beside the new ones as
    `<name>.attempt<N>.log`, and `deployment.json` keeps when it started and why it was given up (`restarts`)."""
    state_dir = Path(state_dir).resolve()
    old = load_local(state_dir)
    dgd = json.loads((state_dir / DGD_FILE).read_text())
    teardown_local(state_dir)
    attempt = len(old.restarts) + 1
    kept = []
    for log in sorted((state_dir / "logs").glob("*.log")):
        if ".attempt" not in log.name:
            kept.append(str(log.rename(log.with_name(f"{log.stem}.attempt{attempt}.log"))))
    dep = deploy_local(
        dgd,
        model_dir=Path(old.model_dir),
        state_dir=state_dir,
        max_workers_per_component=max_workers_per_component,
        python=python,
        gpu=gpu,
        check_owners=old.check_owners,
    )
    dep.restarts = old.restarts + [{"started_at": old.created_at, "given_up_at": time.time(), "why": why, "logs": kept}]
    dep.save()
    return dep


# A fresh start whose discovery entries have no owner and no living writer (infersweep.local.dynamo.discovery_owners)
# is restarted this many times before the wait fails. Not for the lost entries of living workers: on the H200
# three restarts in a row each lost one again (benchmarks/measured/h200-2026-12-01/qwen3-32b-bf16-restarts).
RESTARTS_FOR_UNOWNED_ENTRIES = 2


def wait_ready_restarting(
    state_dir: Path,
    timeout_s: float,
    *,
    max_workers_per_component: int = 2,
    python: str | None = None,
    gpu: GpuWorkers | None = None,
    log=print,
) -> float:
    """wait_ready_local, restarting the deployment when its fresh discovery entries have no owner; returns
    the seconds it took, restarts included. An entry a living worker lost is kept by the deployment's
    discovery keeper (infersweep.local.dynamo.discovery_keeper) and never gets here; one nobody keeps expires at 10 s:
    measuring then would measure a deployment that loses a worker, or its KV-reset endpoint, mid-point. A
    restart registers everything afresh."""
    start = time.monotonic()
    for attempt in range(RESTARTS_FOR_UNOWNED_ENTRIES + 1):
        try:
            wait_ready_local(state_dir, max(1.0, timeout_s - (time.monotonic() - start)))
            return time.monotonic() - start
        except UnownedDiscoveryEntries as e:
            if attempt == RESTARTS_FOR_UNOWNED_ENTRIES:
                raise LocalDeploymentError(f"{e}\nstill so after {attempt} restart(s): not measuring it") from e
            name = Path(state_dir).name
            log(
                f"local deploy: {e}\nlocal deploy: restarting {name} ({attempt + 1} of "
                f"{RESTARTS_FOR_UNOWNED_ENTRIES}; the given-up start's logs are kept as *.attempt{attempt + 1}.log)"
            )
            restart_local(
                state_dir, why=str(e), max_workers_per_component=max_workers_per_component, python=python, gpu=gpu
            )
    raise AssertionError("unreachable")


def apply_local(
    dgd: dict,
    *,
    model_dir: Path,
    state_dir: Path,
    max_workers_per_component: int = 2,
    python: str | None = None,
    gpu: GpuWorkers | None = None,
) -> tuple[LocalDeployment, RestartClass | None]:
    """Apply `dgd`; returns the deployment and what the apply did (None: created afresh).

    With real engine workers (`gpu`) a frontend swap keeps the workers, as with mockers; a worker or
    scale change restarts the whole deployment (every engine reloads and compiles: what the operator's
    rolling restart of all workers costs on a cluster)."""
    state_dir = Path(state_dir).resolve()
    prev_file = state_dir / DGD_FILE
    running = (state_dir / DEPLOYMENT_FILE).exists() and prev_file.exists() and procs.alive(state_dir)
    prev = json.loads(prev_file.read_text()) if running else None
    # A KV-cache reset token (infersweep.experiment.kv_reset) alone would be a worker restart by the operator's
    # rule; here the caches are emptied in place instead, and the rest of the DGD decides the class.
    cls = dgd_class(without_reset(prev), without_reset(dgd)) if running else None
    wants_reset = running and reset_token(dgd) is not None and reset_token(dgd) != reset_token(prev)
    redeploy = (
        cls is None
        or cls is RestartClass.FULL
        or (gpu is not None and cls not in (RestartClass.LOAD, RestartClass.FRONTEND))
    )
    if redeploy:
        teardown_local(state_dir)
        dep = deploy_local(
            dgd,
            model_dir=model_dir,
            state_dir=state_dir,
            max_workers_per_component=max_workers_per_component,
            python=python,
            gpu=gpu,
        )
        prev_file.write_text(json.dumps(dgd))
        return dep, cls
    dep = load_local(state_dir)
    if cls is RestartClass.LOAD:
        if wants_reset:
            reset_kv_caches(
                dep, state_dir, gpu=gpu, dgd=dgd, max_workers_per_component=max_workers_per_component, python=python
            )
            dep = load_local(state_dir)
        prev_file.write_text(json.dumps(dgd))
        return dep, cls
    python = gpu.python if gpu else (python or default_dynamo_python())
    components = read_components(dgd)
    frontend = next((c for c in components if c.role == "frontend"), None)
    workers = [c for c in components if c.role != "frontend"]
    old = {c["name"]: c for c in dep.components}
    if cls is RestartClass.FRONTEND:
        restart = [frontend.name if frontend else "Frontend"]
    elif cls is RestartClass.SCALE:
        restart = [c.name for c in workers if worker_count(c, max_workers_per_component) != old[c.name]["num_workers"]]
    else:
        restart = [c.name for c in workers]
    _stop(state_dir, set(restart))
    env = dynamo_env(state_dir / "discovery", pin_loopback=gpu is None)
    group = procs.ProcessGroup(state_dir)
    port = int(dep.frontend_url.rsplit(":", 1)[1])
    for c, n, engine in _spawn_mockers(
        group,
        [c for c in workers if c.name in restart],
        dgd,
        env,
        state_dir,
        python=python,
        model_dir=Path(dep.model_dir),
        cap=max_workers_per_component,
    ):
        old[c.name] |= {"replicas": c.replicas, "num_workers": n, "engine": engine}
    if (frontend.name if frontend else "Frontend") in restart:
        spawn_frontend(group, frontend, env, python=python, http_port=port)
        dep.router_mode = router_mode_of(frontend)
    dep.components = [old[c["name"]] for c in dep.components]
    dep.processes = group.records()
    dep.save()
    if wants_reset:
        reset_kv_caches(
            dep, state_dir, gpu=gpu, dgd=dgd, max_workers_per_component=max_workers_per_component, python=python
        )
        dep = load_local(state_dir)
    prev_file.write_text(json.dumps(dgd))
    return dep, cls


def _spawn_mockers(
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


RESET_CLIENT = Path(__file__).with_name("kv_reset_client.py")


def reset_kv_caches(
    dep: LocalDeployment,
    state_dir: Path,
    *,
    gpu: GpuWorkers | None,
    dgd: dict,
    max_workers_per_component: int,
    python: str | None,
) -> None:
    """Empty every worker's KV cache, keeping the workers: real engines through their clear_kv_blocks
    endpoint (kv_reset_client.py run by the engine's interpreter on the deployment's discovery store);
    mocker workers, whose cache is only simulated, by a restart. Raises when a worker does not confirm."""
    import subprocess

    if gpu is None:
        components = [c for c in read_components(dgd) if c.role != "frontend"]
        _stop(state_dir, {c.name for c in components})
        group = procs.ProcessGroup(state_dir)
        _spawn_mockers(
            group,
            components,
            dgd,
            dynamo_env(state_dir / "discovery"),
            state_dir,
            python=python or default_dynamo_python(),
            model_dir=Path(dep.model_dir),
            cap=max_workers_per_component,
        )
        dep.processes = group.records()
        dep.save()
        print(
            f"local apply: KV caches reset (mocker workers restarted: {', '.join(c.name for c in components)})",
            flush=True,
        )
        return
    expected = sum(c.get("num_workers", 0) for c in dep.components)
    try:
        # -I: no script folder on sys.path, so nothing of infersweep/local/ (its dynamo/ room) shadows ai-dynamo's `dynamo`.
        proc = subprocess.run(
            [gpu.python, "-I", str(RESET_CLIENT), "--expect", str(expected)],
            env=dynamo_env(state_dir / "discovery", pin_loopback=False),
            capture_output=True,
            text=True,
            timeout=300,
        )
        ok, why = proc.returncode == 0, (proc.stderr.strip().splitlines() or ["?"])[-1]
        print(proc.stdout.strip(), flush=True)
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why = False, str(e)
    if not ok:
        # No endpoint answered: a restart empties the caches too (what a cluster does), at the cost of a
        # start. The treatment still begins on empty caches, never on the previous one's.
        print(
            f"local apply: KV cache reset through the workers' endpoint failed ({why}); restarting the "
            "deployment instead",
            flush=True,
        )
        teardown_local(state_dir)
        deploy_local(
            dgd,
            model_dir=Path(dep.model_dir),
            state_dir=state_dir,
            max_workers_per_component=max_workers_per_component,
            python=python,
            gpu=gpu,
        )
