"""The lane wait counts a torn-down DGD whose pods still terminate (issue 34 item 4).

The wait lists the lane's DGDs (operations.wait_for_lane). Teardown and the reaper delete a DGD with
Foreground cascading deletion, so the API server keeps it, marked, until the garbage collector has removed its
blocking dependents down to the pods (kubernetes.io docs, concepts/architecture/garbage-collection); with the
default Background deletion the DGD vanished at once and the next run deployed onto GPUs whose pods were
still shutting down. The real kubernetes client against tests/support/k8s_standin.py, which keeps a
foreground-deleted object while an object owned by it with blockOwnerDeletion exists."""

from __future__ import annotations

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings
from infersweep.platform import operations
from infersweep.platform.operations import DeployRequest
from infersweep.platform.readiness import POD_LABEL
from infersweep.recipe import load_recipe
from tests.support.k8s_standin import K8sStandin
from workflows.render import render_recipe

RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"  # 8 x H100: the 8-GPU lane, one run at a time
DGD = ("nvidia.com", "v1beta1", "bench", "dynamographdeployments")


def test_deploy_waits_while_the_previous_runs_pods_terminate(tmp_path, monkeypatch):
    dgd = render_recipe(load_recipe(RECIPE), load_cluster_settings()).dgd
    prev = yaml.safe_load(yaml.safe_dump(dgd))
    prev["metadata"].update(name="prev-run-dgd", namespace="bench", uid="uid-prev", resourceVersion="1")
    pod = {
        "metadata": {
            "name": "prev-run-dgd-vllmworker-0",
            "namespace": "bench",
            "labels": {POD_LABEL: "prev-run-dgd"},
            # the operator's chain DGD -> DCD -> Deployment -> ReplicaSet -> Pod, one level here
            "ownerReferences": [{"uid": "uid-prev", "kind": "DynamoGraphDeployment", "blockOwnerDeletion": True}],
        }
    }
    with K8sStandin() as api:
        # the client reads $KUBECONFIG once, at import: point its default at the stand-in's
        monkeypatch.setattr("kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", str(api.kubeconfig(tmp_path)))
        for k in ("KUBERNETES_SERVICE_HOST", "INFERSWEEP_PLATFORM", "INFERSWEEP_PLATFORM_ADAPTER"):
            monkeypatch.delenv(k, raising=False)
        monkeypatch.setattr(operations.time, "sleep", lambda s: None)
        api.objects[(*DGD, "prev-run-dgd")] = prev
        api.objects[("", "v1", "bench", "pods", pod["metadata"]["name"])] = pod

        # the previous run's exit handler tears its DGD down; its pod is still terminating
        assert operations.teardown(name="prev-run-dgd", run_id="", namespace="bench", api_version="v1beta1")
        text = yaml.safe_dump(dgd)
        with pytest.raises(operations.LaneHeld, match="h100-8gpu .*prev-run-dgd"):
            operations.deploy(DeployRequest("bench", dgd_text=text, run_id="next-run"), lane_wait_s=0)
        assert [k[4] for k in api.objects if k[:4] == DGD] == ["prev-run-dgd"]  # nothing of the next run applied

        # the kubelet has stopped the pod: the garbage collector removes the DGD, the lane is free
        del api.objects[("", "v1", "bench", "pods", pod["metadata"]["name"])]
        operations.deploy(DeployRequest("bench", dgd_text=text, run_id="next-run"), lane_wait_s=0)
        assert [k[4] for k in api.objects if k[:4] == DGD] != ["prev-run-dgd"]
