"""Under `gpu_guard.scheduler: kueue` each run's DGD pods are one Kueue pod group of their own (issue 34
item 6). Kueue groups plain pods by the `kueue.x-k8s.io/pod-group-name` label and admits a group when the
declared `pod-group-total-count` members exist (kueue site docs tasks/run/plain_pods.md, "Running a group of
Pods to be admitted together"); a group named after the recipe would merge two runs of one recipe (a nightly
and an ad-hoc submit) into one group, each pod declaring only its own DGD's count."""

from __future__ import annotations

import yaml

from infersweep.cluster_settings import load_cluster_settings, parse_cluster_settings
from infersweep.platform import operations
from infersweep.platform.operations import DeployRequest
from infersweep.recipe import load_recipe
from tests.support.recording_platform import RecordingPlatform
from workflows.render import render_recipe

KUEUE_POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"  # kueue GroupNameLabel
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"


def test_two_runs_of_one_recipe_are_two_kueue_pod_groups(monkeypatch):
    base = load_cluster_settings()
    data = base.model_dump(mode="python", by_alias=True)
    data["gpu_guard"] = {**data.get("gpu_guard", {}), "scheduler": "kueue"}
    settings = parse_cluster_settings(data)
    text = yaml.safe_dump(render_recipe(load_recipe(RECIPE), settings).dgd)
    fake = RecordingPlatform()
    monkeypatch.setattr(operations, "get_platform", lambda: fake)
    for run in ("nightly-abcde", "adhoc-fghij"):
        operations.deploy(DeployRequest("ns", dgd_text=text, run_id=run))
    groups = []
    for dgd in fake.applied:
        names = {c["podTemplate"]["metadata"]["labels"][KUEUE_POD_GROUP_LABEL] for c in dgd["spec"]["components"]}
        assert names == {dgd["metadata"]["name"]}  # every pod of the DGD in its run's group
        groups.append(names.pop())
    assert groups[0] != groups[1]
