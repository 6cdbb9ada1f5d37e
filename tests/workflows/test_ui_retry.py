"""The Argo UI's Retry recovers a failed sweep: it re-runs what failed, the deployment comes back, the
measured points are kept.

What Retry does is argo-workflows v4.1.2 workflow/util/util.go FormulateRetryWorkflow, encoded in
tests/support/argo_retry.py (with the DAG node-tree and phase rules it depends on, each cited there) and applied
to the node tree a run of the *rendered* pipeline leaves. Retry keeps every Succeeded node: the exit
handler of the failed run has deleted the DGD, but deploy Succeeded and is not re-run, so every re-run pod
that talks to the deployment must bring it back itself (steps/deploy.py --ensure as the points' init
container, steps/wait_ready.py --ensure-from). Before this was fixed, a sweep with a failed point ended
Succeeded (Retry refused it), and a Retry after a failed wait-ready re-ran it against a deleted DGD.
"""

from __future__ import annotations

import json

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import load_recipe
from tests.support.argo_retry import Run
from workflows.render import render_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
NEEDS_DEPLOYMENT = {"wait-ready", "aiperf-point"}  # pods that talk to the DGD


@pytest.fixture(scope="module")
def rendered():
    b = render_recipe(load_recipe(RECIPE), load_cluster_settings())
    pipeline = next(t for t in b.templates if t["spec"].get("entrypoint") == "pipeline")["spec"]
    steps = {
        t["spec"]["templates"][0]["name"]: t["spec"]["templates"][0]
        for t in b.templates
        if "entrypoint" not in t["spec"]
    }
    params = {p["name"]: p["value"] for p in b.workflow["spec"]["arguments"]["parameters"]}
    return pipeline, steps, json.loads(params["points"])


def _run(rendered, failing: dict[str, set]) -> Run:
    pipeline, steps, points = rendered
    Run.items = points

    def outcome(template, task, item):
        bad = failing.get(template)
        if bad is None:
            return "Succeeded"
        if template == "aiperf-point":
            return "Failed" if item["concurrency"] in bad else "Succeeded"
        return "Failed"

    # The verdict fails exactly when a point failed or nothing was measured (steps/verdict.py).
    if "aiperf-point" in failing or "wait-ready" in failing:
        failing = {**failing, "verdict": set()}
    return Run(pipeline, steps, outcome)


def _brings_deployment_back(tmpl: dict) -> bool:
    args = tmpl["container"]["args"]
    inits = [c for c in tmpl.get("initContainers", []) if "--ensure" in c["args"]]
    return "--ensure-from" in args or bool(inits)


def test_a_failed_point_fails_the_run_and_retry_reruns_only_it(rendered):
    _, steps, points = rendered
    bad = points[1]["concurrency"]
    run = _run(rendered, {"aiperf-point": {bad}})
    assert run.phase == "Failed", "a sweep with a failed point must end Failed (dag.go assessDAGPhase)"
    deleted, kept = run.retry()
    rerun_main = {i for i in deleted if run.nodes[i].type == "Pod" and not i.startswith("wf.onExit")}
    assert {run.nodes[i].item["concurrency"] for i in rerun_main} == {bad}
    # measured points are kept: every succeeded point pod survives the Retry
    kept_points = {run.nodes[i].item["concurrency"] for i in kept if run.nodes[i].template == "aiperf-point"}
    assert kept_points == {p["concurrency"] for p in points} - {bad}
    assert {run.nodes[i].template for i in kept} >= {"deploy", "wait-ready", "model-cache"}
    # the DGD is gone (exit handler), deploy is not re-run: the re-run point must bring it back
    for i in rerun_main:
        assert _brings_deployment_back(steps[run.nodes[i].template]), run.nodes[i].template
    # the whole exit handler runs again: teardown releases the re-created DGD, publish and verdict re-run
    assert {
        n.template for i, n in run.nodes.items() if i in deleted and i.startswith("wf.onExit") and n.type == "Pod"
    } >= {"teardown", "publish", "verdict"}


def test_retry_after_a_failed_wait_ready_recreates_the_deployment(rendered):
    _, steps, points = rendered
    run = _run(rendered, {"wait-ready": set()})
    assert run.phase == "Failed"
    deleted, kept = run.retry()
    rerun = {run.nodes[i].template for i in deleted if run.nodes[i].type == "Pod" and not i.startswith("wf.onExit")}
    assert rerun == {"wait-ready"}, rerun  # the points were Omitted: their nodes go and are created anew
    assert any(i.startswith("wf.gpu-span.point") for i in deleted)
    assert "deploy" in {run.nodes[i].template for i in kept}
    for template in rerun & NEEDS_DEPLOYMENT:
        assert _brings_deployment_back(steps[template]), template


def test_every_pod_that_needs_the_deployment_can_bring_it_back(rendered):
    # Whatever fails, a re-run pod of these templates finds the DGD deleted by the exit handler.
    _, steps, _ = rendered
    for template in NEEDS_DEPLOYMENT:
        assert _brings_deployment_back(steps[template]), template
    init = steps["aiperf-point"]["initContainers"][0]
    assert init["args"][init["args"].index("--dgd-file") + 1] == "/work/run/deploy/dgd.yaml"
    deploy_args = steps["deploy"]["container"]["args"]
    assert deploy_args[deploy_args.index("--save") + 1] == "/work/run/deploy/dgd.yaml"


def test_a_clean_run_succeeds_and_retry_refuses_it(rendered):
    run = _run(rendered, {})
    assert run.phase == "Succeeded"
    with pytest.raises(RuntimeError, match="Cannot retry"):
        run.retry()
