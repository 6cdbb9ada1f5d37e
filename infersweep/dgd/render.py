"""Render a recipe into a DynamoGraphDeployment (DGD).

`nvidia.com/v1beta1` (`spec.components[]`, `podTemplate`) is what Dynamo 1.6 stores and is the default;
`v1alpha1` (`spec.services`, `extraPodSpec`) renders the Dynamo 1.3.1 release for a 1.3 operator like the
1.3.0 in the cluster report (which serves v1beta1 too: params/engines/releases/*.yaml operator_serves), and is
the only apiVersion of operators 0.9 and before. Both carry the same graph: one frontend with the recipe's router mode, and one component per
worker role (aggregated `worker`, or `prefill` + `decode`) reading the model from the cache PVC. A worker's
args are the engine's own spelling (params/engines/*.yaml, built by infersweep/engines/<name>.py) of the
recipe's TP/DP/EP, disaggregation role and KV transfer, KV-router events, CPU KV offload and speculative decoding; a multinode replica is one
component with `multinode.nodeCount` and each pod asks for its share of the GPUs (the operator adds the
engine's multinode flags); fabric resources (rdma/ib, EFA) are extra pod resources; an autoscaled role
starts at its min replicas with a scaling adapter and its range is an annotation.
"""

from __future__ import annotations

import math
from typing import Any

from infersweep.dgd import autoscaling, pod_extras
from infersweep.names import DGD_NAME_MAX, dns_label
from infersweep.recipe.models import Workers
from infersweep.recipe.release import SKEW_ANNOTATION, for_dgd_api, image_skew
from infersweep.recipe.resolved import ResolvedRecipe

MODEL_CACHE_MOUNT = "/model-cache"
# --trust-remote-code makes transformers copy the model's code into HF_MODULES_CACHE, default
# "$HF_HOME/modules" (transformers utils/hub.py HF_MODULES_CACHE; dynamic_module_utils.py
# init_hf_modules -> os.makedirs): HF_HOME is the read-only model cache, so it goes to an emptyDir instead.
HF_MODULES_MOUNT = "/hf-modules"
HF_MODULES_VOLUME = "hf-modules"


def _needs_modules_cache(r: ResolvedRecipe, args: list[str]) -> bool:
    """A worker that runs the model's own code, unless the recipe points HF_MODULES_CACHE somewhere itself."""
    return "--trust-remote-code" in args and "HF_MODULES_CACHE" not in r.recipe.worker_env


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
    """A worker's command-line args: the engine's spellings (params/engines/<engine>.yaml) and its flag rules
    (infersweep/engines/<engine>.py), in one order for every engine."""
    e = r.engine
    args = [e.model_flag, r.model.id, e.tp_flag, str(w.tp)] + e.parallelism_args(w)
    args += list(r.recipe.engine_args)
    if role == "prefill":
        args += e.prefill_args + e.kv_transfer_args(r)
    elif role == "decode":
        args += e.decode_args + e.kv_transfer_args(r)
    if (
        r.recipe.router == "kv"
        and role in ("worker", "prefill")
        and not (e.kv_router_args and e.kv_router_args[0] in args)
    ):
        # the router scores the workers a request enters at; a recipe that already gives the events flag in its
        # engine_args (e.g. an experiment keeping events on for round-robin too) keeps its own, never twice
        args += e.kv_router_args
    if e.metrics_args and e.metrics_args[0] not in args:
        args += e.metrics_args
    args += e.offload_args(r, role)
    # Speculation is set on every role: vLLM and SGLang need the same draft config on both sides of a
    # disaggregated pair for the KV layout to match.
    args += e.speculative_args(r)
    return args


def _component_name(r: ResolvedRecipe, role: str) -> str:
    return r.recipe.engine.capitalize() + COMPONENT_NAMES[role]


def _gpus_per_pod(w: Workers) -> int:
    # A multinode replica spreads its TP ranks over `nodes` pods; each pod asks for its share.
    return w.gpus_per_replica // w.nodes


def _worker_env(r: ResolvedRecipe, args: list[str]) -> list[dict[str, Any]]:
    # The model-cache step has put the pinned revision on the PVC; workers must never reach the hub. So no
    # worker gets the HF token either (huggingface_hub 2.4 with HF_HUB_OFFLINE=1 sends nothing: constants.py
    # HF_HUB_OFFLINE, utils/_http.py raises OfflineModeIsEnabled before any request); the model-cache step
    # is the only pod with it (workflows/steps_library.py, infersweep/step_declarations.py MODEL_CACHE).
    env: list[dict[str, Any]] = [
        {"name": "HF_HOME", "value": MODEL_CACHE_MOUNT},
        {"name": "HF_HUB_OFFLINE", "value": "1"},
    ]
    t = r.transport  # the recipe's, or its GPU pool's fabric (infersweep.recipe.ResolvedRecipe.transport)
    env += [{"name": k, "value": v} for k, v in sorted(r.recipe.worker_env.items())]
    env += [{"name": k, "value": v} for k, v in sorted((t.env if t else {}).items())]
    if _needs_modules_cache(r, args):
        env.append({"name": "HF_MODULES_CACHE", "value": HF_MODULES_MOUNT})
    # What the engine needs that Dynamo does not set for these args (vLLM: the NIXL side-channel host
    # where NIXL is nested in a MultiConnector; infersweep/engines/vllm.py Vllm.worker_env).
    return env + r.engine.worker_env(args)


