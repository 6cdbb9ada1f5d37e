"""What an operator applies once with kubectl beside the WorkflowTemplates: RBAC, the GPU-pool semaphore
ConfigMap and the artifact-repository ConfigMap. The Argo Server creates Argo objects only, so `infersweep
install` prints these (and `--dry-run` shows them with everything else).

GPU capacity guard: see workflows/gpu_guard.py. Under `gpu_guard.scheduler: argo` the ConfigMap
`infersweep-gpu-pools` holds the limit of every lane semaphore (and of each lane's padding semaphores) that
the pipeline's gpu-span template takes; under kueue/kai/volcano there is no Argo lock and no ConfigMap (the
cluster's queues admit the pods).
"""

from __future__ import annotations

from typing import Any

import yaml

from infersweep.cluster_settings import ClusterSettings
from infersweep.recipe import ResolvedRecipe
from workflows import gpu_guard

MANAGED = {"app.kubernetes.io/managed-by": "infersweep"}
DGD_RESOURCE = "dynamographdeployments"


def gpu_pools_configmap(settings: ClusterSettings) -> dict[str, Any]:
    """The semaphore limits of the GPU guard (workflows/gpu_guard.py configmap_data)."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": gpu_guard.CONFIGMAP,
            "namespace": settings.namespace,
            "labels": dict(MANAGED),
            "annotations": {"infersweep.io/unit": "runs per GPU-pool lane (see workflows/gpu_guard.py)"},
        },
        "data": gpu_guard.configmap_data(settings),
    }


def artifact_repositories_configmap(settings: ClusterSettings) -> dict[str, Any]:
    """The S3 artifact repository the pipeline names by `artifactRepositoryRef` (credentials: a Secret)."""
    a = settings.artifact_repository
    secret = settings.s3.credentials_secret
    repo = {
        "s3": {
            "bucket": a.bucket,
            "endpoint": a.endpoint,
            "region": a.region,
            "insecure": a.insecure,
            "keyFormat": "{{workflow.namespace}}/{{workflow.name}}/{{pod.name}}",
            "accessKeySecret": {"name": secret, "key": "AWS_ACCESS_KEY_ID"},
            "secretKeySecret": {"name": secret, "key": "AWS_SECRET_ACCESS_KEY"},
        }
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": a.configmap, "namespace": settings.namespace, "labels": dict(MANAGED)},
        "data": {a.key: yaml.safe_dump(repo, sort_keys=False)},
    }


def service_account(settings: ClusterSettings) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": settings.service_account, "namespace": settings.namespace, "labels": dict(MANAGED)},
    }


def steps_role(namespace: str = "infersweep", name: str = "infersweep-steps") -> dict[str, Any]:
    """Least privilege for the step pods: exactly the calls infersweep/platform/kube.py and readiness.py make,
    plus what Argo's executor needs to report a step's outputs. Nothing cluster-wide, no Secrets (they
    reach the steps as env from the pod spec, which needs no RBAC)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED)},
        "rules": [
            # deploy (create; update (replace) when a retried step finds its own DGD: infersweep/platform/
            # dgd_update.py; list the DGDs of its GPU lane), wait-ready (get), teardown (delete)
            {
                "apiGroups": ["nvidia.com"],
                "resources": [DGD_RESOURCE],
                "verbs": ["get", "list", "create", "update", "delete"],
            },
            # deploy/teardown of an autoscaled recipe: its KEDA ScaledObjects (infersweep/platform/keda.py), applied
            # with the DGD (create; patch on a retried step) and deleted with it (listed by the DGD's label, then deleted)
            {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": ["create", "patch", "list", "delete"]},
            # wait-ready: the DGD's pods, their state and last log lines for the debug bundle
            # (polled, not watched: tests/house/test_least_privilege.py derives these verbs from the calls)
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
            # wait-ready: scheduling failures (insufficient GPUs) are only visible as events
            {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
            # ensure-pvc: the model cache
            {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "create"]},
            # Argo's emissary executor reports outputs through WorkflowTaskResults (Argo >= 3.4)
            {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
        ],
    }


def role_binding(settings: ClusterSettings, role: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": role["metadata"]["name"], "namespace": settings.namespace, "labels": dict(MANAGED)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]},
        "subjects": [{"kind": "ServiceAccount", "name": settings.service_account, "namespace": settings.namespace}],
    }


def reaper_role(namespace: str = "infersweep", name: str = "infersweep-reaper") -> dict[str, Any]:
    """Exactly the calls of steps/reap.py (tests/house/test_least_privilege.py derives them), plus the executor's."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED)},
        "rules": [
            {"apiGroups": ["nvidia.com"], "resources": [DGD_RESOURCE], "verbs": ["list", "delete"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["list"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
        ],
    }


def reaper_service_account(settings: ClusterSettings) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": settings.reaper.service_account, "namespace": settings.namespace, "labels": dict(MANAGED)},
    }


def kubectl_manifests(settings: ClusterSettings, catalog: list[ResolvedRecipe]) -> list[dict[str, Any]]:
    """Everything `kubectl apply` must create (the Argo Server does not create ConfigMaps or RBAC)."""
    role = steps_role(settings.namespace)
    for r in catalog:  # every catalog recipe must fit its pool's guard, or install refuses
        gpu_guard.check_fits_pool(r, settings)
    guard = [gpu_pools_configmap(settings)] if settings.guard.scheduler == "argo" else []
    reaper = reaper_role(settings.namespace)
    reaper_binding = role_binding(settings, reaper)
    reaper_binding["subjects"][0]["name"] = settings.reaper.service_account
    return [
        service_account(settings),
        role,
        role_binding(settings, role),
        reaper_service_account(settings),
        reaper,
        reaper_binding,
        *guard,
        artifact_repositories_configmap(settings),
    ]
