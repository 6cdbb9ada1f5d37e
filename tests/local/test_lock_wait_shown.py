"""A local run waiting for a GPU lock another run holds says so (issue 38 item 13: it printed nothing while it
waited). The message is the one the local Argo operator sets as Argo's semaphore does (operator.py, sync.py)."""

from __future__ import annotations

from types import SimpleNamespace

from infersweep.local.argo.nodes import Node
from infersweep.local.progress_watch import ProgressWatcher

WAIT = "Waiting for local/ConfigMap/infersweep-gpu-pools/h100 lock. Lock status: 0/1"


def test_a_span_waiting_for_the_gpu_lock_is_said_once_per_change():
    span = Node(name="r1.gpu-span", type="DAG", phase="Pending", id="s", waiting_lock=WAIT)
    argo = SimpleNamespace(nodes={"s": span}, phase="Running", message="")
    lines: list[str] = []
    watcher = ProgressWatcher(argo, out=lines.append)
    watcher.poll()
    watcher.poll()  # unchanged: said once
    assert len(lines) == 1 and "waiting gpu-span: " + WAIT in lines[0] and "another run holds it" in lines[0]
    span.waiting_lock = ""  # acquired
    watcher.poll()
    assert len(lines) == 1


def test_a_workflow_waiting_for_its_lock_is_said():
    argo = SimpleNamespace(nodes={}, phase="Pending", message=WAIT)
    lines: list[str] = []
    ProgressWatcher(argo, out=lines.append).poll()
    assert lines and "waiting the workflow: " + WAIT in lines[0]
