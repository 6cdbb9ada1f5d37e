"""What a cluster does to a run's workdir and deadline (issue 20, item 4), on the rendered pipeline templates.

* ReadWriteOnce workdir: two pods on different nodes cannot mount it at once (the second waits on
  Multi-Attach while its activeDeadlineSeconds runs), so no two tasks that can run at the same time may mount
  it. The check walks every DAG of every installed pipeline: tasks unordered by `depends` run concurrently
  (dag.go executeDAG starts every task whose dependencies are met), and a fanned-out task's items run
  concurrently unless the DAG's parallelism is 1.
* volumeClaimGC: the workdir outlives a failed, stopped or terminated run so the UI's Retry finds it
  (operator.go deletePVCs: OnWorkflowSuccess keeps the PVCs unless the workflow Succeeded).
* The workflow deadline covers the wait for the lane plus the span's budget.
* The exit handler is judged by its leaf (dag.go assessDAGPhase; tests/conformance/dag-leaf-handler-after-failure.yaml):
  a failed scrape or regression-check fails the run through the verdict's --exit-steps.
* The reaper and the nightly runs follow `infersweep install --dgd-api`.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from tests.support.paths import REPO


@pytest.fixture(scope="module")
def installed():
    return install_set(load_cluster_settings())[0]


def _pipelines(argo):
    return [
        d
        for d in argo
        if d["kind"] == "WorkflowTemplate" and d["metadata"]["labels"].get("infersweep.io/kind") == "pipeline"
    ]


# ------------------------------------------------------------------ concurrent mounts of a ReadWriteOnce claim


def _depends_on(task: dict) -> set[str]:
    if task.get("dependencies"):
        return set(task["dependencies"])
    # dag.go: a depends operand is `task` or `task.Result`; strip operators, parentheses and results
    return {m.group(1) for m in re.finditer(r"([A-Za-z0-9_-]+)(?:\.[A-Za-z]+)?", task.get("depends") or "")}


def _ancestors(name: str, tasks: dict[str, dict]) -> set[str]:
    out, stack = set(), list(_depends_on(tasks[name]))
    while stack:
        t = stack.pop()
        if t in tasks and t not in out:
            out.add(t)
            stack += _depends_on(tasks[t])
    return out


def rwo_conflicts(wt: dict, by_name: dict[str, dict]) -> list[tuple[str, str, str, str]]:
    """(dag, task, task, claim) for each pair of tasks of one DAG that can run at once and both mount a
    ReadWriteOnce claim of the template's volumeClaimTemplates (a task with itself: its items, in parallel)."""
    spec = wt["spec"]
    rwo = {
        c["metadata"]["name"]
        for c in spec.get("volumeClaimTemplates") or []
        if "ReadWriteOnce" in (c["spec"].get("accessModes") or [])
    }
    local = {t["name"]: t for t in spec["templates"]}

    def resolve(task: dict) -> dict:
        if "templateRef" in task:
            ref = task["templateRef"]
            return next(t for t in by_name[ref["name"]]["spec"]["templates"] if t["name"] == ref["template"])
        return local[task["template"]]

    def mounts(tmpl: dict) -> set[str]:
        if "dag" in tmpl:
            return set().union(*(mounts(resolve(t)) for t in tmpl["dag"]["tasks"]))
        c = tmpl.get("container") or tmpl.get("script") or {}
        vms = list(c.get("volumeMounts") or [])
        for ic in tmpl.get("initContainers") or []:
            vms += ic.get("volumeMounts") or []
        return {v["name"] for v in vms} & rwo

    out = []
    for tmpl in spec["templates"]:
        if "dag" not in tmpl:
            continue
        tasks = {t["name"]: t for t in tmpl["dag"]["tasks"]}
        anc = {n: _ancestors(n, tasks) for n in tasks}
        names = sorted(tasks)
        for i, a in enumerate(names):
            ma = mounts(resolve(tasks[a]))
            if ma and (tasks[a].get("withParam") or tasks[a].get("withItems")) and tmpl.get("parallelism") != 1:
                out += [(tmpl["name"], a, a, c) for c in sorted(ma)]
            for b in names[i + 1 :]:
                if a in anc[b] or b in anc[a]:
                    continue
                out += [(tmpl["name"], a, b, c) for c in sorted(ma & mounts(resolve(tasks[b])))]
    return out


