"""A running local deployment's KV caches emptied, keeping its workers: what an experiment's `kv_cache: reset`
asks between treatments (infersweep.experiment.kv_reset), applied by infersweep.local.dynamo.reconfigure.
"""

from __future__ import annotations

from pathlib import Path

from infersweep.local.dynamo import procs
from infersweep.local.dynamo.command_lines import dynamo_env
from infersweep.local.dynamo.deploy import deploy_local, spawn_mockers
from infersweep.local.dynamo.deployment import LocalDeployment, WorkerStart, teardown_local
from infersweep.local.dynamo.dgd_reader import read_components
from infersweep.local.toolchain import default_dynamo_python

RESET_CLIENT = Path(__file__).with_name("kv_reset_client.py")


def confirmed_every_worker(stdout: str, expected: int) -> bool:
    """Whether the reset client's output says that all `expected` workers emptied their caches (its last line,
    kv_reset_client.py, printed only once every instance answered {"status": "success"})."""
    return f"kv reset: {expected} of {expected} workers emptied their KV cache" in stdout


def reset_kv_caches(
    dep: LocalDeployment,
    state_dir: Path,
    *,
    dgd: dict,
    start: WorkerStart,
) -> None:
    """Empty every worker's KV cache, keeping the workers: real engines through their clear_kv_blocks
    endpoint (kv_reset_client.py run by the engine's interpreter on the deployment's discovery store);
    mocker workers, whose cache is only simulated, by a restart. Raises when a worker does not confirm."""
    import subprocess

    gpu = start.gpu
    if gpu is None:
        components = [c for c in read_components(dgd) if c.role != "frontend"]
        procs.stop_named(state_dir, {c.name for c in components})
        group = procs.ProcessGroup(state_dir)
        spawn_mockers(
            group,
            components,
            dgd,
            dynamo_env(state_dir / "discovery"),
            state_dir,
            python=start.python or default_dynamo_python(),
            model_dir=Path(dep.model_dir),
            cap=start.max_workers,
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
        print(proc.stdout.strip(), flush=True)
        ok, why = proc.returncode == 0, (proc.stderr.strip().splitlines() or ["?"])[-1]
        if not ok and confirmed_every_worker(proc.stdout, expected):
            # Every worker answered success and only the client's exit failed: on the H200 (2026-12-04, 1 of 11
            # resets) ai-dynamo 1.3.1's runtime aborted at interpreter teardown ("FATAL: exception not
            # rethrown") after both confirmations were printed. The caches are empty; a restart would only
            # cost a start (81 s there) and call a reset run a redeploy.
            print(f"kv reset: client exited {proc.returncode} after every worker confirmed ({why}); kept", flush=True)
            ok = True
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
            max_workers_per_component=start.max_workers,
            python=start.python,
            gpu=gpu,
        )
