"""The pod-level parts of a DGD's worker and frontend pods: fabric, placement and host resources.

infersweep/dgd/render.py builds each component (command, args, GPUs, model cache); this module adds what the pod
needs from the cluster around it, in the place each DGD apiVersion has for it (read from the CRD in
infersweep/reference/dynamo/crds, nvidia.com_dynamographdeployments.yaml):

| what                              | v1beta1 (`spec.components[]`)                  | v1alpha1 (`spec.services.X`)            |
|-----------------------------------|------------------------------------------------|-----------------------------------------|
| pod annotations (Multus networks) | `podTemplate.metadata.annotations`             | `extraPodMetadata.annotations`          |
| node affinity, tolerations,       | `podTemplate.spec.{affinity,tolerations,       | `extraPodSpec.{affinity,tolerations,    |
| nodeSelector, imagePullSecrets    |  nodeSelector,imagePullSecrets}`               |  nodeSelector,imagePullSecrets}`        |
| securityContext, capabilities     | `containers[main].securityContext`             | `extraPodSpec.mainContainer.securityContext` |
| memory request                    | `containers[main].resources.requests.memory`   | `resources.requests.memory`             |
| /dev/shm size                     | `sharedMemorySize` (operator mounts a Memory   | `sharedMemory.size`                     |
|                                   |  emptyDir at /dev/shm; nil = 8Gi)              |                                         |

Upstream Dynamo recipes put the same things in the same places: shared/reference/dynamo/recipes/
nemotron-3.5-lightning/vllm/disagg-h200-dspark/deploy.yaml (v1beta1: gpu.product node affinity, the
nvidia.com/gpu toleration, imagePullSecrets, IPC_LOCK, UCX_TLS, rdma/ib, a 128Gi memory request,
sharedMemorySize 40Gi) and ai-dynamo/dynamo recipes/qwen3-32b/vllm/disagg-1p1d-gke-roce/deploy.yaml
(v1alpha1: the RDMA network annotation under extraPodMetadata.annotations, IPC_LOCK on mainContainer,
UCX_TLS + UCX_NET_DEVICES naming the mlx5 HCAs, RDMA resources under resources.*.custom).
"""

from __future__ import annotations

import math
from typing import Any

from infersweep.recipe.models import Workers
from infersweep.recipe.resolved import ResolvedRecipe

MULTUS_NETWORKS = "k8s.v1.cni.cncf.io/networks"  # Multus: comma-separated [namespace/]name list
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # set on every GPU node by NVIDIA GPU Feature Discovery
# Host memory a worker needs besides its CPU KV tier (Python, CUDA context, pinned staging buffers). An
# upstream Dynamo Qwen3-32B FP8 vLLM KV-offloading recipe (deployment qwen3-32b-fp8-vllm-agg-kv-offload)
# requests 64 GiB "for its 32 GiB KV tier plus runtime overhead": tier + 32 GiB.
WORKER_BASE_MEMORY_GIB = 32


def pod_annotations(r: ResolvedRecipe) -> dict[str, str]:
    t = r.transport
    if not t:
        return {}
    out = dict(sorted(t.pod_annotations.items()))
    if t.networks:
        out[MULTUS_NETWORKS] = ",".join(t.networks)
    return out