def test_no_two_tasks_that_run_at_once_mount_the_rwo_workdir(installed):
    by_name = {d["metadata"]["name"]: d for d in installed if d["kind"] == "WorkflowTemplate"}
    pipelines = _pipelines(installed)
    assert pipelines
    for wt in pipelines:
        assert rwo_conflicts(wt, by_name) == [], wt["metadata"]["name"]


def test_the_check_sees_regression_check_beside_verdict(installed):
    """The exit handler as main had it (both after publish) is a conflict; so are points in parallel."""
    by_name = {d["metadata"]["name"]: d for d in installed if d["kind"] == "WorkflowTemplate"}
    wt = copy.deepcopy(_pipelines(installed)[0])
    tmpl = {t["name"]: t for t in wt["spec"]["templates"]}
    verdict = next(t for t in tmpl["exit-handler"]["dag"]["tasks"] if t["name"] == "verdict")
    verdict["depends"] = "publish"
    tmpl["gpu-span"]["parallelism"] = 2
    assert set(rwo_conflicts(wt, by_name)) == {
        ("exit-handler", "regression-check", "verdict", "workdir"),
        ("gpu-span", "point", "point", "workdir"),
    }


def test_exit_handler_runs_the_workdir_steps_one_after_another(installed):
    tmpl = {t["name"]: t for t in _pipelines(installed)[0]["spec"]["templates"]}
    tasks = {t["name"]: t for t in tmpl["exit-handler"]["dag"]["tasks"]}
    assert tasks["regression-check"]["depends"] == "publish"
    # the verdict runs whatever the regression check found, and is told the phases of the non-leaf steps
    assert (
        tasks["verdict"]["depends"]
        == "regression-check.Succeeded || regression-check.Failed || regression-check.Errored"
    )
    args = {p["name"]: p["value"] for p in tasks["verdict"]["arguments"]["parameters"]}
    assert json.loads(args["exit-steps"]) == {
        "scrape": "{{tasks.scrape.status}}",
        "regression-check": "{{tasks.regression-check.status}}",
    }
    assert "depends" not in tasks["teardown"], "teardown mounts nothing: it frees the GPUs at once"


def _verdict(tmp_path: Path, exit_steps: dict) -> subprocess.CompletedProcess:
    d = tmp_path / "points" / "c1"
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps({"status": "ok", "concurrency": 1}))
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "steps.verdict",
            "--run-dir",
            str(tmp_path),
            "--points",
            json.dumps([{"concurrency": 1}]),
            "--exit-steps",
            json.dumps(exit_steps),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_a_failed_scrape_fails_the_run_through_the_verdict(tmp_path):
    p = _verdict(tmp_path, {"scrape": "Failed", "regression-check": "Succeeded"})
    assert p.returncode == 1 and "scrape: Failed" in p.stderr and "all 1 points measured" in p.stderr, p.stderr


def test_a_found_regression_fails_the_run_through_the_verdict(tmp_path):
    p = _verdict(tmp_path, {"scrape": "Succeeded", "regression-check": "Failed"})
    assert p.returncode == 1 and "regression-check: Failed" in p.stderr


def test_verdict_passes_when_every_exit_step_succeeded(tmp_path):
    p = _verdict(tmp_path, {"scrape": "Succeeded", "regression-check": "Succeeded"})
    assert p.returncode == 0, p.stderr


# ------------------------------------------------------------------ volumeClaimGC and the deadline


def test_workdir_is_kept_after_a_failed_or_terminated_run(installed):
    for wt in _pipelines(installed):
        assert wt["spec"]["volumeClaimGC"] == {"strategy": "OnWorkflowSuccess"}, wt["metadata"]["name"]


def _argo_deletes_pvcs(strategy: str, phase: str) -> bool:
    """operator.go deletePVCs (v4.1.2), called when the workflow completes."""
    if strategy == "OnWorkflowSuccess":
        return phase == "Succeeded"
    if strategy == "OnWorkflowCompletion":
        return True
    raise ValueError(f"unknown volume gc strategy: {strategy}")


def test_retry_after_failure_stop_or_terminate_finds_the_workdir(installed):
    strategy = _pipelines(installed)[0]["spec"]["volumeClaimGC"]["strategy"]
    # failed points, `argo stop`, the workflow deadline and `argo terminate` all end the Workflow Failed
    # (operator.go operate: markWorkflowFailed with "Stopped with strategy ..."), the only phase Retry takes
    # besides Error (util.go FormulateRetryWorkflow)
    for phase in ("Failed", "Error"):
        assert not _argo_deletes_pvcs(strategy, phase)
    assert _argo_deletes_pvcs(strategy, "Succeeded")
    assert _argo_deletes_pvcs("OnWorkflowCompletion", "Failed"), "the strategy that would break Retry"


