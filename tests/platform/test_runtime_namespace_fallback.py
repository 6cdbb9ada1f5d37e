"""Where workers register when the operator reports no status.components[*].runtimeNamespace (issue 34,
item 9): as Dynamo's planner derives it (ai-dynamo 1.6.1 dynamo/planner/connectors/kubernetes.py
get_worker_runtime_namespace): base namespace + "-" + the DGD's `nvidia.com/current-worker-hash` annotation
for Deployment/LeaderWorkerSet-backed workers, the base for the frontend and other kinds."""

from __future__ import annotations

import json

import yaml

from infersweep.platform.dgd import runtime_namespaces
from infersweep.results import server_metrics
from tests.support.paths import TESTS

DGD = TESTS / "golden" / "recipes" / "lightning-vllm-disagg-b200-dspark-bf16" / "dgd-v1beta1.yaml"


def _deployed(kind: str = "Deployment", worker_hash: str | None = "5f9c2e1a", with_status: bool = True) -> dict:
    dgd = yaml.safe_load(DGD.read_text())
    dgd["metadata"]["namespace"] = "team-a"
    dgd["metadata"]["name"] = "sweep-7"
    if worker_hash:
        dgd["metadata"].setdefault("annotations", {})["nvidia.com/current-worker-hash"] = worker_hash
    names = [c["name"] for c in dgd["spec"]["components"]]
    if with_status:  # an operator that reports replicas and kinds but no runtimeNamespace
        comps = {n: {"componentKind": "Deployment" if n == "Frontend" else kind, "replicas": 1} for n in names}
        dgd["status"] = {"state": "successful", "components": comps}
    return dgd


def test_workers_register_under_the_worker_hash_when_the_status_names_no_namespace(tmp_path):
    found = runtime_namespaces(_deployed())
    assert found["Frontend"] == "team-a-sweep-7"
    workers = {n: ns for n, ns in found.items() if n != "Frontend"}
    assert workers and set(workers.values()) == {"team-a-sweep-7-5f9c2e1a"}
    # what the scrape then asks Prometheus for: the workers' series, not the base namespace's empty set
    (tmp_path / "ready.json").write_text(json.dumps({"dgd": "sweep-7", "runtime_namespaces": found}))
    ns = server_metrics.worker_namespaces(tmp_path, "team-a", "sweep-7")
    assert "team-a-sweep-7-5f9c2e1a" in ns


def test_grove_backed_workers_and_no_hash_keep_the_base_and_a_hash_without_status_is_indeterminate():
    grove = runtime_namespaces(_deployed(kind="PodClique"))
    assert set(grove.values()) == {"team-a-sweep-7"}
    no_hash = runtime_namespaces(_deployed(worker_hash=None))
    assert set(no_hash.values()) == {"team-a-sweep-7"}
    # the planner raises "runtime namespace is indeterminate": left out, not guessed
    unknown = runtime_namespaces(_deployed(with_status=False))
    assert unknown and set(unknown) == {"Frontend"}


def test_a_reported_runtime_namespace_wins_over_the_annotation():
    dgd = _deployed()
    for c in dgd["status"]["components"].values():
        c["runtimeNamespace"] = "team-a-sweep-7-reported"
    assert set(runtime_namespaces(dgd).values()) == {"team-a-sweep-7-reported"}
