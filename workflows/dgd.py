"""Render a recipe into a DynamoGraphDeployment (DGD).

`nvidia.com/v1beta1` (`spec.components[]`, `podTemplate`) is what Dynamo 1.6 stores and is the default;
`v1alpha1` (`spec.services`, `extraPodSpec`) is for operators before 1.6, like the 1.3.0 in the cluster
report. Both carry the same graph: one frontend with the recipe's router mode, and one component per
worker role (aggregated `worker`, or `prefill` + `decode`) reading the model from the cache PVC. A worker's
args are the engine's own spelling (params/engines/*.yaml) of the recipe's TP/DP/EP, disaggregation role and
KV transfer, KV-router events, CPU KV offload and speculative decoding; a multinode replica is one
component with `multinode.nodeCount` and each pod asks for its share of the GPUs (the operator adds the
engine's multinode flags); fabric resources (rdma/ib, EFA) are extra pod resources; an autoscaled role
starts at its min replicas with a scaling adapter and its range is an annotation.
"""

from __future__ import annotations

import json
from typing import Any

from infersweep.names import DGD_NAME_MAX, dns_label
from infersweep.recipe import ResolvedRecipe, Workers
from workflows import keda, pod_extras

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


def parallelism_args(r: ResolvedRecipe, w: Workers) -> list[str]:
    """DP/EP flags as the engine spells them (the rules are in infersweep.recipe.Recipe._dp_rule)."""
    e, args = r.engine, []
    if w.dp > 1:
        args += [e.dp_flag, str(w.dp)] if e.dp_flag else []
        args += e.dp_switches
    if w.ep > 1:
        args += [e.ep_flag, str(w.ep)] if e.ep_flag else [e.ep_switch] if e.ep_switch else []
    return args


def kv_transfer_args(r: ResolvedRecipe) -> list[str]:
    """vLLM's NIXL connector config, with the transport's NIXL backend when it is not the default UCX.

    With a CPU KV tier as well, the two connectors are combined in vLLM's MultiConnector: vLLM's own
    `--kv-offloading-size` would *replace* kv_connector with the OffloadingConnector (vllm/config/vllm.py
    VllmConfig._post_init_kv_transfer_config), leaving no NIXL path from prefill to decode.
    """
    e = r.engine
    if not (e.kv_transfer_flag and e.kv_transfer_config):
        return []
    config = dict(e.kv_transfer_config)
    t = r.transport  # the recipe's, or its GPU pool's fabric
    if t and t.nixl_backend != "UCX":
        config["kv_connector_extra_config"] = {"backends": [t.nixl_backend]}
    tier = cpu_offload_connector(r)
    if tier:
        config = {"kv_connector": "MultiConnector", "kv_role": config["kv_role"],
                  "kv_connector_extra_config": {"connectors": [config, tier]}}
    return [e.kv_transfer_flag, json.dumps(config, separators=(",", ":"))]


def cpu_offload_connector(r: ResolvedRecipe) -> dict[str, Any] | None:
    """The CPU KV tier as a vLLM connector entry (what `--kv-offloading-size N --kv-offloading-backend native`
    sets up: vllm/config/vllm.py VllmConfig._post_init_kv_transfer_config), for a MultiConnector."""
    off, spell = r.recipe.kv_offload, r.engine.offload
    if not (off and off.cpu_gib is not None and spell.cpu_connector):
        return None
    extra = {spell.cpu_connector_size_key: int(off.cpu_gib * (1 << 30))}
    return {"kv_connector": spell.cpu_connector, "kv_role": "kv_both", "kv_connector_extra_config": extra}


