"""The DGD a retried deploy (or a later treatment's apply) sends over the one its run already created.

Two rules of the Dynamo operator and of the API server decide its shape:

* **A replace, not a merge patch.** A JSON merge patch (RFC 7386, what `patch_namespaced_custom_object`
  sends for a dict body) merges objects key by key: a key the rendered DGD no longer has survives on the
  server. v1alpha1 keeps services as a map (`spec.services.<name>`), so a service, an annotation or a
  resource a later treatment drops would stay and the deployment would not be the one rendered. A replace
  (PUT, with the live `resourceVersion` for optimistic concurrency) makes the spec exactly the rendered one.
* **Replicas that a scaling adapter owns are the live ones.** A component with a
  DynamoGraphDeploymentScalingAdapter (v1beta1 `scalingAdapter` present; v1alpha1 `scalingAdapter.enabled:
  true`) has its replicas moved by KEDA/HPA/the Planner through the adapter; Dynamo's validating webhook
  refuses an update that changes them from any account but the operator's or the planner's
  (ai-dynamo/dynamo deploy/operator/internal/webhook/validation/dynamographdeployment.go
  validateReplicasChanges: "spec.components[%s].replicas cannot be modified directly when scaling adapter is
  enabled; scale or update the related DynamoGraphDeploymentScalingAdapter instead"; a missing replicas reads
  as 1 there, so leaving the field out is a change too). So the live value is sent back unchanged.

The live object's metadata is kept (the operator's annotations, such as `nvidia.com/current-worker-hash`,
and the Workflow owner reference); the rendered labels and annotations are laid over it.
"""

from __future__ import annotations

import copy
from typing import Any


def _components(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Component name -> its spec: v1beta1 `components[]` by `name`, v1alpha1 `services` by key."""
    if isinstance(spec.get("components"), list):
        return {c["name"]: c for c in spec["components"] if isinstance(c, dict) and c.get("name")}
    return {n: c for n, c in (spec.get("services") or {}).items() if isinstance(c, dict)}


def adapter_owned(component: dict[str, Any], api_version: str) -> bool:
    """Whether a scaling adapter owns the component's replicas (the CRD's own rule per apiVersion:
    v1beta1 `scalingAdapter` "Setting it (even as an empty object) creates a DGDSA"; v1alpha1
    `scalingAdapter.enabled`, default false)."""
    sa = component.get("scalingAdapter")
    if api_version == "v1beta1":
        return sa is not None
    return isinstance(sa, dict) and bool(sa.get("enabled"))


def replacement(live: dict[str, Any], rendered: dict[str, Any]) -> dict[str, Any]:
    """The body of the PUT that brings `live` to `rendered`: the rendered spec, with every adapter-owned
    component's replicas as live has them, on live's metadata (resourceVersion included)."""
    version = rendered["apiVersion"].split("/", 1)[1]
    out = {k: copy.deepcopy(v) for k, v in live.items() if k != "status"}
    out["apiVersion"], out["kind"] = rendered["apiVersion"], rendered["kind"]
    out["spec"] = copy.deepcopy(rendered["spec"])
    meta = out.setdefault("metadata", {})
    rmeta = rendered.get("metadata") or {}
    for key in ("labels", "annotations"):
        if rmeta.get(key):
            meta[key] = {**(meta.get(key) or {}), **rmeta[key]}
    was = _components(live.get("spec") or {})
    for name, comp in _components(out["spec"]).items():
        if name in was and adapter_owned(comp, version):
            if "replicas" in was[name]:
                comp["replicas"] = was[name]["replicas"]
            else:
                comp.pop("replicas", None)
    return out
