"""Worker rollouts on exactly-sized GPU pools (issue 20, item 7).

A worker pod-template change makes the Dynamo operator roll every Deployment-backed worker component, by
default with 25 % surge (deploy/operator/internal/controller/dynamographdeployment_rollout.go
resolveRollingUpdateParams; docs/pages/kubernetes/rolling-update.md). Where the run's GPUs are exactly
what it uses, the surge pods sit Unschedulable. The DGD must then roll with surge 0, one pod at a time.
"""

from __future__ import annotations

import math

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.dgd.lanes import spare_gpus
from infersweep.dgd.render import ROLLING_MAX_SURGE, ROLLING_MAX_UNAVAILABLE, default_surge_gpus, render_dgd
from infersweep.recipe import all_recipe_paths, load_recipe
from workflows.pipeline import recipe_run


def operator_resolves(annotations: dict[str, str], replicas: int) -> tuple[int, int]:
    """resolveRollingUpdateParams of the operator, transcribed: 25 % defaults, percentages scaled against the
    desired replicas (surge rounded up, unavailable down), and surge raised to 1 when both are 0."""

    def scaled(value: str, up: bool) -> int:
        if value.endswith("%"):
            x = int(value[:-1]) * replicas / 100
            return math.ceil(x) if up else math.floor(x)
        return int(value)

    surge = scaled(annotations.get(ROLLING_MAX_SURGE) or "25%", True)
    unavailable = scaled(annotations.get(ROLLING_MAX_UNAVAILABLE) or "25%", False)
    if surge == 0 and unavailable == 0:
        surge = 1
    return surge, unavailable


def _workers(dgd: dict) -> list[dict]:
    return [c for c in dgd["spec"]["components"] if c["type"] != "frontend"]


def test_an_exact_pool_rolls_without_surge():
    settings = load_cluster_settings()
    r = load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d")
    assert spare_gpus(r, settings) == 0  # the whole H100 pool, every GPU in use
    dgd = yaml.safe_load(recipe_run(r, settings).arguments["dgd"])
    for comp in _workers(dgd):
        annotations = comp["podTemplate"]["metadata"]["annotations"]
        assert operator_resolves(annotations, comp["replicas"]) == (0, 1), comp["name"]


@pytest.mark.parametrize("name", sorted(p.stem for p in all_recipe_paths()))
def test_no_catalog_recipe_surges_beyond_the_gpus_it_holds(name):
    """Whatever the pool: the GPUs the operator's surge asks for fit in what the run's admission holds."""
    settings = load_cluster_settings()
    r = load_recipe(name)
    try:
        spare = spare_gpus(r, settings)
    except Exception as e:  # a recipe the default pools cannot admit is refused elsewhere
        pytest.skip(f"not admitted by params/cluster.yaml: {e}")
    dgd = render_dgd(r, spare_gpus=spare)
    roles = r.recipe.topology.roles()
    surge_gpus = 0
    for comp, w in zip(_workers(dgd), roles.values(), strict=True):
        if w.nodes > 1:
            continue  # Grove/LWS-backed: no surge
        annotations = (comp["podTemplate"].get("metadata") or {}).get("annotations") or {}
        surge_gpus += operator_resolves(annotations, comp["replicas"])[0] * (w.gpus_per_replica // w.nodes)
    assert surge_gpus <= spare


def test_spare_gpus_keep_the_operator_default():
    r = load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d")
    dgd = render_dgd(r, spare_gpus=default_surge_gpus(r))
    assert all(
        ROLLING_MAX_SURGE not in ((c["podTemplate"].get("metadata") or {}).get("annotations") or {})
        for c in _workers(dgd)
    )
    assert render_dgd(r) == dgd  # unknown pool (spare None): the operator's defaults


def test_v1alpha1_carries_the_same_rollout_on_the_service():
    r = load_recipe("qwen3-32b-fp8-vllm-disagg-4p4d")
    dgd = render_dgd(r, api_version="v1alpha1", spare_gpus=0)
    for name, svc in dgd["spec"]["services"].items():
        if svc["componentType"] == "frontend":
            continue
        assert svc["annotations"] == {ROLLING_MAX_SURGE: "0", ROLLING_MAX_UNAVAILABLE: "1"}, name