def offload_args(r: ResolvedRecipe, role: str = "worker") -> list[str]:
    off, spell = r.recipe.kv_offload, r.engine.offload
    if not off:
        return []
    if off.cpu_gib is not None and spell.cpu_gib_flag:
        if role in ("prefill", "decode") and cpu_offload_connector(r):
            return []  # rendered inside the MultiConnector next to NIXL (kv_transfer_args)
        return [spell.cpu_gib_flag, f"{off.cpu_gib:g}", *spell.cpu_args]
    if role == "decode" and spell.hicache_prefill_only:
        # SGLang forces the radix cache off on a PD decode server and refuses HiCache there
        # (sglang/srt/server_args.py ServerArgs: disaggregation decode disables radix cache; hierarchical
        # cache requires it): the host tier belongs on prefill, where prompts are cached.
        return []
    args = [spell.hicache_switch] if spell.hicache_switch else []
    if off.hicache_ratio is not None and spell.hicache_ratio_flag:
        args += [spell.hicache_ratio_flag, f"{off.hicache_ratio:g}"]
    if off.write_policy and spell.hicache_write_policy_flag:
        args += [spell.hicache_write_policy_flag, off.write_policy]
    return args


def speculative_args(r: ResolvedRecipe) -> list[str]:
    spec, style = r.recipe.speculative, r.engine.speculative
    if not spec or spec.mode == "none" or not style:
        return []
    method, n, draft = style.methods[spec.mode], spec.num_tokens, r.draft_model
    if style.style == "vllm-config":
        config: dict = {"method": method, "num_speculative_tokens": n}
        if draft:
            config["model"] = draft
        config |= spec.engine_config
        return [style.flag, json.dumps(config, separators=(",", ":"))]
    if style.style == "sglang-flags":
        args = [style.flag, method, "--speculative-num-steps", str(n), "--speculative-num-draft-tokens", str(n + 1),
                "--speculative-eagle-topk", "1"]
        return args + (["--speculative-draft-model-path", draft] if draft else [])
    # TRT-LLM takes it as engine-args: MTP reuses the model's NextN layers, Eagle needs the draft dir.
    spec_config: dict = {"decoding_type": method}
    if spec.mode == "mtp":
        spec_config["num_nextn_predict_layers"] = n
    else:
        spec_config |= {"max_draft_len": n, "speculative_model_dir": draft}
    return [style.flag, json.dumps({"speculative_config": spec_config}, separators=(",", ":"))]


def worker_args(r: ResolvedRecipe, role: str, w: Workers) -> list[str]:
    e = r.engine
    args = [e.model_flag, r.model.id, e.tp_flag, str(w.tp)] + parallelism_args(r, w)
    args += list(r.recipe.engine_args)
    if role == "prefill":
        args += e.prefill_args + kv_transfer_args(r)
    elif role == "decode":
        args += e.decode_args + kv_transfer_args(r)
    if r.recipe.router == "kv" and role in ("worker", "prefill") and not (e.kv_router_args and e.kv_router_args[0] in args):
        # the router scores the workers a request enters at; a recipe that already gives the events flag in its
        # engine_args (e.g. an experiment keeping events on for round-robin too) keeps its own, never twice
        args += e.kv_router_args
    args += offload_args(r, role)
    # Speculation is set on every role: vLLM and SGLang need the same draft config on both sides of a
    # disaggregated pair for the KV layout to match.
    args += speculative_args(r)
    return args


def _component_name(r: ResolvedRecipe, role: str) -> str:
    return r.recipe.engine.capitalize() + COMPONENT_NAMES[role]


def _gpus_per_pod(w: Workers) -> int:
    # A multinode replica spreads its TP ranks over `nodes` pods; each pod asks for its share.
    return w.gpus_per_replica // w.nodes


def _worker_env(r: ResolvedRecipe) -> list[dict[str, str]]:
    # The model-cache step has put the pinned revision on the PVC; workers must never reach the hub.
    env = [{"name": "HF_HOME", "value": MODEL_CACHE_MOUNT}, {"name": "HF_HUB_OFFLINE", "value": "1"}]
    t = r.transport  # the recipe's, or its GPU pool's fabric (infersweep.recipe.ResolvedRecipe.transport)
    env += [{"name": k, "value": v} for k, v in sorted(r.recipe.worker_env.items())]
    return env + [{"name": k, "value": v} for k, v in sorted((t.env if t else {}).items())]


