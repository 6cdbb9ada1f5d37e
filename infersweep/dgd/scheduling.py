"""The scheduling step of a DGD: what its pods carry so that the configured GPU guard admits them
(params/cluster.yaml `gpu_guard.scheduler`, typed in infersweep/cluster_settings.py; the design is in
workflows/gpu_guard.py).

* `kueue`, `kai`, `volcano`: the cluster's own GPU-quota queue admits the DGD's pods, exactly by
  `nvidia.com/gpu`; every pod template gets the queue's labels, annotations and schedulerName (each cited
  where it is set below). A DGD without them is not admitted against the quota at all: unguarded.
* `argo` (default): the Argo semaphores admit the run; the DGD carries labels naming the lanes it holds, on
  which the deploy step waits (Argo frees a lock before the exit handler's teardown).
"""

from __future__ import annotations

from typing import Any

from infersweep.cluster_settings import ClusterSettings, ClusterSettingsError
from infersweep.dgd.lanes import lane_key, pool_of, recipe_admission
from infersweep.recipe import ResolvedRecipe


def dgd_pod_count(dgd: dict[str, Any]) -> int:
    comps = dgd["spec"].get("components") or list((dgd["spec"].get("services") or {}).values())
    return sum(int(c.get("replicas", 1)) * int((c.get("multinode") or {}).get("nodeCount", 1)) for c in comps)


def dgd_scheduling(r: ResolvedRecipe, settings: ClusterSettings, dgd_name: str, pods: int) -> dict[str, Any]:
    """What the DGD (`metadata`) and each of its pods (`pod_labels`, `pod_annotations`, `scheduler_name`)
    carry so that the configured scheduler admits the whole deployment against its pool's GPU quota."""
    cfg = settings.guard
    q = pool_of(r, cfg).queue
    out: dict[str, Any] = {"metadata_annotations": {}, "pod_labels": {}, "pod_annotations": {}, "scheduler_name": None}
    if cfg.scheduler == "kueue":
        # Kueue plain-pod integration (kubernetes-sigs/kueue site/content/en/docs/tasks/run/plain_pods.md,
        # "Running a group of Pods to be admitted together"; the `pod` integration must be enabled for the
        # namespace): the LocalQueue label, and a pod group (name label + total-count annotation on every
        # member) so the DGD's pods are admitted all at once or not at all; `pod-group-serving: "true"`
        # because a serving pod never "succeeds" (Kueue's pod constants: GroupNameLabel,
        # GroupTotalCountAnnotation, GroupServingAnnotationKey). The quota: the LocalQueue's ClusterQueue
        # has an `nvidia.com/gpu` nominalQuota of the pool's GPUs (docs/tasks/manage/administer_cluster_quotas).
        # The group is named after the DGD as rendered; the deploy renames it with the DGD, per run
        # (infersweep/platform/dgd.py for_run).
        from infersweep.platform.dgd import KUEUE_POD_GROUP_LABEL

        out["pod_labels"] = {"kueue.x-k8s.io/queue-name": q, KUEUE_POD_GROUP_LABEL: dgd_name}
        out["pod_annotations"] = {
            "kueue.x-k8s.io/pod-group-total-count": str(pods),
            "kueue.x-k8s.io/pod-group-serving": "true",
        }
    elif cfg.scheduler == "kai":
        # Dynamo's operator reads the DGD annotation and injects the queue label and schedulerName into the
        # pods it creates (ai-dynamo/dynamo deploy/cloud/operator/internal/consts/consts.go:
        # KubeAnnotationKaiSchedulerQueue "nvidia.com/kai-scheduler-queue", KubeLabelKaiSchedulerQueue
        # "kai.scheduler/queue", KaiSchedulerName "kai-scheduler"); KAI's docs ask for the same two fields on
        # the workload (NVIDIA/KAI-Scheduler docs: `kai.scheduler/queue` label, `schedulerName: kai-scheduler`),
        # so they are also set on every pod template; KAI's pod-grouper gangs a DGD's pods by their top owner.
        out["metadata_annotations"] = {"nvidia.com/kai-scheduler-queue": q}
        out["pod_labels"] = {"kai.scheduler/queue": q}
        out["scheduler_name"] = "kai-scheduler"
    elif cfg.scheduler == "volcano":
        # Volcano (volcano.sh docs, "Queue"; pod annotation `scheduling.volcano.sh/queue-name` as read by
        # Volcano's controllers for pods of non-vcjob workloads) with schedulerName `volcano`.
        out["pod_annotations"] = {"scheduling.volcano.sh/queue-name": q}
        out["scheduler_name"] = "volcano"
    return out


def lane_labels(r: ResolvedRecipe, settings: ClusterSettings, held_for: ResolvedRecipe | None = None) -> dict[str, str]:
    """The DGD's labels naming the lanes its run holds (infersweep/platform/dgd.py LANE_LABEL_PREFIX), each
    with the lane's runs at once; deploy waits until fewer other DGDs carry them
    (infersweep/platform/operations.py wait_for_lane), since Argo frees the lock before teardown. `held_for`:
    the recipe whose admission the run holds (an experiment's largest treatment), default `r`."""
    from infersweep.platform.dgd import LANE_LABEL_PREFIX

    adm = recipe_admission(held_for or r, settings)
    pool = pool_of(r, settings.guard)
    return {LANE_LABEL_PREFIX + lane_key(adm.gpu_type, s): str(pool.lanes[s]) for s in adm.lanes}


def apply_to_dgd(
    dgd: dict[str, Any], r: ResolvedRecipe, settings: ClusterSettings, held_for: ResolvedRecipe | None = None
) -> dict[str, Any]:
    """The DGD with the configured scheduler's labels/annotations/schedulerName on every pod (v1beta1
    `components[].podTemplate`); under the Argo-only guard, the lane labels on the DGD instead."""
    if settings.guard.scheduler == "argo":
        dgd["metadata"].setdefault("labels", {}).update(lane_labels(r, settings, held_for))
        return dgd
    if "components" not in dgd["spec"]:
        raise ClusterSettingsError(
            f"gpu_guard.scheduler {settings.guard.scheduler}: the pods' queue labels are "
            "rendered for DGD v1beta1 only (podTemplate); submit with --dgd-api v1beta1"
        )
    s = dgd_scheduling(r, settings, dgd["metadata"]["name"], dgd_pod_count(dgd))
    if s["metadata_annotations"]:
        dgd["metadata"].setdefault("annotations", {}).update(s["metadata_annotations"])
    for comp in dgd["spec"]["components"]:
        tmpl = comp.setdefault("podTemplate", {})
        meta = tmpl.setdefault("metadata", {})
        if s["pod_labels"]:
            meta.setdefault("labels", {}).update(s["pod_labels"])
        if s["pod_annotations"]:
            meta.setdefault("annotations", {}).update(s["pod_annotations"])
        if s["scheduler_name"]:
            tmpl.setdefault("spec", {})["schedulerName"] = s["scheduler_name"]
    return dgd
