"""`submit --watch` / `infersweep watch` against the Argo Server stand-in (tests/support/argo_server_standin.py), the
"controller" writing status as Argo does: a point's `progress` (N/M from ARGO_PROGRESS_FILE), a GPU span
Pending on its semaphore with Argo's message and synchronizationStatus, then the end."""

from __future__ import annotations

import re
import time

from infersweep.argo_server import ArgoServer, load_config
from infersweep.cli import main
from infersweep.commands.watch import queue_position, watch
from infersweep.schemas import validate_document
from tests.support.argo_server_standin import NS, RECIPE

LOCK = f"{NS}/ConfigMap/infersweep-gpu-pools/h100-8gpu"
WAIT_MSG = f"Waiting for {LOCK} lock. Lock status: 0/1"  # workflow/sync/semaphore.go checkAcquire


def _iso(seconds_ago: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - seconds_ago))


def _submit(argo, capsys, n: int = 1) -> list[dict]:
    assert main(["install"]) == 0
    for _ in range(n):
        assert main(["submit", RECIPE]) == 0
    capsys.readouterr()
    return sorted(argo.objects("workflows"), key=lambda w: w["metadata"]["creationTimestamp"])


def test_watch_shows_the_gpu_queue_the_steps_the_point_progress_and_where_the_results_are(argo, capsys, monkeypatch):
    import infersweep.commands.watch as w

    first, mine = _submit(argo, capsys, n=2)
    name = mine["metadata"]["name"]
    first["spec"]["priority"], mine["spec"]["priority"] = 10, 5  # the other run is ahead in the queue
    span = {
        "id": f"{name}-span",
        "name": f"{name}.gpu-span",
        "displayName": "gpu-span",
        "type": "DAG",
        "templateName": "gpu-span",
        "phase": "Pending",
        "message": WAIT_MSG,
        "synchronizationStatus": {"waiting": LOCK},
    }
    first["status"] = {"phase": "Running", "nodes": {"a": {**span, "id": "a", "name": "x.gpu-span"}}}
    point = {
        "id": f"{name}-p",
        "name": f"{name}.gpu-span.point(0:1)",
        "displayName": "point(0:1)",
        "type": "Pod",
        "templateName": "aiperf-point",
        "phase": "Running",
        "startedAt": _iso(40),
        "progress": "30/120",
    }
    states = iter(
        [
            {"phase": "Running", "nodes": {span["id"]: span}},
            {
                "phase": "Running",
                "progress": "2/9",
                "nodes": {span["id"]: {**span, "phase": "Running", "message": ""}, point["id"]: point},
            },
            {"phase": "Running", "progress": "2/9", "nodes": {point["id"]: {**point, "progress": "90/120"}}},
            {
                "phase": "Succeeded",
                "progress": "9/9",
                "nodes": {point["id"]: {**point, "phase": "Succeeded", "progress": "120/120"}},
            },
        ]
    )

    def controller(_line=None):
        st = next(states, None)
        if st is not None:
            mine["status"] = st
            validate_document(mine)  # shaped as Argo's WorkflowStatus / NodeStatus

    controller()
    lines: list[str] = []
    server = ArgoServer(load_config(default_namespace=NS))
    monkeypatch.setattr(w.time, "sleep", lambda s: controller())  # between two polls, the controller moves on
    assert watch(server, name, poll_s=0.01, out=lines.append) == "Succeeded"
    text = "\n".join(lines)
    assert "gpu-span: waiting for GPUs (lane h100-8gpu, position 2 of 2; 0/1 free)" in text
    assert re.search(r"point\(0\): 30/120 requests \(25%\), 4[01]s elapsed, ETA 2m0[0-3]s", text), text
    assert "point(0): 90/120 requests (75%)" in text and "point(0): ok" in text
    assert f"results: s3://infersweep-results/runs/{RECIPE}/{name}/" in text
    assert f"report:  infersweep report {name} --store s3://infersweep-results/runs" in text
    assert f"logs:    infersweep logs {name} [STEP]" in text


def test_queue_position_follows_priority_then_age():
    def wf(name, prio, created, waiting=True):
        node = {"phase": "Pending", "synchronizationStatus": {"waiting": LOCK}} if waiting else {"phase": "Running"}
        return {
            "metadata": {"name": name, "creationTimestamp": created},
            "spec": {"priority": prio},
            "status": {"nodes": {"n": node}},
        }

    wfs = [
        wf("old", 0, "2025-01-01T00:00:00Z"),
        wf("new", 0, "2025-01-02T00:00:00Z"),
        wf("urgent", 9, "2025-01-03T00:00:00Z"),
        wf("running", 0, "2024-01-01T00:00:00Z", waiting=False),
    ]
    assert queue_position(wfs, "urgent", LOCK) == (1, 3)
    assert queue_position(wfs, "new", LOCK) == (3, 3)
    assert queue_position(wfs, "running", LOCK) is None


def test_submit_watch_ends_with_the_exit_code_of_the_run(argo, capsys, monkeypatch):
    import infersweep.commands.watch as w

    _submit(argo, capsys)
    (wf,) = argo.objects("workflows")
    wf["status"] = {"phase": "Failed", "message": "child 'wait-ready' failed"}
    monkeypatch.setattr(w.time, "sleep", lambda s: None)
    assert main(["watch", wf["metadata"]["name"]]) == 1
    out = capsys.readouterr().out
    assert "Failed (child 'wait-ready' failed)" in out and "infersweep logs" in out