def _extra_resources(r: ResolvedRecipe) -> dict[str, str]:
    """Fabric resources (rdma/ib, vpc.amazonaws.com/efa) each worker pod asks for besides its GPUs."""
    t = r.transport
    return {k: str(v) for k, v in sorted((t.resources if t else {}).items())}


def annotations(r: ResolvedRecipe) -> dict[str, str]:
    """What the DGD itself cannot say: the autoscaling KEDA must be given (JSON; workflows/keda.py turns it
    into ScaledObjects on the component's scaling adapter when the DGD is applied)."""
    names = {role: _component_name(r, role) for role in r.recipe.topology.roles()}
    spec = keda.autoscaling_annotation(r, names)
    return {keda.ANNOTATION: spec} if spec else {}


def dgd_base_name(recipe: str) -> str:
    """The DGD name a recipe renders with: the recipe name within the 45 characters older operators
    accept (cut + hash when longer). A run renames it `<base cut>-<run hash>` (infersweep.names.dgd_run_name),
    so two runs of one recipe never share a deployment."""
    return dns_label(recipe, DGD_NAME_MAX)


def render_dgd(r: ResolvedRecipe, *, api_version: str = "v1beta1", name: str | None = None,
               pvc: str = "model-cache", hf_secret: str = "hf-token-secret") -> dict[str, Any]:
    if api_version == "v1beta1":
        spec = _spec_v1beta1(r, pvc, hf_secret)
    elif api_version == "v1alpha1":
        spec = _spec_v1alpha1(r, pvc, hf_secret)
    else:
        raise ValueError(f"DGD apiVersion {api_version!r}: use v1beta1 (Dynamo >= 1.6) or v1alpha1 (older operators)")
    metadata: dict[str, Any] = {"name": name or dgd_base_name(r.name), "labels": labels(r)}
    if annotations(r):
        metadata["annotations"] = annotations(r)
    return {"apiVersion": f"nvidia.com/{api_version}", "kind": "DynamoGraphDeployment", "metadata": metadata, "spec": spec}


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
    pod_extras.frontend_v1beta1(frontend, r)
    components = [frontend]
    for role, w in r.recipe.topology.roles().items():
        gpus = str(_gpus_per_pod(w))
        res = {r.gpu_type.resource: gpus} | _extra_resources(r)
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
                    "env": _worker_env(r),
                    "envFrom": [{"secretRef": {"name": hf_secret}}],
                    "resources": {"limits": dict(res), "requests": dict(res)},
                    "volumeMounts": [{"name": "model-cache", "mountPath": MODEL_CACHE_MOUNT, "readOnly": True}],
                }],
                "volumes": [{"name": "model-cache", "persistentVolumeClaim": {"claimName": pvc, "readOnly": True}}],
            }},
        }
        if w.nodes > 1:
            comp["multinode"] = {"nodeCount": w.nodes}
        if w.autoscaling:
            comp["scalingAdapter"] = {}  # replicas start at min; the adapter lets KEDA/HPA move them
        pod_extras.worker_v1beta1(comp, r, w)
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
    pod_extras.frontend_v1alpha1(services["Frontend"], r)
    for role, w in r.recipe.topology.roles().items():
        gpus = str(_gpus_per_pod(w))
        svc: dict[str, Any] = {
            "componentType": "worker",
            "replicas": w.replicas,
            "envFromSecret": hf_secret,
            "envs": _worker_env(r),
            "resources": {"limits": {"gpu": gpus}, "requests": {"gpu": gpus}},
            "volumeMounts": [{"name": pvc, "mountPoint": MODEL_CACHE_MOUNT}],
            "extraPodSpec": {"mainContainer": {
                "image": r.image, "command": ["python3", "-m", r.engine.module],
                "args": worker_args(r, role, w), "workingDir": r.engine.working_dir,
            }},
        }
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
        services[_component_name(r, role)] = svc
    return {"backendFramework": r.recipe.engine, "pvcs": [{"name": pvc, "create": False}], "services": services}
