"""An experiment's KV-cache reset on real engines (infersweep.local.dynamo.kv_reset): the workers' own
clear_kv_blocks answers decide whether the caches are empty, not how the client process ends."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from infersweep.local.dynamo import kv_reset
from infersweep.local.dynamo.command_lines import dynamo_env
from infersweep.local.dynamo.deployment import LocalDeployment, WorkerStart
from infersweep.local.toolchain import default_dynamo_python

CLIENT = """import os, sys
for iid in range({answered}):
    print('kv reset dynamo.backend instance', iid, ': [{{"status": "success", "message": "KV cache cleared"}}]')
if {answered} == 2:
    print('kv reset: 2 of 2 workers emptied their KV cache')
else:
    print('kv reset: {answered} of 2 workers confirmed', file=sys.stderr)
sys.stdout.flush()
{ending}
"""


def _reset(tmp_path: Path, monkeypatch, *, answered: int, ending: str) -> list[str]:
    client = tmp_path / "client.py"
    client.write_text(CLIENT.format(answered=answered, ending=ending))
    monkeypatch.setattr(kv_reset, "RESET_CLIENT", client)
    redeploys: list[str] = []
    monkeypatch.setattr(kv_reset, "teardown_local", lambda state_dir: redeploys.append("teardown"))
    monkeypatch.setattr(kv_reset, "deploy_local", lambda dgd, **kw: redeploys.append("deploy"))
    dep = LocalDeployment(
        name="d", state_dir=str(tmp_path), frontend_url="", model_name="m", router_mode="kv", model_dir=str(tmp_path)
    )
    dep.components = [{"name": "VllmWorker", "num_workers": 2}]
    start = WorkerStart(gpu=SimpleNamespace(python=sys.executable))  # type: ignore[arg-type]
    kv_reset.reset_kv_caches(dep, tmp_path, dgd={}, start=start)
    return redeploys


def test_a_reset_every_worker_confirmed_is_kept_when_the_client_then_aborts(tmp_path, monkeypatch, capsys):
    # as on the H200: both confirmations printed, then the runtime's teardown aborted the client (SIGABRT)
    assert _reset(tmp_path, monkeypatch, answered=2, ending="os.abort()") == []
    out = capsys.readouterr().out
    assert "2 of 2 workers emptied" in out and "after every worker confirmed" in out
    assert "restarting the deployment instead" not in out


def test_a_reset_a_worker_did_not_confirm_restarts_the_deployment(tmp_path, monkeypatch, capsys):
    assert _reset(tmp_path, monkeypatch, answered=1, ending="sys.exit(1)") == ["teardown", "deploy"]
    assert "1 of 2 workers confirmed); restarting the deployment instead" in capsys.readouterr().out


# Two real Dynamo endpoints named as an aggregated vLLM worker names its reset endpoint (ai-dynamo
# dynamo/vllm/worker_factory.py: <namespace>.backend.clear_kv_blocks), served by the runtime the client talks to.
SERVER = """import asyncio
async def main():
    from dynamo.runtime import DistributedRuntime
    rt = DistributedRuntime(asyncio.get_running_loop(), "file", "tcp")
    async def clear_kv_blocks(request=None, context=None):
        yield {"status": "success", "message": "KV cache cleared"}
    await rt.endpoint("dynamo.backend.clear_kv_blocks").serve_endpoint(clear_kv_blocks)
asyncio.run(main())
"""


needs_dynamo = pytest.mark.skipif(
    not Path(default_dynamo_python()).exists(), reason=f"no Dynamo interpreter at {default_dynamo_python()}"
)


def _serve_and_reset(tmp_path: Path, *, servers: int, expect: int, wait_s: float):
    import subprocess
    import time

    python = default_dynamo_python()
    env = dynamo_env(tmp_path / "discovery", pin_loopback=False)
    (tmp_path / "server.py").write_text(SERVER)
    procs = [subprocess.Popen([python, str(tmp_path / "server.py")], env=env) for _ in range(servers)]
    try:
        deadline = time.monotonic() + 60
        store = tmp_path / "discovery"
        while time.monotonic() < deadline:  # both registered their endpoint in the file store
            if len([p for p in store.rglob("*clear*") if p.is_file()]) >= servers:
                break
            time.sleep(0.1)
        t0 = time.monotonic()
        out = subprocess.run(
            [python, "-I", str(kv_reset.RESET_CLIENT), "--expect", str(expect), "--wait-s", str(wait_s)],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return out, time.monotonic() - t0
    finally:
        for p in procs:
            p.kill()
            p.wait()


@needs_dynamo
def test_the_reset_client_stops_waiting_once_every_worker_is_found(tmp_path):
    """The client waits for the components a worker might register (backend, prefill, decode) together and only
    until the expected workers are known: in turn, it spent its wait twice on the two an aggregated worker never
    registers (20 s of every reset on the H200). Here the wait is 120 s: the old client took 240 s or more."""
    out, took = _serve_and_reset(tmp_path, servers=2, expect=2, wait_s=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert kv_reset.confirmed_every_worker(out.stdout, 2), out.stdout
    assert out.stdout.count("dynamo.backend instance") == 2
    assert took < 120, f"the client waited {took:.1f} s for components no worker registers"


@needs_dynamo
def test_the_reset_client_fails_when_a_worker_never_answers(tmp_path):
    out, _ = _serve_and_reset(tmp_path, servers=1, expect=2, wait_s=3)
    assert out.returncode == 1
    assert "kv reset: 1 of 2 workers confirmed" in out.stderr
    assert not kv_reset.confirmed_every_worker(out.stdout, 2)
