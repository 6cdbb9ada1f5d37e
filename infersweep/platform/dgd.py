"""A run's DynamoGraphDeployment: the names the Dynamo operator defines, and how a run names and labels its DGD.

Used by every adapter, by readiness, by the reaper and by the scrape step (which scopes its queries to the
DGD's per-run name).
"""

from __future__ import annotations

from typing import Any

# The DynamoGraphDeployment custom resource: group and plural of its CRD
# (deploy/operator/config/crd/bases/nvidia.com_dynamographdeployments.yaml in ai-dynamo/dynamo).
DGD_GROUP = "nvidia.com"
DGD_PLURAL = "dynamographdeployments"
# The label every run's DGD carries (its value: the run id): the reaper lists DGDs by it.
RUN_LABEL = "infersweep.io/run"
# One label per GPU-guard lane a run's DGD holds (workflows/gpu_guard.py lane_labels): key
# `gpu-lane.infersweep.io/<lane key>`, value the lane's runs at once. Deploy waits until fewer other DGDs
# carry the label (operations.wait_for_lane): Argo releases the span's lock when the span ends, before the
# exit handler's teardown deletes the DGD.
LANE_LABEL_PREFIX = "gpu-lane.infersweep.io/"
# Kueue's plain-pod group label (kueue pkg/controller/jobs/pod/constants: GroupNameLabel): the pods carrying
# one value are one group, admitted together against the group's declared total count
# (`kueue.x-k8s.io/pod-group-total-count`). infersweep/dgd/scheduling.py sets it to the DGD's name.
KUEUE_POD_GROUP_LABEL = "kueue.x-k8s.io/pod-group-name"
# How teardown and the reaper delete a DGD: Foreground cascading deletion. The API server then keeps the DGD
# (deletionTimestamp set, finalizer `foregroundDeletion`) until the garbage collector has deleted every
# dependent whose ownerReference blocks owner deletion, transitively: the operator's DCDs / Deployments /
# ReplicaSets / PodCliques and, last, the pods once the kubelet has stopped them (kubernetes.io docs,
# concepts/architecture/garbage-collection "Foreground cascading deletion"; controllers set
# blockOwnerDeletion: true on the ownerReferences they write, controller-runtime SetControllerReference).
# With the default (Background) the DGD vanishes at once while its pods still terminate on their GPUs, so the
# next run's lane wait (which lists DGDs, operations.wait_for_lane) would deploy onto GPUs still in use.
DELETE_PROPAGATION = "Foreground"


def lane_labels(dgd: dict[str, Any]) -> dict[str, int]:
    """lane label -> runs the lane holds at once, from a rendered DGD's labels."""
    labels = (dgd.get("metadata") or {}).get("labels") or {}
    return {k: int(v) for k, v in labels.items() if k.startswith(LANE_LABEL_PREFIX)}


def frontend_url(name: str, namespace: str) -> str:
    # The operator exposes the frontend as the Service `<dgd>-frontend` on port 8000.
    return f"http://{name}-frontend.{namespace}.svc.cluster.local:8000"


def dgd_name(base: str, run_id: str) -> str:
    """The DGD name every step of a run uses (infersweep.names.dgd_run_name); no run id: `base` as given."""
    from infersweep.names import dgd_run_name

    return dgd_run_name(base, run_id) if run_id else base


def for_run(dgd: dict[str, Any], run_id: str) -> dict[str, Any]:
    """The rendered DGD renamed for one run and labelled with the run id (so the reaper and a human can
    find the run a deployment belongs to)."""
    from infersweep.names import label_value

    if not run_id:
        return dgd
    meta = dgd.setdefault("metadata", {})
    meta["name"] = dgd_name(meta["name"], run_id)
    meta.setdefault("labels", {})[RUN_LABEL] = label_value(run_id)
    # The Kueue pod group follows the DGD's per-run name: named after the recipe, two runs of one recipe
    # (a nightly and an ad-hoc submit) would be one group whose pods each declare only their own DGD's
    # total count, so Kueue would admit the group on the wrong members or never.
    for comp in (dgd.get("spec") or {}).get("components") or []:
        labels = (((comp or {}).get("podTemplate") or {}).get("metadata") or {}).get("labels")
        if labels and KUEUE_POD_GROUP_LABEL in labels:
            labels[KUEUE_POD_GROUP_LABEL] = label_value(meta["name"])
    return dgd