# The operator's managed rolling update of Deployment-backed workers (deploy/operator/internal/controller/
# dynamographdeployment_rollout.go resolveRollingUpdateParams, constants in dynamocomponentdeployment_controller.go;
# docs/pages/kubernetes/rolling-update.md): the pace is read from these component annotations (v1beta1:
# podTemplate.metadata.annotations), default 25 % surge (rounded up) and 25 % unavailable (rounded down), and
# when both resolve to 0 the operator sets surge to 1. Any worker pod-template change rolls every worker
# component at once (the worker hash covers them all). Grove/LWS-backed (multinode) workers never surge.
ROLLING_MAX_SURGE = "nvidia.com/deployment-rolling-update-max-surge"
ROLLING_MAX_UNAVAILABLE = "nvidia.com/deployment-rolling-update-max-unavailable"
DEFAULT_SURGE_FRACTION = 0.25


def default_surge_gpus(r: ResolvedRecipe) -> int:
    """GPUs the operator's default surge asks for at once when the workers roll: ceil(25 % of replicas) extra
    pods of each Deployment-backed worker component, all components together."""
    return sum(
        math.ceil(DEFAULT_SURGE_FRACTION * w.replicas) * _gpus_per_pod(w)
        for w in r.recipe.topology.roles().values()
        if w.nodes == 1
    )


def rollout_annotations(r: ResolvedRecipe, spare_gpus: int | None) -> dict[str, str]:
    """Surge 0, one pod down at a time, where the run's GPUs cannot hold the default surge (`spare_gpus`: the
    GPUs its admission holds beyond what it uses; None = unknown, the operator's defaults). Max-unavailable
    is explicit: with surge "0" and the default 25 %, a component of 1-3 replicas resolves both to 0 and the
    operator raises surge back to 1 (resolveRollingUpdateParams)."""
    if spare_gpus is None or default_surge_gpus(r) <= spare_gpus:
        return {}
    return {ROLLING_MAX_SURGE: "0", ROLLING_MAX_UNAVAILABLE: "1"}


def _extra_resources(r: ResolvedRecipe) -> dict[str, str]:
    """Fabric resources (rdma/ib, vpc.amazonaws.com/efa) each worker pod asks for besides its GPUs."""
    t = r.transport
    return {k: str(v) for k, v in sorted((t.resources if t else {}).items())}


def dgd_annotations(r: ResolvedRecipe) -> dict[str, str]:
    """What the DGD itself cannot say: the autoscaling KEDA must be given (JSON; infersweep/platform/keda.py turns
    it into ScaledObjects on the component's scaling adapter when the DGD is applied)."""
    names = {role: _component_name(r, role) for role in r.recipe.topology.roles()}
    spec = autoscaling.autoscaling_annotation(r, names)
    out = {autoscaling.ANNOTATION: spec} if spec else {}
    # provenance: an image of another Dynamo line than the release's operator (infersweep/recipe/release.py)
    if skew := image_skew(r):
        out[SKEW_ANNOTATION] = skew
    return out


def dgd_base_name(recipe: str) -> str:
    """The DGD name a recipe renders with: the recipe name within the 45 characters older operators
    accept (cut + hash when longer). A run renames it `<base cut>-<run hash>` (infersweep.names.dgd_run_name),
    so two runs of one recipe never share a deployment."""
    return dns_label(recipe, DGD_NAME_MAX)


def render_dgd(
    r: ResolvedRecipe,
    *,
    api_version: str = "v1beta1",
    name: str | None = None,
    pvc: str = "model-cache",
    spare_gpus: int | None = None,
    release: str = "",
) -> dict[str, Any]:
    """The bare render, before the scheduling step: call `infersweep.dgd.deployable_dgd` for what is applied.
    `spare_gpus`: GPUs the run holds beyond its own (infersweep.dgd.lanes.spare_gpus); where they cannot
    hold the operator's default rollout surge the workers roll without one (rollout_annotations)."""
    if api_version not in ("v1beta1", "v1alpha1"):
        raise ValueError(
            f"DGD apiVersion {api_version!r}: use v1beta1 (the Dynamo 1.6.1 release) or v1alpha1 (the 1.3.1 release)"
        )
    # The release of the cluster's operator (`release`: params/cluster.yaml dynamo_release; '' = the one this
    # apiVersion picks): its images and flags (infersweep/recipe/release.py).
    r = for_dgd_api(r, api_version, release=release)
    rollout = rollout_annotations(r, spare_gpus)
    if api_version == "v1beta1":
        spec = _spec_v1beta1(r, pvc, rollout)
    elif api_version == "v1alpha1":
        spec = _spec_v1alpha1(r, pvc, rollout)
    else:
        raise ValueError(
            f"DGD apiVersion {api_version!r}: use v1beta1 (the Dynamo 1.6.1 release) or v1alpha1 (the 1.3.1 release)"
        )
    metadata: dict[str, Any] = {"name": name or dgd_base_name(r.name), "labels": labels(r)}
    if notes := dgd_annotations(r):
        metadata["annotations"] = notes
    return {
        "apiVersion": f"nvidia.com/{api_version}",
        "kind": "DynamoGraphDeployment",
        "metadata": metadata,
        "spec": spec,
    }


