"""The local executor runs Hera-built workflows the way Argo v4.1.2 does: DAG order, depends logic, withParam
fan-out, output parameters, the leaf-task verdict, exit handler, stop vs terminate, and the `infersweep argo
run` command. Steps are real `python -m` processes (and `sh -c` on the host for the command). The rule-by-rule
cases are the conformance suite (tests/local/test_argo_conformance.py)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
from hera.workflows import DAG, Container, Parameter, Task, Workflow, WorkflowTemplate
from hera.workflows import models as m

from infersweep.local.argo import LocalArgo, LocalCluster, Node, WorkflowError, eval_depends
from tests.support.paths import REPO, TESTS

STEP = """
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
"""


def step(name: str, *, outputs=(), inputs=("name",)) -> Container:
    args = ["--name", "{{inputs.parameters.name}}", "--trace", "{{workflow.parameters.trace}}"]
    for extra in inputs:
        if extra != "name":
            args += [f"--{extra}", "{{inputs.parameters.%s}}" % extra]
    if outputs:
        args += ["--out", "/tmp/outputs/out"]
    return Container(
        name=name,
        image="local/step",
        command=["python", "-m", "fakestep"],
        args=args,
        inputs=[Parameter(name=i) for i in inputs],
        outputs=[Parameter(name=o, value_from=m.ValueFrom(path="/tmp/outputs/out")) for o in outputs],
    )


@pytest.fixture
def cluster(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "fakestep.py").write_text(STEP)
    return LocalCluster(
        pythons={"local/step": sys.executable},
        pvc_dirs=lambda c: tmp_path / "pvc" / c,
        run_dir=tmp_path / "run",
        cwd=tmp_path / "code",
        env={"PATH": "/usr/bin:/bin"},
    )


def trace_of(tmp_path: Path) -> list[str]:
    f = tmp_path / "trace"
    return f.read_text().split() if f.exists() else []


def build(tmp_path, *, item_exit="0", fail_fast=True, sleep="0"):
    with Workflow(
        name="t", entrypoint="main", on_exit="bye", arguments=[Parameter(name="trace", value=str(tmp_path / "trace"))]
    ) as wf:
        s = step("s", inputs=("name", "value"), outputs=("o",))
        e = step("e", inputs=("name", "exit", "sleep"))
        with DAG(name="bye"):
            Task(name="bye", template=step("plain"), arguments={"name": "exit-{{workflow.status}}"})
        with DAG(name="main", fail_fast=fail_fast):
            a = s(name="a", arguments={"name": "a", "value": '[{"c":1},{"c":2},{"c":3}]'})
            b = e(
                name="b",
                with_param="{{tasks.a.outputs.parameters.o}}",
                arguments={"name": "b{{item.c}}", "exit": item_exit, "sleep": sleep},
            )
            c = s(name="c", arguments={"name": "c", "value": "x"})
            s(name="d", arguments={"name": "d", "value": "y"}, depends="b.Failed")
            a >> b >> c
    return wf.to_dict()


def phases(argo: LocalArgo) -> dict[str, str]:
    return {n.display_name: n.phase for n in argo.nodes.values()}


def test_dag_order_fanout_outputs_and_exit_handler(tmp_path, cluster):
    argo = LocalArgo(build(tmp_path), [], cluster)
    argo.run()
    assert argo.phase == "Succeeded"
    trace = trace_of(tmp_path)
    # b's items run side by side (no parallelism): only the order between tasks is fixed
    assert trace[0] == "a" and sorted(trace[1:4]) == ["b1", "b2", "b3"] and trace[4:] == ["c", "exit-Succeeded"]
    assert argo.node_by_display("a").outputs == {"o": '[{"c":1},{"c":2},{"c":3}]'}
    assert {k: v for k, v in phases(argo).items() if k in "abcd"} == {
        "a": "Succeeded",
        "b": "Succeeded",
        "c": "Succeeded",
        "d": "Omitted",
    }


def test_failed_items_fail_the_run_but_depends_on_failed_runs_and_exit_handler_sees_failure(tmp_path, cluster):
    argo = LocalArgo(build(tmp_path, item_exit="{{item.c}}", fail_fast=False), [], cluster)
    argo.run()
    assert {k: v for k, v in phases(argo).items() if k in "abcd"} == {
        "a": "Succeeded",
        "b": "Failed",
        "c": "Omitted",
        "d": "Succeeded",
    }
    # the omitted leaf c inherits its branch's failure (dag.go assessDAGPhase), so the run fails
    assert argo.phase == "Failed"
    trace = trace_of(tmp_path)
    assert trace[0] == "a" and sorted(trace[1:4]) == ["b1", "b2", "b3"] and trace[4:] == ["d", "exit-Failed"]
    assert [argo.node_by_display(f"b({i}:c:{i + 1})").phase for i in range(3)] == ["Failed"] * 3
    assert "exit code 1" in argo.node_by_display("b(0:c:1)").message


@pytest.mark.parametrize("strategy", ["Stop", "Terminate"])
def test_stop_runs_the_exit_handler_and_terminate_does_not(tmp_path, cluster, strategy):
    argo = LocalArgo(build(tmp_path, sleep="30"), [], cluster)
    threading.Timer(1.5, argo.stop, kwargs={"reason": "stopped by SIGINT", "strategy": strategy}).start()
    t0 = time.monotonic()
    argo.run()
    assert time.monotonic() - t0 < 15
    assert argo.phase == "Failed" and argo.message == f"Stopped with strategy '{strategy}'"
    ran_exit = "exit-Failed" in trace_of(tmp_path)
    assert ran_exit is (strategy == "Stop")
    assert "c" not in trace_of(tmp_path)


def test_workflow_template_ref_and_missing_parameter(tmp_path, cluster):
    with WorkflowTemplate(name="lib") as lib:
        step("plain")
    with WorkflowTemplate(
        name="pipe", entrypoint="main", arguments=[Parameter(name="trace"), Parameter(name="who", value="x")]
    ) as pipe:
        with DAG(name="main"):
            Task(
                name="p",
                template_ref=m.TemplateRef(name="lib", template="plain"),
                arguments={"name": "{{workflow.parameters.who}}"},
            )
    wf = Workflow(
        name="w",
        workflow_template_ref=m.WorkflowTemplateRef(name="pipe"),
        arguments={"trace": str(tmp_path / "trace"), "who": "given"},
    ).to_dict()
    argo = LocalArgo(wf, [lib.to_dict(), pipe.to_dict()], cluster)
    argo.run()
    assert argo.phase == "Succeeded" and trace_of(tmp_path) == ["given"]
    wf["spec"]["arguments"]["parameters"] = [{"name": "who", "value": "y"}]
    with pytest.raises(WorkflowError, match="spec.arguments.trace.value is required"):
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


def test_unsupported_features_are_rejected_by_name_before_anything_runs(tmp_path, cluster):
    wf = build(tmp_path)
    wf["spec"]["templates"].append({"name": "s2", "suspend": {"duration": "10"}})
    main = next(t for t in wf["spec"]["templates"] if t["name"] == "main")
    main["dag"]["tasks"].append({"name": "e", "template": "s2"})
    with pytest.raises(WorkflowError, match="suspend templates are not supported by the local executor"):
        LocalArgo(wf, [], cluster)
    assert trace_of(tmp_path) == []


ARGO_CLI_CASE = """
apiVersion: argoproj.io/v1alpha1
kind: Workflow
metadata: {name: cli-case}
spec:
  entrypoint: main
  templates:
  - name: main
    dag:
      tasks:
      - {name: a, template: sh}
      - {name: b, template: sh, depends: a, arguments: {parameters: [{name: code, value: "3"}]}}
  - name: sh
    inputs: {parameters: [{name: code, value: "0"}]}
    container: {image: alpine, command: [sh, -c, "exit {{inputs.parameters.code}}"]}