def test_the_wait_for_a_lane_does_not_eat_the_span_deadline(installed):
    from workflows.pipeline import QUEUE_BUDGET_S, SPAN_BUDGET_S

    by_name = {d["metadata"]["name"]: d for d in installed if d["kind"] == "WorkflowTemplate"}
    for wt in _pipelines(installed):
        spec = wt["spec"]
        assert spec["activeDeadlineSeconds"] == QUEUE_BUDGET_S + SPAN_BUDGET_S
        # Argo refuses a deadline on a DAG (validate.go validateNonLeaf): the span is bounded by its pods
        for t in spec["templates"]:
            assert "activeDeadlineSeconds" not in t or "dag" not in t, t["name"]
        # the model download's own deadline fits in the queue budget, leaving time to queue
        cache = by_name["infersweep-model-cache"]["spec"]["templates"][0]
        assert int(cache["activeDeadlineSeconds"]) < QUEUE_BUDGET_S
    # the catalog submitted at once queues its H100 runs up to 15.6 h (the simulation table of docs/local-executor.md)
    assert QUEUE_BUDGET_S >= 15.6 * 3600 and SPAN_BUDGET_S == 6 * 3600


# ------------------------------------------------------------------ the reaper follows --dgd-api


def test_install_dgd_api_reaches_the_reaper_and_the_nightly_runs():
    argo, _ = install_set(load_cluster_settings(), "v1alpha1")
    reaper = next(d for d in argo if d["kind"] == "WorkflowTemplate" and d["metadata"]["name"] == "infersweep-reaper")
    args = reaper["spec"]["templates"][0]["container"]["args"]
    assert args[args.index("--api-version") + 1] == "v1alpha1"
    for cron in (d for d in argo if d["kind"] == "CronWorkflow" and d["metadata"]["name"] != "infersweep-reaper"):
        params = {p["name"]: p["value"] for p in cron["spec"]["workflowSpec"]["arguments"]["parameters"]}
        assert params["dgd-api-version"] == "v1alpha1" and "apiVersion: nvidia.com/v1alpha1" in params["dgd"]
    argo, _ = install_set(load_cluster_settings())
    reaper = next(d for d in argo if d["kind"] == "WorkflowTemplate" and d["metadata"]["name"] == "infersweep-reaper")
    args = reaper["spec"]["templates"][0]["container"]["args"]
    assert args[args.index("--api-version") + 1] == "v1beta1"


def test_a_reaper_for_an_unserved_dgd_version_names_the_fix():
    from kubernetes.client.exceptions import ApiException

    from infersweep.platform.reaper import reap

    class Custom:
        def list_namespaced_custom_object(self, group, version, namespace, plural, **kw):
            raise ApiException(status=404, reason="Not Found")

    with pytest.raises(SystemExit, match="infersweep install --dgd-api"):
        reap(Custom(), "bench", "v1beta1")


def test_an_experiment_keeps_its_workdir_for_retry_and_its_deadline_counts_the_lane_wait():
    """The experiment's template follows the pipeline's lifecycle (issue 20 item 4, experiment side): the
    workdir PVC survives a failed or terminated run (volumeClaimGC OnWorkflowSuccess), and the deadline holds the
    queue budget on top of the treatments' own (the lock is taken inside the running Workflow)."""
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import all_experiment_paths, load_experiment
    from workflows.experiment import experiment_template
    from workflows.pipeline import QUEUE_BUDGET_S

    settings = load_cluster_settings()
    for path in all_experiment_paths():
        plan = make_plan(load_experiment(path))
        spec = experiment_template(plan, settings).to_dict()["spec"]
        assert spec["volumeClaimGC"] == {"strategy": "OnWorkflowSuccess"}, path.name
        own = sum(
            len(s.treatment.recipe.recipe.workload.concurrency) * s.treatment.recipe.recipe.workload.point_timeout_s
            for s in plan.steps
        ) + 3600 * len(plan.steps)
        assert spec["activeDeadlineSeconds"] == QUEUE_BUDGET_S + own, path.name
