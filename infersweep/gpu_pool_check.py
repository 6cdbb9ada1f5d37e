"""What a recipe's worker pods need from the cluster's nodes, checked before a run holds any GPU (preflight).

The needs are read from the DGD a recipe renders (infersweep.dgd.deployable_dgd), not from params/gpus.yaml:
what the scheduler will be asked for. Per worker component: the required node affinity and nodeSelector
(params/gpus.yaml `placement`: the `nvidia.com/gpu.product` label NVIDIA GPU Feature Discovery sets), the
extended resources every container requests (nvidia.com/gpu, and a fabric's rdma/ib), and the Multus networks
of its pod annotation `k8s.v1.cni.cncf.io/networks` (NetworkAttachmentDefinitions, `name` in the pod's namespace
or `namespace/name`). A recipe whose pods no node can take sits Pending while the run's GPU lock is held: the
seed cluster's roce-macvlan, rdma/ib and H100 label rendered on another cluster (issue 38).

Node matching follows the scheduler's rules for what is rendered: nodeSelector is every label equal
(k8s.io/component-helpers scheduling/corev1/nodeaffinity), requiredDuringScheduling nodeSelectorTerms are ORed,
the matchExpressions of a term ANDed, operators In / NotIn / Exists / DoesNotExist; a resource fits a node whose
status.allocatable holds at least the request (the NodeResourcesFit filter, before what other pods use).
"""

from __future__ import annotations

from typing import Any, Iterable

from infersweep.dgd.pod_extras import MULTUS_NETWORKS

CORE = ("cpu", "memory", "ephemeral-storage", "pods")  # every node has them; not what a GPU pool adds


def _match(labels: dict[str, str], expr: dict[str, Any]) -> bool:
    key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
    if op == "In":
        return labels.get(key) in values
    if op == "NotIn":
        return labels.get(key) not in values
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    return False  # Gt/Lt: not rendered by infersweep


def node_matches(node: dict[str, Any], pod_spec: dict[str, Any]) -> bool:
    labels = (node.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    return not terms or any(all(_match(labels, e) for e in t.get("matchExpressions") or []) for t in terms)


def _quantity(v: Any) -> float:
    text = str(v)
    for suffix, mult in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("k", 1e3), ("m", 1e-3)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * mult
    return float(text)


def pod_requests(pod_spec: dict[str, Any]) -> dict[str, float]:
    """Extended resources the pod's containers request (limits stand for requests where no request is given)."""
    out: dict[str, float] = {}
    for c in pod_spec.get("containers") or []:
        res = c.get("resources") or {}
        for name, qty in ((res.get("limits") or {}) | (res.get("requests") or {})).items():
            if name not in CORE:
                out[name] = out.get(name, 0.0) + _quantity(qty)
    return out


def _selector_text(pod_spec: dict[str, Any]) -> str:
    parts = [f"{k}={v}" for k, v in (pod_spec.get("nodeSelector") or {}).items()]
    required = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for t in required.get("nodeSelectorTerms") or []:
        parts += [
            f"{e.get('key')} {e.get('operator')} {e.get('values') or ''}".strip()
            for e in t.get("matchExpressions") or []
        ]
    return ", ".join(parts) or "any node"


def worker_pods(dgd: dict[str, Any]) -> Iterable[tuple[str, dict[str, Any], dict[str, str]]]:
    """(component, pod spec, pod annotations) of each GPU worker component of a v1beta1 DGD."""
    for c in (dgd.get("spec") or {}).get("components") or []:
        tmpl = c.get("podTemplate") or {}
        spec = tmpl.get("spec") or {}
        if any("nvidia.com/gpu" in str((k.get("resources") or {})) for k in spec.get("containers") or []):
            yield c.get("name", "?"), spec, (tmpl.get("metadata") or {}).get("annotations") or {}


def pool_problems(
    dgd: dict[str, Any], nodes: list[dict[str, Any]], network_exists, namespace: str, where: str
) -> list[str]:
    """One line per need of `dgd`'s worker pods that no node (or no NetworkAttachmentDefinition) meets.
    `network_exists(namespace, name)`: whether that NetworkAttachmentDefinition is there. `where`: the recipe
    and the file its need comes from, for the fix."""
    lines: list[str] = []
    for comp, spec, notes in worker_pods(dgd):
        fit = [n for n in nodes if node_matches(n, spec)]
        if not fit:
            here = sorted(
                {((n.get("metadata") or {}).get("labels") or {}).get("nvidia.com/gpu.product", "-") for n in nodes}
            )
            lines.append(
                f"{where}, {comp}: no node matches its placement ({_selector_text(spec)}; this cluster's "
                f"nvidia.com/gpu.product: {here}): its pods would sit Pending; adapt params/gpus.yaml placement"
            )
            continue
        for name, qty in sorted(pod_requests(spec).items()):
            if not any(_quantity(((n.get("status") or {}).get("allocatable") or {}).get(name, 0)) >= qty for n in fit):
                lines.append(
                    f"{where}, {comp}: no node of its placement offers {name}: {qty:g} (status.allocatable): its "
                    f"pods would sit Pending; adapt params/gpus.yaml fabric.resources (or the recipe's transport)"
                )
        for ref in [r.strip() for r in str(notes.get(MULTUS_NETWORKS, "")).split(",") if r.strip()]:
            ns, _, name = ref.rpartition("/")
            if not network_exists(ns or namespace, name):
                lines.append(
                    f"{where}, {comp}: NetworkAttachmentDefinition {ns or namespace}/{name} missing (Multus network "
                    f"{ref!r}): its pods would not start; create it, or adapt params/gpus.yaml fabric.networks"
                )
    return lines