"""


def test_argo_run_command_prints_argo_get_status(tmp_path):
    import json
    import os
    import subprocess

    f = tmp_path / "wf.yaml"
    f.write_text(ARGO_CLI_CASE)
    env = os.environ | {"PYTHONPATH": str(REPO)}
    p = subprocess.run(
        [sys.executable, "-m", "infersweep.cli", "argo", "run", str(f), "--work-dir", str(tmp_path / "w")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    status = json.loads(p.stdout)
    assert status["phase"] == "Failed"
    nodes = {n["displayName"]: n for n in status["nodes"].values()}
    assert {k: (n["type"], n["phase"]) for k, n in nodes.items()} == {
        "cli-case": ("DAG", "Failed"),
        "a": ("Pod", "Succeeded"),
        "b": ("Pod", "Failed"),
    }
    assert nodes["b"]["message"] == "main: Error (exit code 3)" and nodes["b"]["outputs"]["exitCode"] == "3"
    assert nodes["cli-case"]["id"] == "cli-case" and nodes["a"]["id"].startswith("cli-case-")
    f.write_text(ARGO_CLI_CASE.replace("depends: a", "depends: a.Bogus"))
    p = subprocess.run(
        [sys.executable, "-m", "infersweep.cli", "argo", "run", str(f)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "task result 'Bogus' for task 'a' is invalid" in p.stderr


def test_node_ids_are_argo_node_ids():
    # pkg/apis/workflow/v1alpha1/workflow_types.go Workflow.NodeID: fnv32a of the node name
    from infersweep.local.argo.nodes import _fnv32a

    assert _fnv32a("") == 2166136261 and _fnv32a("a") == 0xE40C292C


def test_semaphore_holds_across_separate_processes(tmp_path):
    """Two `infersweep argo run` processes of a workflow holding a semaphore of limit 1 never overlap."""
    import os
    import subprocess

    case = TESTS / "conformance" / "semaphore-workflow-limit-across-runs.yaml"
    trace = tmp_path / "trace"
    env = os.environ | {"PYTHONPATH": str(REPO)}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "infersweep.cli",
                "argo",
                "run",
                str(case),
                "-p",
                f"trace={trace}",
                "--work-dir",
                str(tmp_path / f"w{i}"),
                "--state-dir",
                str(tmp_path / "state"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        for i in range(2)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0], [p.stderr.read() for p in procs]
    lines = trace.read_text().split("\n")
    assert [ln.split()[0] for ln in lines if ln] == ["start", "end", "start", "end"]


def test_run_local_retry_and_resubmit_refuse_what_argo_refuses(tmp_path):
    """`run --local --retry` follows FormulateRetryWorkflow: a Succeeded run cannot be retried; a folder that
    is not a finished local run is refused by name; nothing starts."""
    from infersweep.cli import main
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.local.run import run_local
    from infersweep.recipe import RecipeError, load_recipe
    from workflows.render import render_recipe

    run_dir = tmp_path / "runs" / "r1"
    render_recipe(
        load_recipe("nemotron-3-nano-fp8-vllm-agg-kv"), load_cluster_settings(), namespace="local", workflow_name="r1"
    ).write(run_dir / "rendered")
    with pytest.raises(RecipeError, match="left no status.json"):
        run_local(None, retry=run_dir, out_root=tmp_path / "runs", cache_root=tmp_path / "cache")
    (run_dir / "status.json").write_text('{"phase": "Succeeded", "nodes": {}}')
    with pytest.raises(RecipeError, match="To retry a succeeded workflow"):
        run_local(None, retry=run_dir, out_root=tmp_path / "runs", cache_root=tmp_path / "cache")
    assert not (tmp_path / "cache" / "toy-model").exists(), "nothing may be built or started"
    assert main(["run", "--local", "--retry", str(tmp_path / "nope")]) == 2
    assert main(["run", "--local", "--retry", str(run_dir), "--set", "points=[]"]) == 2
    assert main(["run", "--local"]) == 2