# The Dynamo planner's own fallback when the operator reports no runtimeNamespace (ai-dynamo 1.6.1
# dynamo/planner/connectors/kubernetes.py get_worker_runtime_namespace :114-143, and as issue 34 cites,
# 1.3.1's at :92-121): the DGD's active worker hash annotation, appended only for Deployment- or
# LeaderWorkerSet-backed workers (WORKER_SUFFIX_COMPONENT_KINDS).
WORKER_HASH_ANNOTATIONS = ("nvidia.com/current-worker-hash", "nvidia.com/current-worker-hash-v2")
WORKER_TYPES = {"worker", "prefill", "decode"}  # kubernetes.py WORKER_COMPONENT_TYPES
SUFFIX_KINDS = {"Deployment", "LeaderWorkerSet"}  # kubernetes.py WORKER_SUFFIX_COMPONENT_KINDS


def _spec_components(dgd: dict[str, Any]) -> dict[str, str]:
    """Component name -> its type: v1beta1 `spec.components[] {name, type}` (planner monitoring/dgd_services.py
    get_components_by_name), v1alpha1 `spec.services.<name>.componentType`."""
    spec = dgd.get("spec") or {}
    if isinstance(spec.get("components"), list):
        return {c["name"]: c.get("type", "") for c in spec["components"] if isinstance(c, dict) and c.get("name")}
    return {n: (c or {}).get("componentType", "") for n, c in (spec.get("services") or {}).items()}


def runtime_namespaces(dgd: dict[str, Any]) -> dict[str, str]:
    """Component name -> the Dynamo runtime namespace it registers in, from the DGD's status: v1beta1
    `status.components.<name>.runtimeNamespace`, v1alpha1 `status.services.<name>.runtimeNamespace`
    (DynamoGraphDeployment CRD, nvidia.com_dynamographdeployments.yaml). Deployment-backed workers get
    `<k8s ns>-<dgd>-<worker hash>`: the operator sets DYN_NAMESPACE_WORKER_SUFFIX and the worker appends it
    (ai-dynamo 1.6.1 dynamo/common/utils/namespace.py get_worker_namespace); the frontend, and Grove-backed
    workers, keep the base `<k8s ns>-<dgd>`.

    A component without a reported runtimeNamespace gets what Dynamo's planner derives: the base namespace,
    or for a worker whose status says it is Deployment/LeaderWorkerSet-backed, base + "-" + the
    `nvidia.com/current-worker-hash` annotation. A worker with a hash but no status yet is left out (the
    planner calls it indeterminate). Empty when there is neither status nor annotation."""
    status = dgd.get("status") or {}
    comps = status.get("components") or status.get("services") or {}
    out = {
        name: c["runtimeNamespace"]
        for name, c in sorted(comps.items())
        if isinstance(c, dict) and c.get("runtimeNamespace")
    }
    meta = dgd.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    worker_hash = next((annotations[k] for k in WORKER_HASH_ANNOTATIONS if annotations.get(k)), None)
    if not comps and not worker_hash:
        return out
    base = f"{meta.get('namespace', '')}-{meta.get('name', '')}"  # graph.go ComputeDynamoNamespace
    for name, ctype in sorted(_spec_components(dgd).items()):
        if name in out:
            continue
        comp = comps.get(name) if isinstance(comps.get(name), dict) else None
        is_worker = (ctype or name) in WORKER_TYPES
        if not is_worker or not worker_hash:
            out[name] = base
        elif comp is not None:
            out[name] = f"{base}-{worker_hash}" if comp.get("componentKind") in SUFFIX_KINDS else base
    return out


def workflow_owner(dgd: dict[str, Any]) -> dict[str, str] | None:
    """The Workflow that owns a DGD saved by this run's deploy (its first Workflow ownerReference), or None."""
    owners = [o for o in dgd["metadata"].get("ownerReferences") or [] if o.get("kind") == "Workflow"]
    return {"name": owners[0]["name"], "uid": owners[0]["uid"]} if owners else None
