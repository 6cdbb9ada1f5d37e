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


def test_a_points_console_label_names_its_load_not_every_item_field():
    """Issue 38 item 15: step labels of 100+ characters (Argo's item name) in the console and failure lines."""
    from infersweep.local.executor import event_printer
    from infersweep.local.progress_watch import step_label

    argo_name = "gpu-span.point(1:concurrency:8,cpu:6,memory:4096Mi,repetition:1,request_rate:0,requests:64,warmup:8)"
    assert step_label(argo_name) == "gpu-span.point(1: c8 r1)"
    assert step_label("gpu-span.point(2:concurrency:8,repetition:0,request_rate:2.5)") == "gpu-span.point(2: c8 @2.5/s)"
    assert step_label("onExit.publish(0)") == "onExit.publish(0)"
    import io

    out = io.StringIO()
    event_printer(out)("start", Node(name=f"r1.{argo_name}", id="p"))
    assert out.getvalue().rstrip().endswith("> gpu-span.point(1: c8 r1)")
