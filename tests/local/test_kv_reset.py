"""An experiment's KV-cache reset on real engines (infersweep.local.dynamo.kv_reset): the workers' own
clear_kv_blocks answers decide whether the caches are empty, not how the client process ends."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from infersweep.local.dynamo import kv_reset
from infersweep.local.dynamo.deployment import LocalDeployment, WorkerStart

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
