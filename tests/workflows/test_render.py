"""What reaches a cluster: rendered with Hera, checked by the real Argo schemas and the real DGD CRD."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import RecipeError, load_recipe
from infersweep.schemas import SchemaError, validate_argo, validate_dgd, validate_document
from workflows.render import render_recipe

NEMOTRON = "nemotron-3-nano-fp8-vllm-agg-kv"


@pytest.fixture(scope="module")
def bundle():
    return render_recipe(load_recipe(NEMOTRON), load_cluster_settings())


def test_every_document_validates_against_both_argo_schemas_and_the_crd(bundle):
    for doc in bundle.documents():
        validate_document(doc)
    for v in ("v4.1.2", "v3.7.18"):
        for doc in [bundle.workflow, *bundle.templates]:
            validate_argo(doc, v)
    validate_dgd(bundle.dgd)


def test_a_field_hera_would_drop_is_caught(bundle):
    wt = copy.deepcopy(next(t for t in bundle.templates if t["metadata"]["name"] == "infersweep-vllm-agg"))
    wt["spec"]["synchronization"] = {"semaphore": {"configMapKeyRef": {"name": "gpus", "key": "h100"}}}
    with pytest.raises(SchemaError, match="synchronization.semaphore"):
        validate_argo(wt, "v4.1.2")


def test_v1alpha1_dgd_for_older_operators_validates():
    b = render_recipe(load_recipe(NEMOTRON), load_cluster_settings(), dgd_api="v1alpha1")
    assert b.dgd["apiVersion"] == "nvidia.com/v1alpha1"
    validate_dgd(b.dgd)
    assert (
        yaml.safe_load(dict((p["name"], p["value"]) for p in b.workflow["spec"]["arguments"]["parameters"])["dgd"])
        == b.dgd
    )


def test_dgd_has_frontend_with_kv_router_and_eight_gpu_workers(bundle):
    comps = {c["type"]: c for c in bundle.dgd["spec"]["components"]}
    assert comps["frontend"]["podTemplate"]["spec"]["containers"][0]["args"] == ["--router-mode", "kv"]
    w = comps["worker"]
    c = w["podTemplate"]["spec"]["containers"][0]
    assert w["replicas"] == 8 and c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert c["command"] == ["python3", "-m", "dynamo.vllm"]
    assert c["args"][:4] == ["--model", "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-FP8", "--tensor-parallel-size", "1"]
    assert {"name": "model-cache", "persistentVolumeClaim": {"claimName": "model-cache", "readOnly": True}} in w[
        "podTemplate"
    ]["spec"]["volumes"]


def _pipeline(bundle):
    return next(t for t in bundle.templates if t["metadata"]["name"] == "infersweep-vllm-agg")


def test_pipeline_dag_order_and_exit_handler(bundle):
    spec = _pipeline(bundle)["spec"]
    tmpl = {t["name"]: t for t in spec["templates"]}
    tasks = {t["name"]: t for t in tmpl["pipeline"]["dag"]["tasks"]}
    span = {t["name"]: t for t in tmpl["gpu-span"]["dag"]["tasks"]}
    assert tasks["model-cache"]["depends"] == "ensure-pvc"
    assert tasks["gpu-span"]["depends"] == "model-cache"
    span = {t["name"]: t for t in tmpl["gpu-span"]["dag"]["tasks"]}
    assert span["wait-ready"]["depends"] == "deploy" and span["point"]["depends"] == "wait-ready"
    # Nothing in the main DAG follows the points (so UI Retry re-runs failed points); the exit handler
    # releases the GPUs and publishes whatever ended the run, then judges it.
    assert set(tasks) == {"ensure-pvc", "model-cache", "gpu-span"}
    assert set(span) == {"deploy", "wait-ready", "point"}
    assert spec["onExit"] == "exit-handler"
    exit_tasks = {t["name"]: t for t in tmpl["exit-handler"]["dag"]["tasks"]}
    assert "depends" not in exit_tasks["teardown"] and "depends" not in exit_tasks["scrape"]
    # summarize runs whatever the scrape did (a failed required query must not lose the results)
    assert exit_tasks["summarize"]["depends"] == "scrape.Succeeded || scrape.Failed || scrape.Errored"
    assert exit_tasks["publish"]["depends"] == "summarize"
    # one at a time on the ReadWriteOnce workdir (tests/workflows/test_pipeline_lifecycle.py), the verdict last
    assert exit_tasks["regression-check"]["depends"] == "publish"
    assert exit_tasks["verdict"]["depends"].startswith("regression-check.Succeeded || regression-check.Failed")
    assert tmpl["gpu-span"]["parallelism"] == 1, "points share one deployment: one at a time by default"
    assert tmpl["gpu-span"]["failFast"] is False, "a failed point must not cancel the others"
    assert span["point"]["withParam"] == "{{inputs.parameters.points}}"


def test_points_parameter_is_the_recipe_sweep(bundle):
    params = {p["name"]: p["value"] for p in bundle.workflow["spec"]["arguments"]["parameters"]}
    points = json.loads(params["points"])
    r = load_recipe(NEMOTRON).recipe
    # the sweep, once per repetition (regression.repetitions, default 3), in rounds
    assert [(p["concurrency"], p["repetition"]) for p in points] == [
        (c, k) for k in range(r.regression.repetitions) for c in r.workload.concurrency
    ]
    assert bundle.workflow["spec"]["workflowTemplateRef"] == {"name": "infersweep-vllm-agg"}


def test_no_retry_on_benchmark_points(bundle):
    point = next(t for t in bundle.templates if t["metadata"]["name"] == "infersweep-aiperf-point")
    assert "retryStrategy" not in point["spec"]["templates"][0]
    deploy = next(t for t in bundle.templates if t["metadata"]["name"] == "infersweep-deploy")
    retry = deploy["spec"]["templates"][0]["retryStrategy"]
    # OnError never retries a non-zero exit (operator.go processNodeRetries): Always + exit-code expression.
    assert retry["retryPolicy"] == "Always" and "asInt(lastRetry.exitCode) == 75" in retry["expression"]


def test_credentials_come_from_secrets_not_parameters(bundle):
    text = yaml.safe_dump_all(bundle.documents())
    for word in ("AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "aws_secret", "hf_"):
        assert word not in text
    publish = next(t for t in bundle.templates if t["metadata"]["name"] == "infersweep-publish")
    assert publish["spec"]["templates"][0]["container"]["envFrom"] == [
        {"secretRef": {"name": "infersweep-s3", "optional": True}}
    ]


def test_set_override_of_an_unknown_parameter_is_refused():
    with pytest.raises(RecipeError, match="no such parameter"):
        render_recipe(load_recipe(NEMOTRON), load_cluster_settings(), overrides={"prometheus_url": "x"})
