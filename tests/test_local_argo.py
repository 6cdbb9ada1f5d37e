"""The local interpreter runs Hera-built workflows the way Argo does: DAG order, depends logic, withParam
fan-out, output parameters, failFast, exit handler, stop. Steps are real `python -m` processes."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
from hera.workflows import DAG, Container, Parameter, Task, Workflow, WorkflowTemplate
from hera.workflows import models as m

from infersweep.local.argo import LocalArgo, LocalCluster, WorkflowError, eval_depends, Node

STEP = '''
import argparse, pathlib, sys, time
ap = argparse.ArgumentParser()
ap.add_argument("--name"); ap.add_argument("--trace"); ap.add_argument("--out", default="")
ap.add_argument("--value", default=""); ap.add_argument("--exit", type=int, default=0); ap.add_argument("--sleep", type=float, default=0)
a = ap.parse_args()
with open(a.trace, "a") as f: f.write(a.name + "\\n")
time.sleep(a.sleep)
if a.out:
    p = pathlib.Path(a.out); p.parent.mkdir(parents=True, exist_ok=True); p.write_text(a.value)
sys.exit(a.exit)
'''


def step(name: str, *, outputs=(), inputs=("name",)) -> Container:
    args = ["--name", "{{inputs.parameters.name}}", "--trace", "{{workflow.parameters.trace}}"]
    for extra in inputs:
        if extra != "name":
            args += [f"--{extra}", "{{inputs.parameters.%s}}" % extra]
    if outputs:
        args += ["--out", "/tmp/outputs/out"]
    return Container(name=name, image="local/step", command=["python", "-m", "fakestep"], args=args,
                     inputs=[Parameter(name=i) for i in inputs],
                     outputs=[Parameter(name=o, value_from=m.ValueFrom(path="/tmp/outputs/out")) for o in outputs])


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "fakestep.py").write_text(STEP)
    return LocalCluster(pythons={"local/step": sys.executable}, pvc_dirs=lambda c: tmp_path / "pvc" / c,
                        run_dir=tmp_path / "run", cwd=tmp_path / "code", env={"PATH": "/usr/bin:/bin"})


def trace_of(tmp_path: Path) -> list[str]:
    f = tmp_path / "trace"
    return f.read_text().split() if f.exists() else []


def build(tmp_path, *, item_exit="0", fail_fast=True, sleep="0"):
    with Workflow(name="t", entrypoint="main", on_exit="bye",
                  arguments=[Parameter(name="trace", value=str(tmp_path / "trace"))]) as wf:
        s = step("s", inputs=("name", "value"), outputs=("o",))
        e = step("e", inputs=("name", "exit", "sleep"))
        with DAG(name="bye"):
            Task(name="bye", template=step("plain"), arguments={"name": "exit-{{workflow.status}}"})
        with DAG(name="main", fail_fast=fail_fast):
            a = s(name="a", arguments={"name": "a", "value": '[{"c":1},{"c":2},{"c":3}]'})
            b = e(name="b", with_param="{{tasks.a.outputs.parameters.o}}",
                  arguments={"name": "b{{item.c}}", "exit": item_exit, "sleep": sleep})
            c = s(name="c", arguments={"name": "c", "value": "x"})
            s(name="d", arguments={"name": "d", "value": "y"}, depends="b.Failed")
            a >> b >> c
    return wf.to_dict()


def test_dag_order_fanout_outputs_and_exit_handler(tmp_path, cluster):
    root = LocalArgo(build(tmp_path), [], cluster).run()
    assert root.phase == "Succeeded"
    assert trace_of(tmp_path) == ["a", "b1", "b2", "b3", "c", "exit-Succeeded"]
    a = root.children[0]
    assert a.outputs == {"o": '[{"c":1},{"c":2},{"c":3}]'}
    assert [n.phase for n in root.children] == ["Succeeded", "Succeeded", "Succeeded", "Omitted"]


def test_failed_items_fail_the_run_but_depends_on_failed_runs_and_exit_handler_sees_failure(tmp_path, cluster):
    root = LocalArgo(build(tmp_path, item_exit="{{item.c}}", fail_fast=False), [], cluster).run()
    phases = {n.name.rsplit(".", 1)[-1]: n.phase for n in root.children}
    assert phases == {"a": "Succeeded", "b": "Failed", "c": "Omitted", "d": "Succeeded"}
    assert root.phase == "Failed"
    assert trace_of(tmp_path) == ["a", "b1", "b2", "b3", "d", "exit-Failed"]
    b = root.children[1]
    assert [c.phase for c in b.children] == ["Failed", "Failed", "Failed"]
    assert "exit code 1" in b.children[0].message


def test_stop_terminates_the_running_step_and_still_runs_the_exit_handler(tmp_path, cluster):
    argo = LocalArgo(build(tmp_path, sleep="30"), [], cluster)
    threading.Timer(1.5, argo.stop, args=("stopped by SIGINT",)).start()
    t0 = time.monotonic()
    root = argo.run()
    assert time.monotonic() - t0 < 10
    assert root.phase == "Failed" and "SIGINT" in root.message
    assert trace_of(tmp_path)[-1] == "exit-Failed"
    assert "c" not in trace_of(tmp_path)


def test_workflow_template_ref_and_missing_parameter(tmp_path, cluster):
    with WorkflowTemplate(name="lib") as lib:
        step("plain")
    with WorkflowTemplate(name="pipe", entrypoint="main", arguments=[Parameter(name="trace"), Parameter(name="who", value="x")]) as pipe:
        with DAG(name="main"):
            Task(name="p", template_ref=m.TemplateRef(name="lib", template="plain"), arguments={"name": "{{workflow.parameters.who}}"})
    wf = Workflow(name="w", workflow_template_ref=m.WorkflowTemplateRef(name="pipe"),
                  arguments={"trace": str(tmp_path / "trace"), "who": "given"}).to_dict()
    root = LocalArgo(wf, [lib.to_dict(), pipe.to_dict()], cluster).run()
    assert root.phase == "Succeeded" and trace_of(tmp_path) == ["given"]
    wf["spec"]["arguments"]["parameters"] = [{"name": "who", "value": "y"}]
    with pytest.raises(WorkflowError, match="'trace' has no value"):
        LocalArgo(wf, [lib.to_dict(), pipe.to_dict()], cluster)


def test_depends_expressions():
    nodes = {"a": Node("a", "t", phase="Succeeded"), "b": Node("b", "t", phase="Failed")}
    assert eval_depends("a", nodes)
    assert not eval_depends("b", nodes)
    assert eval_depends("(b.Succeeded || b.Failed) && a", nodes)
    assert eval_depends("!b.Succeeded", nodes)
    with pytest.raises(WorkflowError):
        eval_depends("a.Bogus", nodes)
    with pytest.raises(WorkflowError):
        eval_depends("__import__('os')", nodes)
