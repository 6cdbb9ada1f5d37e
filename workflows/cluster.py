"""What an operator applies once with kubectl beside the WorkflowTemplates: RBAC, the GPU-pool semaphore
ConfigMap and the artifact-repository ConfigMap. The Argo Server creates Argo objects only, so `infersweep
install` prints these (and `--dry-run` shows them with everything else).

GPU capacity guard: an Argo semaphore counts *holders* (workflows), not GPUs, and a workflow cannot take
several units of one semaphore. So the unit is a deployment slot: ConfigMap `infersweep-gpu-pools` holds,
per GPU type, how many deployments that pool runs at once = pool GPUs // slot GPUs, and each benchmark
workflow holds one slot of its recipe's GPU type for its whole life (deploy to teardown, exit handler
included). The slot defaults to the largest GPU count any catalog recipe of that type asks for, so no mix
of recipes can oversubscribe the pool; the price is that small recipes under-use it (two 2-GPU recipes on
a 16-GPU pool with an 8-GPU slot run two at a time, not eight). An operator who prefers packing sets
`slot_gpus` lower in params/platform.yaml; a recipe that asks for more than one slot is then refused at
submit with that explanation (see `check_fits_pool`).
"""

from __future__ import annotations

from typing import Any, Iterable

import yaml

from infersweep.recipe import RecipeError, ResolvedRecipe

GPU_POOLS_CONFIGMAP = "infersweep-gpu-pools"
MANAGED = {"app.kubernetes.io/managed-by": "infersweep"}
DGD_RESOURCE = "dynamographdeployments"


def pool_key(gpu_type: str) -> str:
    """The semaphore key of a GPU type's pool (ConfigMap data keys: [-._a-zA-Z0-9])."""
    return gpu_type.lower()


def slot_gpus(gpu_type: str, platform: dict[str, Any], recipes: Iterable[ResolvedRecipe]) -> int:
    pool = platform["gpu_pools"].get(gpu_type) or {}
    if pool.get("slot_gpus"):
        return int(pool["slot_gpus"])
    sizes = [r.gpu_count for r in recipes if r.recipe.gpu.type == gpu_type]
    return max(sizes) if sizes else int(pool.get("gpus", 1))


def check_fits_pool(r: ResolvedRecipe, platform: dict[str, Any], catalog: Iterable[ResolvedRecipe]) -> None:
    """Refuse (before any cluster call) a recipe its pool can never hold."""
    gpu = r.recipe.gpu.type
    pool = platform["gpu_pools"].get(gpu)
    if not pool:
        raise RecipeError(f"recipe {r.name}: no GPU pool for {gpu} in params/platform.yaml gpu_pools; "
                          f"add `{gpu}: {{gpus: N}}` (N = GPUs of that type the benchmarks may use)")
    slot = slot_gpus(gpu, platform, catalog)
    if r.gpu_count > slot:
        raise RecipeError(f"recipe {r.name}: needs {r.gpu_count} {gpu} GPUs but a deployment slot of the {gpu} "
                          f"pool holds {slot}; raise gpu_pools.{gpu}.slot_gpus in params/platform.yaml")
    if r.gpu_count > int(pool["gpus"]):
        raise RecipeError(f"recipe {r.name}: needs {r.gpu_count} {gpu} GPUs, the pool has {pool['gpus']}")


def gpu_pools_configmap(platform: dict[str, Any], catalog: list[ResolvedRecipe]) -> dict[str, Any]:
    data = {}
    for gpu, pool in sorted(platform["gpu_pools"].items()):
        # At least one slot: a pool smaller than its largest recipe still runs the others one at a time.
        data[pool_key(gpu)] = str(max(1, int(pool["gpus"]) // slot_gpus(gpu, platform, catalog)))
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": GPU_POOLS_CONFIGMAP, "namespace": platform["namespace"], "labels": dict(MANAGED),
                         "annotations": {"infersweep.io/unit": "concurrent deployments per GPU pool (see workflows/cluster.py)"}},
            "data": data}


def semaphore(gpu_type: str) -> dict[str, Any]:
    return {"configMapKeyRef": {"name": GPU_POOLS_CONFIGMAP, "key": pool_key(gpu_type)}}


def artifact_repositories_configmap(platform: dict[str, Any]) -> dict[str, Any]:
    """The S3 artifact repository the pipeline names by `artifactRepositoryRef` (credentials: a Secret)."""
    a = platform["artifact_repository"]
    secret = platform["s3"]["credentials_secret"]
    repo = {"s3": {"bucket": a["bucket"], "endpoint": a["endpoint"], "region": a.get("region", ""),
                   "insecure": bool(a.get("insecure", False)),
                   "keyFormat": "{{workflow.namespace}}/{{workflow.name}}/{{pod.name}}",
                   "accessKeySecret": {"name": secret, "key": "AWS_ACCESS_KEY_ID"},
                   "secretKeySecret": {"name": secret, "key": "AWS_SECRET_ACCESS_KEY"}}}
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": a["configmap"], "namespace": platform["namespace"], "labels": dict(MANAGED)},
            "data": {a["key"]: yaml.safe_dump(repo, sort_keys=False)}}


def service_account(platform: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": platform["service_account"], "namespace": platform["namespace"], "labels": dict(MANAGED)}}


def steps_role(namespace: str = "infersweep", name: str = "infersweep-steps") -> dict[str, Any]:
    """Least privilege for the step pods: exactly the calls steps/platform.py and steps/readiness.py make,
    plus what Argo's executor needs to report a step's outputs. Nothing cluster-wide, no Secrets (they
    reach the steps as env from the pod spec, which needs no RBAC)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED)},
        "rules": [
            # deploy (create; patch when a retried step finds its own DGD), wait-ready (get), teardown (delete)
            {"apiGroups": ["nvidia.com"], "resources": [DGD_RESOURCE], "verbs": ["get", "create", "patch", "delete"]},
            # wait-ready: the DGD's pods, their state and last log lines for the debug bundle
            # (polled, not watched: tests/test_least_privilege.py derives these verbs from the calls)
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


def role_binding(platform: dict[str, Any], role: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": role["metadata"]["name"], "namespace": platform["namespace"], "labels": dict(MANAGED)},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role["metadata"]["name"]},
            "subjects": [{"kind": "ServiceAccount", "name": platform["service_account"], "namespace": platform["namespace"]}]}


def reaper_role(namespace: str = "infersweep", name: str = "infersweep-reaper") -> dict[str, Any]:
    """Exactly the calls of steps/reap.py (tests/test_least_privilege.py derives them), plus the executor's."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(MANAGED)},
        "rules": [
            {"apiGroups": ["nvidia.com"], "resources": [DGD_RESOURCE], "verbs": ["list", "delete"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["list"]},
            {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
        ],
    }


def reaper_service_account(platform: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": platform["reaper"]["service_account"], "namespace": platform["namespace"],
                         "labels": dict(MANAGED)}}


def kubectl_manifests(platform: dict[str, Any], catalog: list[ResolvedRecipe]) -> list[dict[str, Any]]:
    """Everything `kubectl apply` must create (the Argo Server does not create ConfigMaps or RBAC)."""
    role = steps_role(platform["namespace"])
    reaper = reaper_role(platform["namespace"])
    reaper_binding = role_binding(platform, reaper)
    reaper_binding["subjects"][0]["name"] = platform["reaper"]["service_account"]
    return [service_account(platform), role, role_binding(platform, role),
            reaper_service_account(platform), reaper, reaper_binding,
            gpu_pools_configmap(platform, catalog), artifact_repositories_configmap(platform)]
