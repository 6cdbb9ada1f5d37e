"""Emptying the workers' KV caches between two treatments that keep the workers.

A reset is declared in the DGD the treatment applies: its worker pod templates carry the annotation
RESET_ANNOTATION with the step's index. On a cluster that is a pod-template change, so the operator rolls
every worker (Dynamo 1.6.1: a worker change rolls all workers): new engines, empty caches, the only reset
a cluster offers without reaching into the pods. Local mode sees that only this annotation changed and
empties the caches in place instead (infersweep.local.dynamo.reconfigure.apply_local): the worker's own
clear_kv_blocks endpoint (ai-dynamo 1.3.1 dynamo/vllm/handlers.py clear_kv_blocks ->
engine_client.reset_prefix_cache(reset_connector=True), served by dynamo/vllm/worker_factory.py), or a
restart of mocker workers.
"""

from __future__ import annotations

import copy
from typing import Any

RESET_ANNOTATION = "infersweep.io/kv-cache-reset"
WORKER_TYPES = ("worker", "prefill", "decode")


def _worker_metas(dgd: dict[str, Any], create: bool = False):
    """Each worker's pod-template metadata; `create` adds the (empty) mappings where they are missing."""
    spec = dgd.get("spec") or {}
    for comp in spec.get("components") or []:  # v1beta1
        if comp.get("type") in WORKER_TYPES:
            yield (
                comp.setdefault("podTemplate", {}).setdefault("metadata", {})
                if create
                else (comp.get("podTemplate") or {}).get("metadata") or {}
            )
    for svc in (spec.get("services") or {}).values():  # v1alpha1: extraPodMetadata is the pod template's
        if svc.get("componentType") in WORKER_TYPES:
            yield svc.setdefault("extraPodMetadata", {}) if create else svc.get("extraPodMetadata") or {}


def mark_reset(dgd: dict[str, Any], token: str) -> dict[str, Any]:
    """A copy of `dgd` whose workers' pod templates carry the reset token."""
    out = copy.deepcopy(dgd)
    for meta in _worker_metas(out, create=True):
        meta.setdefault("annotations", {})[RESET_ANNOTATION] = token
    return out


def reset_token(dgd: dict[str, Any]) -> str | None:
    for meta in _worker_metas(dgd):
        token = (meta.get("annotations") or {}).get(RESET_ANNOTATION)
        if token is not None:
            return token
    return None


def without_reset(dgd: dict[str, Any]) -> dict[str, Any]:
    """`dgd` without the token (and without annotation maps it alone had made), for comparing two DGDs."""
    out = copy.deepcopy(dgd)
    for meta in _worker_metas(out):
        ann = meta.get("annotations") or {}
        ann.pop(RESET_ANNOTATION, None)
        if not ann:
            meta.pop("annotations", None)
    spec = out.get("spec") or {}
    for comp in spec.get("components") or []:
        pt = comp.get("podTemplate")
        if pt is not None and pt.get("metadata") == {}:
            pt.pop("metadata")
            if not pt:
                comp.pop("podTemplate")
    for svc in (spec.get("services") or {}).values():
        if svc.get("extraPodMetadata") == {}:
            svc.pop("extraPodMetadata")
    return out