def node_affinity(r: ResolvedRecipe) -> dict[str, Any] | None:
    products = r.placement.gpu_product
    if not products:
        return None
    term = {"matchExpressions": [{"key": GPU_PRODUCT_LABEL, "operator": "In", "values": list(products)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def worker_memory(r: ResolvedRecipe, w: Workers, args: list[str]) -> str | None:
    if r.placement.memory:
        return r.placement.memory
    tier = r.engine.offload_host_gib(r, w, args)  # the CPU KV tier, by the engine's own sizing rule
    return f"{math.ceil(tier + WORKER_BASE_MEMORY_GIB)}Gi" if tier else None


# Pod Security "baseline" or better for every DGD pod (kubernetes.io/docs/concepts/security/
# pod-security-standards): seccomp RuntimeDefault on the pod; each main container without privilege
# escalation, every capability dropped and only the recipe's RDMA transport capabilities added back
# (IPC_LOCK / SYS_RESOURCE / NET_RAW are beyond baseline: those workers need the exemption docs/security.md
# states). Not runAsNonRoot: the Dynamo runtime images run as root (their Dockerfiles set no USER).
POD_SECURITY = {"seccompProfile": {"type": "RuntimeDefault"}}
# The frontend (HTTP server, tokenizer, router) asks for a CPU and a few GiB: a pod without requests is
# BestEffort, the first evicted on a busy node. Memory limit = request, as the step pods'.
FRONTEND_RESOURCES = {"requests": {"cpu": "1", "memory": "4Gi"}, "limits": {"memory": "4Gi"}}


def _security_context(r: ResolvedRecipe) -> dict[str, Any]:
    t = r.transport
    caps: dict[str, Any] = {"drop": ["ALL"]}
    if t and t.capabilities:
        caps["add"] = list(t.capabilities)
    return {"allowPrivilegeEscalation": False, "capabilities": caps}


def _scheduling(r: ResolvedRecipe) -> dict[str, Any]:
    """Pod-spec fields that decide where a worker may run."""
    p, out = r.placement, dict[str, Any]()
    if node_affinity(r):
        out["affinity"] = node_affinity(r)
    if p.node_selector:
        out["nodeSelector"] = dict(p.node_selector)
    if p.tolerations:
        out["tolerations"] = [t.model_dump(exclude_none=True) for t in p.tolerations]
    return out


def _pull_secrets(r: ResolvedRecipe) -> dict[str, Any]:
    secrets = r.placement.image_pull_secrets
    return {"imagePullSecrets": [{"name": s} for s in secrets]} if secrets else {}


def _worker_pod(spec: dict[str, Any], main: dict[str, Any], r: ResolvedRecipe, w: Workers) -> str | None:
    """What a worker pod gets in either DGD version (in place): scheduling, pull secrets and the pod's and main
    container's security; returns the memory the pod requests (None: the default)."""
    spec.update(_scheduling(r) | _pull_secrets(r))
    spec["securityContext"] = dict(POD_SECURITY)
    main["securityContext"] = _security_context(r)
    return worker_memory(r, w, main.get("args", []))


def worker_v1beta1(comp: dict[str, Any], r: ResolvedRecipe, w: Workers) -> None:
    """Add fabric, placement and host resources to a v1beta1 worker component (in place)."""
    pod = comp["podTemplate"]
    spec, main = pod["spec"], pod["spec"]["containers"][0]
    if pod_annotations(r):  # metadata first, as a reader expects it
        comp["podTemplate"] = {"metadata": {"annotations": pod_annotations(r)}, **pod}
    memory = _worker_pod(spec, main, r, w)
    if memory:
        main["resources"]["requests"]["memory"] = memory
    if r.placement.shared_memory:
        comp["sharedMemorySize"] = r.placement.shared_memory


def frontend_v1beta1(comp: dict[str, Any], r: ResolvedRecipe) -> None:
    # The frontend needs no GPU node, only the image: pull secrets, its resources and the pod security.
    spec = comp["podTemplate"]["spec"]
    spec.update(_pull_secrets(r))
    spec["securityContext"] = dict(POD_SECURITY)
    spec["containers"][0]["resources"] = {k: dict(v) for k, v in FRONTEND_RESOURCES.items()}
    spec["containers"][0]["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}


def worker_v1alpha1(svc: dict[str, Any], r: ResolvedRecipe, w: Workers) -> None:
    """The same for a v1alpha1 worker service (in place)."""
    extra, main = svc["extraPodSpec"], svc["extraPodSpec"]["mainContainer"]
    if pod_annotations(r):
        svc["extraPodMetadata"] = {"annotations": pod_annotations(r)}
    memory = _worker_pod(extra, main, r, w)
    if memory:
        svc["resources"]["requests"]["memory"] = memory
    if r.placement.shared_memory:
        svc["sharedMemory"] = {"size": r.placement.shared_memory}


def frontend_v1alpha1(svc: dict[str, Any], r: ResolvedRecipe) -> None:
    svc["extraPodSpec"].update(_pull_secrets(r))
    svc["extraPodSpec"]["securityContext"] = dict(POD_SECURITY)
    svc["extraPodSpec"]["mainContainer"]["securityContext"] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
    }
    # v1alpha1 resources are the service's (cpu/memory/gpu), the CRD's Resources type
    svc["resources"] = {k: dict(v) for k, v in FRONTEND_RESOURCES.items()}
