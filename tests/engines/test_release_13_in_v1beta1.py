"""A cluster on a Dynamo 1.3 operator renders the 1.3.1 release in v1beta1 (issue 34 item 10: "render what each
serves"). The 1.3 operator serves v1beta1 (ai-dynamo 1.3.1's own planner reads and JSON-patches its DGDs as
nvidia.com/v1beta1, dynamo/planner/connectors/kubernetes_api.py:35), so `--dgd-api v1beta1` with
params/cluster.yaml `dynamo_release: 1.3.1` gives a v1beta1 DGD with the 1.3.1 images; before, v1beta1 always
meant the 1.6.1 images and a 1.3 cluster had to render v1alpha1. The DGD is read back by the 1.3.1 planner's own
code (dynamo/planner/monitoring/dgd_services.py, from the ai-dynamo 1.3.1 wheel in .venv-engines-1.3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd import deployable_dgd
from infersweep.recipe import RecipeError, load_recipe
from tests.support.paths import REPO
from workflows.render import render_recipe

DISAGG = "qwen3-32b-fp8-vllm-disagg-4p4d-kv"
WHEEL_1_3_1 = REPO / ".venv-engines-1.3"
IMAGE_1_3_1 = "nvcr.io/nvidia/ai-dynamo/vllm-runtime:1.3.1"


def _on_1_3(**more):
    return load_cluster_settings().changed(dynamo_release="1.3.1", **more)


def _images(dgd: dict) -> set[str]:
    return {k["image"] for c in dgd["spec"]["components"] for k in c["podTemplate"]["spec"]["containers"]}


def test_a_1_3_cluster_renders_the_1_3_1_release_in_v1beta1():
    dgd = deployable_dgd(load_recipe(DISAGG), _on_1_3(), api_version="v1beta1")
    assert dgd["apiVersion"] == "nvidia.com/v1beta1" and _images(dgd) == {IMAGE_1_3_1}
    # the run's bundle says the same (its dgd argument and the engine version the context records)
    bundle = render_recipe(load_recipe(DISAGG), _on_1_3(), dgd_api="v1beta1")
    params = {p["name"]: p["value"] for p in bundle.workflow["spec"]["arguments"]["parameters"]}
    assert "apiVersion: nvidia.com/v1beta1" in params["dgd"] and IMAGE_1_3_1 in params["dgd"]
    # and v1alpha1 stays what it was for such a cluster
    assert _images_v1alpha1(deployable_dgd(load_recipe(DISAGG), _on_1_3(), api_version="v1alpha1")) == {IMAGE_1_3_1}


def _images_v1alpha1(dgd: dict) -> set[str]:
    return {s["extraPodSpec"]["mainContainer"]["image"] for s in dgd["spec"]["services"].values()}


def test_a_release_that_does_not_exist_is_one_error_naming_the_setting():
    with pytest.raises(
        RecipeError, match=r"params/cluster.yaml dynamo_release: 1\.4\.0: .*use one of \['1.3.1', '1.6.1'\]"
    ):
        deployable_dgd(load_recipe(DISAGG), load_cluster_settings().changed(dynamo_release="1.4.0"))


PLANNER_READS = """
import json, sys
from dynamo.planner.config.defaults import SubComponentType
from dynamo.planner.monitoring.dgd_services import get_component_from_type_or_name
dgd = json.load(sys.stdin)
out = {}
for kind in (SubComponentType.PREFILL, SubComponentType.DECODE):
    s = get_component_from_type_or_name(dgd, kind)
    out[kind.value] = [s.name, s.number_replicas(), s.get_gpu_count(), s.get_model_name()]
print(json.dumps(out))
"""


@pytest.mark.skipif(not any(WHEEL_1_3_1.glob("ai_dynamo-1.3.1.dist-info")), reason="no ai-dynamo 1.3.1 wheel")
def test_the_1_3_1_planner_reads_the_v1beta1_dgd():
    """What ai-dynamo 1.3.1's planner finds in the DGD: each worker role, its replicas, GPUs and model."""
    r = load_recipe(DISAGG)
    dgd = deployable_dgd(r, _on_1_3(), api_version="v1beta1")
    env = dict(os.environ, PYTHONPATH=str(WHEEL_1_3_1))
    p = subprocess.run(
        [sys.executable, "-c", PLANNER_READS],
        input=json.dumps(dgd),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    found = json.loads(p.stdout.strip().splitlines()[-1])
    by_name = {c["name"]: c for c in dgd["spec"]["components"]}
    for role in ("prefill", "decode"):
        name, replicas, gpus, model = found[role]
        assert by_name[name]["type"] == role and replicas == by_name[name]["replicas"] >= 1
        assert gpus >= 1 and model == r.model.id, found


def test_a_ui_launch_on_a_1_3_cluster_renders_1_3_1_in_v1beta1(tmp_path):
    """The launchers bake the install's settings into their render step (workflows/launcher.py settings_text),
    dynamo_release included: a UI launch renders what `infersweep render` does on that cluster."""
    from infersweep.commands.install import install_set
    from tests.cli.test_dgd_api_install import _launch
    from workflows.launcher import RECIPE_LAUNCHER

    argo_docs, _ = install_set(_on_1_3(), "v1beta1")
    wt = next(d for d in argo_docs if d["metadata"]["name"] == RECIPE_LAUNCHER)
    doc = _launch(wt, {"recipe": "demo-prefix-rr"}, tmp_path)
    params = {p["name"]: p["value"] for p in doc["spec"]["arguments"]["parameters"]}
    assert params["dgd-api-version"] == "v1beta1" and "apiVersion: nvidia.com/v1beta1" in params["dgd"]
    assert IMAGE_1_3_1 in params["dgd"] and "vllm-runtime:1.6.1" not in params["dgd"]
