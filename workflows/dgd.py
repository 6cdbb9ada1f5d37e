"""Render a recipe into a DynamoGraphDeployment (DGD).

`nvidia.com/v1beta1` (`spec.components[]`, `podTemplate`) is what Dynamo 1.6 stores and is the default;
`v1alpha1` (`spec.services`, `extraPodSpec`) is for operators before 1.6, like the 1.3.0 in the cluster
report. Both carry the same graph: one frontend with the recipe's router mode, and one component per
worker role (aggregated `worker`, or `prefill` + `decode`) reading the model from the cache PVC.
"""

from __future__ import annotations

from typing import Any

from infersweep.recipe import ResolvedRecipe, Workers

MODEL_CACHE_MOUNT = "/model-cache"
LABEL_PREFIX = "infersweep.io"
COMPONENT_NAMES = {"worker": "Worker", "prefill": "PrefillWorker", "decode": "DecodeWorker"}


def labels(r: ResolvedRecipe) -> dict[str, str]:
    """Labels shared by the DGD and the workflows, so `kubectl get -l` and `argo list -l` filter alike."""
    return {
        "app.kubernetes.io/managed-by": "infersweep",
        f"{LABEL_PREFIX}/recipe": r.name,
        f"{LABEL_PREFIX}/engine": r.recipe.engine,
        f"{LABEL_PREFIX}/topology": r.recipe.topology.mode,
        f"{LABEL_PREFIX}/gpu-type": r.recipe.gpu.type.lower(),
    }


def frontend_args(r: ResolvedRecipe) -> list[str]:
    return ["--router-mode", r.recipe.router]


def worker_args(r: ResolvedRecipe, role: str, w: Workers) -> list[str]:
    args = [r.engine.model_flag, r.model.id, r.engine.tp_flag, str(w.tp)]
    args += list(r.recipe.engine_args)
    if role == "prefill":
        args += r.engine.prefill_args
    elif role == "decode":
        args += r.engine.decode_args
    return args


def _component_name(r: ResolvedRecipe, role: str) -> str:
    return r.recipe.engine.capitalize() + COMPONENT_NAMES[role]


def _gpus_per_pod(w: Workers) -> int:
    # A multinode replica spreads its TP ranks over `nodes` pods; each pod asks for its share.
    return w.gpus_per_replica // w.nodes


def _worker_env() -> list[dict[str, str]]:
    # The model-cache step has put the pinned revision on the PVC; workers must never reach the hub.
    return [{"name": "HF_HOME", "value": MODEL_CACHE_MOUNT}, {"name": "HF_HUB_OFFLINE", "value": "1"}]


def render_dgd(r: ResolvedRecipe, *, api_version: str = "v1beta1", name: str | None = None,
               pvc: str = "model-cache", hf_secret: str = "hf-token-secret") -> dict[str, Any]:
    if api_version == "v1beta1":
        spec = _spec_v1beta1(r, pvc, hf_secret)
    elif api_version == "v1alpha1":
        spec = _spec_v1alpha1(r, pvc, hf_secret)
    else:
        raise ValueError(f"DGD apiVersion {api_version!r}: use v1beta1 (Dynamo >= 1.6) or v1alpha1 (older operators)")
    return {
        "apiVersion": f"nvidia.com/{api_version}",
        "kind": "DynamoGraphDeployment",
        "metadata": {"name": name or r.name, "labels": labels(r)},
        "spec": spec,
    }


def _spec_v1beta1(r: ResolvedRecipe, pvc: str, hf_secret: str) -> dict[str, Any]:
    frontend = {
        "name": "Frontend",
        "type": "frontend",
        "replicas": 1,
        "podTemplate": {"spec": {"containers": [{
            "name": "main", "image": r.image,
            "command": ["python3", "-m", "dynamo.frontend"], "args": frontend_args(r),
        }]}},
    }
    components = [frontend]
    for role, w in r.recipe.topology.roles().items():
        gpus = str(_gpus_per_pod(w))
        comp: dict[str, Any] = {
            "name": _component_name(r, role),
            "type": role,
            "replicas": w.replicas,
            "podTemplate": {"spec": {
                "containers": [{
                    "name": "main", "image": r.image,
                    "command": ["python3", "-m", r.engine.module],
                    "args": worker_args(r, role, w),
                    "workingDir": r.engine.working_dir,
                    "env": _worker_env(),
                    "envFrom": [{"secretRef": {"name": hf_secret}}],
                    "resources": {"limits": {r.gpu_type.resource: gpus}, "requests": {r.gpu_type.resource: gpus}},
                    "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE_MOUNT, "readOnly": True}],
                }],
                "volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": pvc, "readOnly": True}}],
            }},
        }
        if w.nodes > 1:
            comp["multinode"] = {"nodeCount": w.nodes}
        components.append(comp)
    return {"backendFramework": r.recipe.engine, "components": components}


def _spec_v1alpha1(r: ResolvedRecipe, pvc: str, hf_secret: str) -> dict[str, Any]:
    services: dict[str, Any] = {
        "Frontend": {
            "componentType": "frontend",
            "replicas": 1,
            "extraPodSpec": {"mainContainer": {
                "image": r.image, "command": ["python3", "-m", "dynamo.frontend"], "args": frontend_args(r),
            }},
        }
    }
    for role, w in r.recipe.topology.roles().items():
        gpus = str(_gpus_per_pod(w))
        svc: dict[str, Any] = {
            "componentType": "worker",
            "replicas": w.replicas,
            "envFromSecret": hf_secret,
            "envs": _worker_env(),
            "resources": {"limits": {"gpu": gpus}, "requests": {"gpu": gpus}},
            "volumeMounts": [{"name": pvc, "mountPoint": MODEL_CACHE_MOUNT}],
            "extraPodSpec": {"mainContainer": {
                "image": r.image, "command": ["python3", "-m", r.engine.module],
                "args": worker_args(r, role, w), "workingDir": r.engine.working_dir,
            }},
        }
        if role != "worker":
            svc["subComponentType"] = role
        if w.nodes > 1:
            svc["multinode"] = {"nodeCount": w.nodes}
        services[_component_name(r, role)] = svc
    return {"backendFramework": r.recipe.engine, "pvcs": [{"name": pvc, "create": False}], "services": services}
