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
import time
from pathlib import Path

from infersweep.experiment.kv_reset import reset_token, without_reset
from infersweep.experiment.restart import RestartClass, dgd_class
from infersweep.local.dynamo import procs
from infersweep.local.dynamo.command_lines import dynamo_env
from infersweep.local.dynamo.deploy import deploy_local, spawn_frontend, spawn_mockers, worker_count
from infersweep.local.dynamo.deployment import (
    DEPLOYMENT_FILE,
    MOCKERS,
    LocalDeployment,
    LocalDeploymentError,
    UnownedDiscoveryEntries,
    WorkerStart,
    load_local,
    teardown_local,
)
from infersweep.local.dynamo.dgd_reader import read_components, router_mode_of
from infersweep.local.dynamo.kv_reset import reset_kv_caches
from infersweep.local.dynamo.wait import wait_ready_local
from infersweep.local.toolchain import default_dynamo_python

DGD_FILE = "dgd.json"


def restart_local(
    state_dir: Path,
    *,
    why: str,
    start: WorkerStart = MOCKERS,
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
        max_workers_per_component=start.max_workers,
        python=start.python,
        gpu=start.gpu,
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
    start: WorkerStart = MOCKERS,
    log=print,
) -> float:
    """wait_ready_local, restarting the deployment when its fresh discovery entries have no owner; returns
    the seconds it took, restarts included. An entry a living worker lost is kept by the deployment's
    discovery keeper (infersweep.local.dynamo.discovery_keeper) and never gets here; one nobody keeps expires at 10 s:
    measuring then would measure a deployment that loses a worker, or its KV-reset endpoint, mid-point. A
    restart registers everything afresh."""
    t0 = time.monotonic()
    for attempt in range(RESTARTS_FOR_UNOWNED_ENTRIES + 1):
        try:
            wait_ready_local(state_dir, max(1.0, timeout_s - (time.monotonic() - t0)))
            return time.monotonic() - t0
        except UnownedDiscoveryEntries as e:
            if attempt == RESTARTS_FOR_UNOWNED_ENTRIES:
                raise LocalDeploymentError(f"{e}\nstill so after {attempt} restart(s): not measuring it") from e
            name = Path(state_dir).name
            log(
                f"local deploy: {e}\nlocal deploy: restarting {name} ({attempt + 1} of "
                f"{RESTARTS_FOR_UNOWNED_ENTRIES}; the given-up start's logs are kept as *.attempt{attempt + 1}.log)"
            )
            restart_local(state_dir, why=str(e), start=start)
    raise AssertionError("unreachable")


def apply_local(
    dgd: dict,
    *,
    model_dir: Path,
    state_dir: Path,
    start: WorkerStart = MOCKERS,
) -> tuple[LocalDeployment, RestartClass | None]:
    """Apply `dgd`; returns the deployment and what the apply did (None: created afresh).

    With real engine workers (`gpu`) a frontend swap keeps the workers, as with mockers; a worker or
    scale change restarts the whole deployment (every engine reloads and compiles: what the operator's
    rolling restart of all workers costs on a cluster)."""
    gpu, cap = start.gpu, start.max_workers
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
            max_workers_per_component=cap,
            python=start.python,
            gpu=gpu,
        )
        prev_file.write_text(json.dumps(dgd))
        return dep, cls
    dep = load_local(state_dir)
    if cls is RestartClass.LOAD:
        if wants_reset:
            reset_kv_caches(dep, state_dir, dgd=dgd, start=start)
            dep = load_local(state_dir)
        prev_file.write_text(json.dumps(dgd))
        return dep, cls
    python = gpu.python if gpu else (start.python or default_dynamo_python())
    components = read_components(dgd)
    frontend = next((c for c in components if c.role == "frontend"), None)
    workers = [c for c in components if c.role != "frontend"]
    old = {c["name"]: c for c in dep.components}
    if cls is RestartClass.FRONTEND:
        restart = [frontend.name if frontend else "Frontend"]
    elif cls is RestartClass.SCALE:
        restart = [c.name for c in workers if worker_count(c, cap) != old[c.name]["num_workers"]]
    else:
        restart = [c.name for c in workers]
    procs.stop_named(state_dir, set(restart))
    env = dynamo_env(state_dir / "discovery", pin_loopback=gpu is None)
    group = procs.ProcessGroup(state_dir)
    port = int(dep.frontend_url.rsplit(":", 1)[1])
    for c, n, engine in spawn_mockers(
        group,
        [c for c in workers if c.name in restart],
        dgd,
        env,
        state_dir,
        python=python,
        model_dir=Path(dep.model_dir),
        cap=cap,
    ):
        old[c.name] |= {"replicas": c.replicas, "num_workers": n, "engine": engine}
    if (frontend.name if frontend else "Frontend") in restart:
        spawn_frontend(group, frontend, env, python=python, http_port=port)
        dep.router_mode = router_mode_of(frontend)
    dep.components = [old[c["name"]] for c in dep.components]
    dep.processes = group.records()
    dep.save()
    if wants_reset:
        reset_kv_caches(dep, state_dir, dgd=dgd, start=start)
        dep = load_local(state_dir)
    prev_file.write_text(json.dumps(dgd))
    return dep, cls