def _spec_v1beta1(r: ResolvedRecipe, pvc: str, rollout: dict[str, str]) -> dict[str, Any]:
    frontend = {
        "name": "Frontend",
        "type": "frontend",
        "replicas": 1,
        "podTemplate": {
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "image": r.image,
                        "command": ["python3", "-m", "dynamo.frontend"],
                        "args": frontend_args(r),
                    }
                ]
            }
        },
    }
    pod_extras.frontend_v1beta1(frontend, r)
    components = [frontend]
    for role, w in r.recipe.topology.roles().items():
        gpus = str(_gpus_per_pod(w))
        res = {r.gpu_type.resource: gpus} | _extra_resources(r)
        comp: dict[str, Any] = {
            "name": _component_name(r, role),
            "type": role,
            "replicas": w.replicas,
            "podTemplate": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": r.image,
                            "command": ["python3", "-m", r.engine.module],
                            "args": worker_args(r, role, w),
                            "workingDir": r.engine.working_dir,
                            "env": _worker_env(r, worker_args(r, role, w)),
                            "resources": {"limits": dict(res), "requests": dict(res)},
                            "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE_MOUNT, "readOnly": True}],
                        }
                    ],
                    "volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": pvc, "readOnly": True}}],
                }
            },
        }
        if _needs_modules_cache(r, worker_args(r, role, w)):
            pod = comp["podTemplate"]["spec"]
            pod["containers"][0]["volumeMounts"].append({"name": HF_MODULES_VOLUME, "mountPath": HF_MODULES_MOUNT})
            pod["volumes"].append({"name": HF_MODULES_VOLUME, "emptyDir": {}})
        if w.nodes > 1:
            comp["multinode"] = {"nodeCount": w.nodes}
        if w.autoscaling:
            comp["scalingAdapter"] = {}  # replicas start at min; the adapter lets KEDA/HPA move them
        pod_extras.worker_v1beta1(comp, r, w)
        if rollout and w.nodes == 1:
            tmpl = comp["podTemplate"]
            comp["podTemplate"] = {
                "metadata": tmpl.pop("metadata", {}),
                **tmpl,
            }  # metadata first, as pod_extras puts it
            comp["podTemplate"]["metadata"].setdefault("annotations", {}).update(rollout)
        components.append(comp)
    return {"backendFramework": r.engine.backend_framework, "components": components}


def _spec_v1alpha1(r: ResolvedRecipe, pvc: str, rollout: dict[str, str]) -> dict[str, Any]:
    services: dict[str, Any] = {
        "Frontend": {
            "componentType": "frontend",
            "replicas": 1,
            "extraPodSpec": {
                "mainContainer": {
                    "image": r.image,
                    "command": ["python3", "-m", "dynamo.frontend"],
                    "args": frontend_args(r),
                }
            },
        }
    }
    pod_extras.frontend_v1alpha1(services["Frontend"], r)
    for role, w in r.recipe.topology.roles().items():
        gpus = str(_gpus_per_pod(w))
        svc: dict[str, Any] = {
            "componentType": "worker",
            "replicas": w.replicas,
            "envs": _worker_env(r, worker_args(r, role, w)),
            "resources": {"limits": {"gpu": gpus}, "requests": {"gpu": gpus}},
            "volumeMounts": [{"name": pvc, "mountPoint": MODEL_CACHE_MOUNT}],
            "extraPodSpec": {
                "mainContainer": {
                    "image": r.image,
                    "command": ["python3", "-m", r.engine.module],
                    "args": worker_args(r, role, w),
                    "workingDir": r.engine.working_dir,
                }
            },
        }
        if _needs_modules_cache(r, worker_args(r, role, w)):
            svc["extraPodSpec"]["mainContainer"]["volumeMounts"] = [
                {"name": HF_MODULES_VOLUME, "mountPath": HF_MODULES_MOUNT}
            ]
            svc["extraPodSpec"]["volumes"] = [{"name": HF_MODULES_VOLUME, "emptyDir": {}}]
        if role != "worker":
            svc["subComponentType"] = role
        if _extra_resources(r):
            for side in ("limits", "requests"):
                svc["resources"][side]["custom"] = _extra_resources(r)
        if w.nodes > 1:
            svc["multinode"] = {"nodeCount": w.nodes}
        if w.autoscaling:
            svc["scalingAdapter"] = {"enabled": True}
        pod_extras.worker_v1alpha1(svc, r, w)
        if rollout and w.nodes == 1:  # v1alpha1: the component's own annotations
            svc.setdefault("annotations", {}).update(rollout)
        services[_component_name(r, role)] = svc
    return {
        "backendFramework": r.engine.backend_framework,
        "pvcs": [{"name": pvc, "create": False}],
        "services": services,
    }
