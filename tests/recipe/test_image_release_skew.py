"""A recipe's own image of another Dynamo line than the operator its --dgd-api renders for is said in the
run's provenance (issue 34 item 12): the Lightning vLLM recipes pin vllm-runtime:1.5.0-nemotron-3.5-lightning-
dev.1 (the recipe's `image:` wins over the release's), which `--dgd-api v1alpha1` pairs with the Dynamo 1.3.1
release's operator, two minor versions apart. The DGD carries the annotation and the run context (run.json)
`engine_image_skew`; within one minor version nothing is added."""

from __future__ import annotations

import json

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.recipe import load_recipe
from workflows.render import render_recipe

LIGHTNING_VLLM = "lightning-vllm-agg-h200-dspark"
SKEW = "infersweep.io/image-release-skew"


def _render(recipe: str, api: str):
    b = render_recipe(load_recipe(recipe), load_cluster_settings(), dgd_api=api)
    params = {p["name"]: p["value"] for p in b.workflow["spec"]["arguments"]["parameters"]}
    return b.dgd, json.loads(params["context"])


def test_a_lightning_image_on_the_1_3_operator_is_said_in_provenance():
    dgd, ctx = _render(LIGHTNING_VLLM, "v1alpha1")
    note = dgd["metadata"]["annotations"][SKEW]
    assert "vllm-runtime:1.5.0-nemotron-3.5-lightning-dev.1 is Dynamo 1.5" in note and "Dynamo 1.3.1" in note
    assert ctx["engine_image_skew"] == note


@pytest.mark.parametrize("recipe, api", [(LIGHTNING_VLLM, "v1beta1"), ("demo-prefix-rr", "v1alpha1")])
def test_an_image_within_one_minor_version_adds_nothing(recipe, api):
    dgd, ctx = _render(recipe, api)
    assert SKEW not in (dgd["metadata"].get("annotations") or {}) and "engine_image_skew" not in ctx
