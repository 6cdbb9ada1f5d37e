"""End to end on this machine: the recipe launcher submitted as the Argo UI submits it, with only `recipe`
given, renders the recipe in its own step, creates the run Workflow, and that run (a separate Workflow on the
pipeline template, as a controller would pick it up) goes to completion with the parameters the launcher
derived: the DGD, the points, the GPU-lock keys, the priority. One test (the machine has 2 cores)."""

from __future__ import annotations

import json

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.launcher_run import launch_local
from infersweep.local.run import ARTIFACT_BUCKET
from infersweep.local.standins.s3server import LocalS3
from infersweep.recipe import load_recipe
from tests.support.run_failure import why_failed
from workflows.gpu_guard import guard_arguments
from workflows.launcher import LAUNCHED_BY, RECIPE_LAUNCHER
from workflows.strict import violations

pytestmark = pytest.mark.e2e
RECIPE = "demo-prefix-rr"


def test_a_ui_submit_with_only_recipe_runs_the_pipeline_with_derived_parameters(tmp_path):
    settings = load_cluster_settings()
    with LocalS3(buckets=[settings.s3.bucket, ARTIFACT_BUCKET]) as s3:
        res = launch_local(
            RECIPE_LAUNCHER, {"recipe": RECIPE}, out_root=tmp_path / "runs", cache_root=tmp_path / "cache", s3=s3
        )
        keys = [o["Key"] for o in s3.client().list_objects_v2(Bucket=settings.s3.bucket).get("Contents", [])]
    assert res.launcher.phase == "Succeeded", res.launcher.message
    assert len(res.runs) == 1, "the launcher creates exactly one run"
    doc, run, _, run_dir = res.runs[0]
    name = doc["metadata"]["name"]
    # the launcher reports the run it created, and the run names its launcher
    create = res.launcher.node_by_display("create-run")
    assert create.outputs["run-name"] == name
    assert doc["metadata"]["labels"][LAUNCHED_BY] == res.launcher.name
    # a run a Strict controller accepts: the pipeline template by reference, arguments and priority only
    assert violations(doc) == [] and set(doc["spec"]) == {"workflowTemplateRef", "arguments", "priority"}
    assert doc["spec"]["workflowTemplateRef"]["name"] == "infersweep-vllm-agg"
    assert doc["spec"]["priority"] < 0
    assert run.phase == "Succeeded", why_failed(run)
    # derived, not typed: the DGD, the points and the lock keys follow from the recipe
    params = {p["name"]: p["value"] for p in doc["spec"]["arguments"]["parameters"]}
    r = load_recipe(RECIPE)
    assert params["recipe"] == RECIPE and params["gpu-count"] == "2"
    # every load, each repeated as the recipe asks (regression.repetitions), in interleaved rounds
    points = json.loads(params["points"])
    reps = r.recipe.regression.repetitions
    assert reps > 1 and [p["concurrency"] for p in points] == r.recipe.workload.concurrency * reps
    assert sorted({p["repetition"] for p in points}) == list(range(reps))
    assert {k: params[k] for k in guard_arguments(r, settings)} == guard_arguments(r, settings)
    assert "kind: DynamoGraphDeployment" in params["dgd"]
    # the run measured every point and published them under its own name
    results = run_dir / "volumes" / "workdir" / "run"
    for c in r.recipe.workload.concurrency:
        assert json.loads((results / "points" / f"c{c}" / "result.json").read_text())["status"] == "ok"
    assert any(k.startswith(f"{settings.s3.prefix}/{RECIPE}/{name}/") and k.endswith("manifest.json") for k in keys)
