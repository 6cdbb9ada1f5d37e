"""What an operator applies once with kubectl beside the WorkflowTemplates: RBAC, the GPU-pool semaphore
ConfigMap and the artifact-repository ConfigMap. The Argo Server creates Argo objects only, so `infersweep
install` prints these (and `--dry-run` shows them with everything else).

GPU capacity guard: see workflows/gpu_guard.py. Under `gpu_guard.scheduler: argo` the ConfigMap
`infersweep-gpu-pools` holds the limit of every lane semaphore (and of each lane's padding semaphores) that
the pipeline's gpu-span template takes; under kueue/kai/volcano there is no Argo lock and no ConfigMap (the
cluster's queues admit the pods).
"""

from __future__ import annotations

import copy
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
    """The workflows' own account (`service_account`, default `infersweep`): the spec-level account of every
    WorkflowTemplate and the `executor.serviceAccountName` of every step pod that gets no token (see
    executor_token_secret). Its Role (steps_role) is the executor's only."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": settings.service_account, "namespace": settings.namespace, "labels": dict(MANAGED)},
    }


def executor_token_secret(settings: ClusterSettings) -> dict[str, Any]:
    """The long-lived token Argo mounts into the init and wait containers (never the main one) of a pod with
    `automountServiceAccountToken: false`: argo-workflows v4.1.2 workflow/controller/workflowpod.go
    setupServiceAccount (:1841-1857) mounts the Secret that util/secrets/secret_name.go
    TokenNameForServiceAccount names, `<account>.service-account-token` (docs/service-account-secrets.md:
    since Kubernetes 1.24 nobody creates it for you), and refuses the pod without `executor.serviceAccountName`
    ("executor.serviceAccountName must not be empty if automountServiceAccountToken is false"). The token
    controller fills it in (type kubernetes.io/service-account-token with the account's annotation)."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/service-account-token",
        "metadata": {
            "name": f"{settings.service_account}.service-account-token",
            "namespace": settings.namespace,
            "labels": dict(MANAGED),
            "annotations": {"kubernetes.io/service-account.name": settings.service_account},
        },
    }


# Argo's emissary executor (init/wait containers) reports a step's outputs through WorkflowTaskResults
# (Argo >= 3.4); every account a step pod runs as needs it.
EXECUTOR_RULE = {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]}

_DGD_PODS = [
    # the DGD's pods, their state and last log lines for the debug bundle (polled, not watched)
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
    # scheduling failures (insufficient GPUs) are only visible as events
    {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},
]
_DEPLOY = [
    # create; update (replace, infersweep/platform/dgd_update.py) when a retried step finds its own DGD; get to
    # wait until it serves; list the DGDs of its lane
    {"apiGroups": ["nvidia.com"], "resources": [DGD_RESOURCE], "verbs": ["get", "list", "create", "update"]},
    # an autoscaled recipe's KEDA ScaledObjects (infersweep/platform/keda.py), applied with the DGD
    {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": ["create", "patch"]},
    *_DGD_PODS,
]
# The step templates whose pods call the Kubernetes API, and exactly the calls their code makes (derived and
# checked by tests/house/test_least_privilege.py); each runs as its own account `<service_account>-<step>`.
# Every other step template calls none and gets no token at all (workflows/steps_library.py).
STEP_RULES: dict[str, list[dict[str, Any]]] = {
    "ensure-pvc": [
        {"apiGroups": [""], "resources": ["persistentvolumeclaims"], "verbs": ["get", "create"]},
        {"apiGroups": [""], "resources": ["events"], "verbs": ["list"]},  # why a PVC stays Pending
    ],
    "deploy": _DEPLOY,
    # re-applies the saved DGD when a UI Retry finds it gone (no lane list), then waits until it serves
    "wait-ready": [
        {"apiGroups": ["nvidia.com"], "resources": [DGD_RESOURCE], "verbs": ["get", "create", "update"]},
        {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": ["create", "patch"]},
        *_DGD_PODS,
    ],
    # its init container ensure-deployed runs steps.deploy --ensure (workflows/steps_library.py
    # ensure_deployed_container), so its account is deploy's; only that container holds the token (INIT_ONLY)
    "aiperf-point": _DEPLOY,
    # the DGD (get: whose it is, delete) and its ScaledObjects (listed by the DGD's label, deleted)
    "teardown": [
        {"apiGroups": ["nvidia.com"], "resources": [DGD_RESOURCE], "verbs": ["get", "delete"]},
        {"apiGroups": ["keda.sh"], "resources": ["scaledobjects"], "verbs": ["list", "delete"]},
    ],
}


# Steps whose own module calls no API but whose init containers do: the token reaches the init containers only
# (workflows/steps_library.py PodAccount.init_only); AIPerf in aiperf-point's main container holds none.
INIT_ONLY = {"aiperf-point"}


def step_account(settings: ClusterSettings, step: str) -> str | None:
    """The account the step template `step` runs as, None for a step that calls no API (no token)."""
    return f"{settings.service_account}-{step}" if step in STEP_RULES else None


def steps_role(namespace: str = "infersweep", name: str = "infersweep-steps") -> dict[str, Any]:
    """The Role of the workflows' own account (service_account): the executor's WorkflowTaskResults only. No
    step's main container holds its token (the steps that call the API have their own accounts, step_role)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED)},
        "rules": [copy.deepcopy(EXECUTOR_RULE)],
    }


def step_role(settings: ClusterSettings, step: str) -> dict[str, Any]:
    """The Role of step `step`'s own account: exactly its calls (STEP_RULES), plus the executor's.
    Nothing cluster-wide, no Secrets (they reach the steps as env from the pod spec, which needs no RBAC)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": step_account(settings, step), "namespace": settings.namespace, "labels": dict(MANAGED)},
        "rules": copy.deepcopy([*STEP_RULES[step], EXECUTOR_RULE]),  # no shared lists: YAML would alias them
    }


def role_binding(settings: ClusterSettings, role: dict[str, Any], account: str | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": role["metadata"]["name"], "namespace": settings.namespace, "labels": dict(MANAGED)},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]},
        "subjects": [
            {"kind": "ServiceAccount", "name": account or settings.service_account, "namespace": settings.namespace}
        ],
    }


def step_accounts(settings: ClusterSettings) -> list[dict[str, Any]]:
    """ServiceAccount, Role and RoleBinding of every step that calls the API."""
    out: list[dict[str, Any]] = []
    for step in STEP_RULES:
        name = step_account(settings, step)
        meta = {"name": name, "namespace": settings.namespace, "labels": dict(MANAGED)}
        role = step_role(settings, step)
        out += [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
            role,
            role_binding(settings, role, name),
        ]
    return out


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
    reaper_binding = role_binding(settings, reaper, settings.reaper.service_account)
    return [
        service_account(settings),
        executor_token_secret(settings),
        role,
        role_binding(settings, role),
        *step_accounts(settings),
        reaper_service_account(settings),
        reaper,
        reaper_binding,
        *guard,
        artifact_repositories_configmap(settings),
    ]
