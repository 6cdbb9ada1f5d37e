"""KEDA for the autoscaled Qwen3.6 recipe (annotation: infersweep/dgd/autoscaling.py; ScaledObjects: infersweep/platform/keda.py):
rendered, valid against KEDA's CRD, scoped to its own deployment (checked by Prometheus's own PromQL engine),
applied and deleted with the DGD.

The seed (seeds/000): "KEDA ... triggering scale-out based on the dynamo_frontend_active_requests metric
(target threshold of 16 active requests per worker)", 1-8 aggregated SGLang workers x TP=2.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd.render import render_dgd
from infersweep.platform.keda import ANNOTATION, frontend_query, scaled_objects
from infersweep.recipe import RecipeError, load_recipe, parse_recipe, recipe_data
from infersweep.schemas import SchemaError, validate_document
from tests.conftest import shared_dir
from tests.support.paths import REPO
from workflows.render import render_recipe

KEDA_RECIPE = "qwen36-35b-a3b-fp8-sglang-agg-keda"


def test_the_keda_recipe_renders_one_scaled_object_on_its_workers_adapter():
    b = render_recipe(load_recipe(KEDA_RECIPE), load_cluster_settings())
    [so] = b.scaled_objects
    name = b.dgd["metadata"]["name"]
    worker = next(c for c in b.dgd["spec"]["components"] if c["type"] == "worker")
    assert "scalingAdapter" in worker and worker["replicas"] == 1  # the adapter owns replicas from here
    # Dynamo names the adapter <dgd>-<lowercased component name> (generateAdapterName).
    assert so["spec"]["scaleTargetRef"] == {
        "apiVersion": "nvidia.com/v1alpha1",
        "kind": "DynamoGraphDeploymentScalingAdapter",
        "name": f"{name}-{worker['name'].lower()}",
    }
    assert (so["spec"]["minReplicaCount"], so["spec"]["maxReplicaCount"]) == (1, 8)
    [trigger] = so["spec"]["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "AverageValue"
    assert trigger["metadata"]["threshold"] == "16"
    assert "dynamo_frontend_active_requests{" in trigger["metadata"]["query"]
    assert trigger["metadata"]["serverAddress"] == load_cluster_settings().autoscaling.prometheus_url
    assert so in b.documents()  # validated with everything else; `render` writes it


def test_the_scaled_object_is_valid_against_kedas_crd_and_strictly_so():
    [so] = scaled_objects(render_dgd(load_recipe(KEDA_RECIPE)), "bench")
    validate_document(so)
    typo = {**so, "spec": {**so["spec"], "maxReplicas": 8}}
    with pytest.raises(SchemaError, match="maxReplicas: unknown field .*maxReplicaCount"):
        validate_document(typo)
    no_target = {**so, "spec": {k: v for k, v in so["spec"].items() if k != "scaleTargetRef"}}
    with pytest.raises(SchemaError, match="scaleTargetRef: required"):
        validate_document(no_target)


def test_the_shipped_keda_crd_is_the_reference_one():
    ref = shared_dir() / "reference" / "keda" / "keda.sh_scaledobjects.yaml"
    if not ref.is_file():
        pytest.skip(f"{ref} absent (shared/ reference set not here)")
    assert (REPO / "infersweep" / "reference" / "keda" / "keda.sh_scaledobjects.yaml").read_bytes() == ref.read_bytes()


def test_the_v1alpha1_dgd_gets_the_same_scaled_object():
    r = load_recipe(KEDA_RECIPE)
    old = render_dgd(r, api_version="v1alpha1")
    assert old["spec"]["services"]["SglangWorker"]["scalingAdapter"] == {"enabled": True}  # bare {} is off in v1alpha1
    assert scaled_objects(old, "bench") == scaled_objects(render_dgd(r), "bench")


def test_recipes_without_autoscaling_render_no_scaled_object(tmp_path):
    b = render_recipe(load_recipe("qwen3-32b-fp8-sglang-agg"), load_cluster_settings())
    assert b.scaled_objects == [] and ANNOTATION not in (b.dgd["metadata"].get("annotations") or {})
    files = render_recipe(load_recipe(KEDA_RECIPE), load_cluster_settings()).write(tmp_path)
    assert tmp_path / "scaledobjects.yaml" in files
    assert [d["kind"] for d in yaml.safe_load_all((tmp_path / "scaledobjects.yaml").read_text())] == ["ScaledObject"]


@pytest.mark.parametrize(
    "change, expect",
    [
        ({"target_per_replica": None}, "autoscaling.target_per_replica: KEDA scales on a target"),
        ({"metric": "sglang:num_running_reqs"}, "autoscaling.metric: the ScaledObject queries this DGD's frontend"),
    ],
)
def test_an_autoscaling_range_keda_cannot_use_is_refused(change, expect):
    r = load_recipe(KEDA_RECIPE)
    data = recipe_data(r.path)
    a = dict(data["topology"]["workers"]["autoscaling"]) | change
    data["topology"] = {
        "workers": {**data["topology"]["workers"], "autoscaling": {k: v for k, v in a.items() if v is not None}}
    }
    with pytest.raises(RecipeError, match=expect):
        parse_recipe(data, r.path)


# ---- the query, evaluated by Prometheus's PromQL engine (promtool test rules)


def _promtool_eval(tmp_path: Path, series: dict[str, float], expr: str, expected: float) -> subprocess.CompletedProcess:
    test = {
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": [{"series": s, "values": f"{v:g}x5"} for s, v in series.items()],
                "promql_expr_test": [
                    {"expr": expr, "eval_time": "2m", "exp_samples": [{"labels": "{}", "value": expected}]}
                ],
            }
        ],
    }
    f = tmp_path / "keda_query_test.yaml"
    f.write_text(yaml.safe_dump(test, sort_keys=False))
    return subprocess.run(["promtool", "test", "rules", str(f)], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(
    not shutil.which("promtool"), reason="promtool not installed (scripts/setup.sh installs prometheus)"
)
def test_the_query_counts_this_deployments_frontends_only(tmp_path):
    """Series labelled as a Prometheus Kubernetes scrape labels them (namespace, pod added to the frontend's
    own `model` label). Only this DGD's frontends count: not a DGD whose name extends ours, not the same
    name in another namespace, not a worker pod."""
    dgd, ns, model = "qwen36-agg-keda", "bench", "Qwen/Qwen3.6-35B-A3B-FP8"
    metric = "dynamo_frontend_active_requests"

    def s(pod: str, namespace: str = ns) -> str:
        return f'{metric}{{model="{model}",namespace="{namespace}",pod="{pod}",job="dynamo-frontend"}}'

    series = {
        s(f"{dgd}-frontend-7d9f8c6b5-x2x4q"): 30,  # operator Deployment pod
        s(f"{dgd}-0-frontend-k8p2m"): 10,  # Grove PodClique pod
        s(f"{dgd}-2-frontend-abcde"): 500,  # another DGD named qwen36-agg-keda-2
        s(f"{dgd}-frontend-7d9f8c6b5-zz9zz", "other"): 500,  # same name, other namespace
        s(f"{dgd}-0-sglangworker-q1w2e"): 500,  # a worker pod (not a frontend)
    }
    expr = frontend_query(metric, dgd, ns)
    p = _promtool_eval(tmp_path, series, expr, 40)
    assert p.returncode == 0, p.stdout + p.stderr
    # KEDA's AverageValue target: the HPA asks for ceil(40 / 16) = 3 workers, within the recipe's 1-8.
    assert min(8, max(1, math.ceil(40 / 16))) == 3
    # And the check can fail: a wrong expectation is reported by promtool.
    assert _promtool_eval(tmp_path, series, expr, 540).returncode != 0


# ---- applied with the DGD, deleted with it (the real kubernetes client against tests/support/k8s_standin.py)


def _step(module: str, args: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_deploy_applies_the_scaled_object_and_teardown_deletes_it(tmp_path):
    from tests.support.k8s_standin import K8sStandin

    b = render_recipe(load_recipe(KEDA_RECIPE), load_cluster_settings())
    name = b.dgd["metadata"]["name"]
    with K8sStandin() as api:
        env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        env.pop("INFERSWEEP_PLATFORM", None)
        env.pop("INFERSWEEP_PLATFORM_ADAPTER", None)
        # Someone else's ScaledObject in the namespace: teardown must leave it alone.
        api.objects[("keda.sh", "v1alpha1", "bench", "scaledobjects", "other")] = {
            "metadata": {"name": "other", "labels": {"infersweep.io/dgd": "another-dgd"}}
        }
        for _attempt in (1, 2):  # a retried deploy step (same run: same owner) finds both objects and patches them
            p = _step(
                "steps.deploy",
                [
                    "--dgd",
                    yaml.safe_dump(b.dgd),
                    "--namespace",
                    "bench",
                    "--owner-name",
                    "wf-1",
                    "--owner-uid",
                    "uid-wf-1",
                ],
                env,
            )
            assert p.returncode == 0, p.stderr
        dgd = api.objects[("nvidia.com", "v1beta1", "bench", "dynamographdeployments", name)]
        so = api.objects[("keda.sh", "v1alpha1", "bench", "scaledobjects", f"{name}-sglangworker")]
        assert so["spec"] == scaled_objects(b.dgd, "bench")[0]["spec"]
        # Owned by the DGD: the garbage collector deletes it with the DGD, whoever deletes the DGD.
        assert so["metadata"]["ownerReferences"][0] | {"uid": None} == {
            "apiVersion": "nvidia.com/v1beta1",
            "kind": "DynamoGraphDeployment",
            "name": name,
            "uid": None,
            "blockOwnerDeletion": False,
            "controller": False,
        }
        assert so["metadata"]["ownerReferences"][0]["uid"] == dgd["metadata"]["uid"]
        patches = [path for m, path, _ in api.requests if m == "PATCH" and "/scaledobjects/" in path]
        assert patches == [f"/apis/keda.sh/v1alpha1/namespaces/bench/scaledobjects/{name}-sglangworker"]

        p = _step("steps.teardown", ["--name", name, "--namespace", "bench", "--api-version", "v1beta1"], env)
        assert p.returncode == 0, p.stderr
        left = sorted(k[4] for k in api.objects)
        assert left == ["other"], left
        # The ScaledObject goes before the DGD, so KEDA never scales a deployment being deleted.
        deletes = [path for m, path, _ in api.requests if m == "DELETE"]
        assert deletes.index(
            f"/apis/keda.sh/v1alpha1/namespaces/bench/scaledobjects/{name}-sglangworker"
        ) < deletes.index(f"/apis/nvidia.com/v1beta1/namespaces/bench/dynamographdeployments/{name}")
