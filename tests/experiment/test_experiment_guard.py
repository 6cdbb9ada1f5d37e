"""An experiment's DGDs go through the same scheduling step as a recipe run's (infersweep.dgd.deployable_dgd):
under Kueue, KAI or Volcano the experiment Workflow holds no Argo lock, so the queue labels on its DGD pods
are the only thing that admits them against the GPU quota; without them the pods bypass the guard."""

from __future__ import annotations

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from infersweep.platform.dgd import LANE_LABEL_PREFIX


def deployed(name: str, settings) -> list[dict]:
    from workflows.experiment import experiment_template

    doc = experiment_template(make_plan(load_experiment(name)), settings).to_dict()
    dag = [t for tpl in doc["spec"]["templates"] if tpl.get("dag") for t in tpl["dag"]["tasks"]]
    return [
        yaml.safe_load(next(p["value"] for p in t["arguments"]["parameters"] if p["name"] == "dgd"))
        for t in dag
        if t["name"].endswith("-deploy")
    ]


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_under_kueue_every_experiment_dgd_pod_carries_the_queue_and_its_pod_group(path):
    settings = load_cluster_settings().changed(gpu_guard={"scheduler": "kueue"})
    dgds = deployed(path.stem, settings)
    assert dgds
    for dgd in dgds:
        comps = dgd["spec"]["components"]
        pods = sum(c["replicas"] * (c.get("multinode") or {}).get("nodeCount", 1) for c in comps)
        for c in comps:
            meta = c["podTemplate"]["metadata"]
            assert meta["labels"]["kueue.x-k8s.io/queue-name"].startswith("infersweep-"), (path.stem, c["name"])
            assert meta["labels"]["kueue.x-k8s.io/pod-group-name"] == dgd["metadata"]["name"]
            assert meta["annotations"]["kueue.x-k8s.io/pod-group-total-count"] == str(pods)


@pytest.mark.parametrize("scheduler,field", [("kai", "kai-scheduler"), ("volcano", "volcano")])
def test_under_kai_and_volcano_the_experiment_pods_name_the_scheduler(scheduler, field):
    settings = load_cluster_settings().changed(gpu_guard={"scheduler": scheduler})
    for dgd in deployed("nemotron-rr-vs-kv", settings):
        assert all(c["podTemplate"]["spec"]["schedulerName"] == field for c in dgd["spec"]["components"])


def test_under_the_argo_guard_every_experiment_dgd_names_the_lanes_the_experiment_holds():
    # deploy waits on these labels until the lane's earlier DGDs are gone (infersweep/platform/operations.py
    # wait_for_lane): the experiment holds its largest treatment's admission, so every DGD carries its lanes.
    settings = load_cluster_settings()
    lanes = [
        {k: v for k, v in d["metadata"]["labels"].items() if k.startswith(LANE_LABEL_PREFIX)}
        for d in deployed("qwen3-32b-tp1-vs-tp2", settings)
    ]
    assert lanes and lanes[0] and all(x == lanes[0] for x in lanes)


def test_under_kueue_a_change_of_pod_count_restarts_the_workers(tmp_path):
    """The restart class is judged on the DGD as applied (infersweep.dgd.deployable_dgd). Under Kueue every pod
    template carries the pod group's total count (kueue.x-k8s.io/pod-group-total-count); the operator's worker
    hash covers the pod template (ai-dynamo/dynamo deploy/operator ComputeDGDWorkersSpecHash excludes only
    replicas, scalingAdapter, modelRef, eppConfig, topologyConstraint), so dropping two prefill workers, a scale in
    place under the Argo guard, rolls every worker under Kueue. (6P2D -> 4P4D keeps 9 pods: a scale either way.)"""
    from infersweep.experiment.restart import RestartClass, classify

    spec = tmp_path / "more-decode.yaml"
    spec.write_text(
        "name: more-decode\ndescription: 4P4D vs 2P4D\nbase: qwen3-32b-fp8-vllm-disagg-4p4d\n"
        "factors:\n  decode:\n    d4: {}\n    p2: {topology: {prefill: {replicas: 2}, decode: {replicas: 4}}, gpu: {count: 12}}\n"
        "question: {metrics: [ttft_ms_avg], concurrency: [8]}\nbaseline: d4\n"
    )
    e = load_experiment(spec)
    r = {t.name: t.recipe for t in e.treatments}
    argo, kueue = load_cluster_settings(), load_cluster_settings().changed(gpu_guard={"scheduler": "kueue"})
    assert classify(r["d4"], r["p2"], argo).cls is RestartClass.SCALE
    assert classify(r["d4"], r["p2"], kueue).cls is RestartClass.WORKER
    mooncake = {t.name: t.recipe for t in load_experiment("qwen3-32b-mooncake").treatments}
    assert classify(mooncake["6p2d"], mooncake["4p4d"], kueue).cls is RestartClass.SCALE
