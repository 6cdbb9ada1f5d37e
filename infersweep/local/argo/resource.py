"""The `resource` template, `action: create` only, as the local executor runs it: the manifest is created in
a local object store that stands for the Kubernetes API (`LocalObjects`), and the template's jsonPath outputs
are read from the created object, the way Argo does it:

* workflow/controller/operator.go executeResource: a resource template is a pod (node type Pod) running
  `argoexec resource <action>`; setOwnerReference adds the workflow as the object's controller owner.
* workflow/executor/resource.go ExecResource: `kubectl create -f manifest -o json`, the created object's
  namespace/kind/name come back from the API's answer (a generateName is filled in by the API server);
  WaitResource returns at once without successCondition/failureCondition; SaveResourceParameters reads each
  output parameter with `kubectl get -o jsonpath=<valueFrom.jsonPath>`.

Only what the launcher (workflows/launcher.py) uses runs here: `create` of an argoproj.io Workflow, outputs by
a dotted jsonPath (`{.metadata.name}`). Anything else is refused by name before the workflow starts
(check_template, called from argo_validate).
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

import yaml

from infersweep.local.argo.errors import WorkflowError
from infersweep.local.argo.nodes import Node, TemplateCall

SUPPORTED_KINDS = {("argoproj.io/v1alpha1", "Workflow")}
_JSONPATH = re.compile(r"^\{\.([A-Za-z0-9_.-]+)\}$")
# k8s.io/apiserver pkg/storage/names/generate.go SimpleNameGenerator: 5 random characters from
# utilrand.String (k8s.io/apimachinery pkg/util/rand: "bcdfghjklmnpqrstvwxz2456789").
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"


@dataclass
class LocalObjects:
    """What `kubectl create` created during local runs, in creation order (the local Kubernetes API)."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, doc: dict[str, Any], namespace: str) -> dict[str, Any]:
        kind = (doc.get("apiVersion"), doc.get("kind"))
        if kind not in SUPPORTED_KINDS:
            raise WorkflowError(
                f"resource create of {kind[0]}/{kind[1]}: only argoproj.io/v1alpha1 Workflow "
                "objects are created locally"
            )
        meta = dict(doc.get("metadata") or {})
        if not meta.get("name"):
            if not meta.get("generateName"):
                raise WorkflowError("resource create: metadata.name or metadata.generateName is required")
            meta["name"] = meta["generateName"] + "".join(random.choice(_NAME_CHARS) for _ in range(5))
        meta.setdefault("namespace", namespace)
        meta.update(uid=str(uuid.uuid4()), creationTimestamp=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        obj = {**doc, "metadata": meta}
        with self._lock:
            if any(
                o["metadata"]["name"] == meta["name"] and o["metadata"]["namespace"] == meta["namespace"]
                for o in self.objects
            ):
                raise WorkflowError(f'workflows.argoproj.io "{meta["name"]}" already exists')
            self.objects.append(obj)
        return obj


def check_template(tmpl: dict[str, Any]) -> None:
    """Refuse (before anything runs) what this port of the resource template does not do."""
    name, res = tmpl["name"], tmpl["resource"]
    if res.get("action") != "create":
        raise WorkflowError(f"templates.{name}.resource.action {res.get('action')!r}: only create runs locally")
    for f in ("successCondition", "failureCondition", "setOwnerReference", "flags", "manifestFrom", "mergeStrategy"):
        if res.get(f):
            raise WorkflowError(f"templates.{name}.resource.{f} is not supported by the local executor")
    for p in (tmpl.get("outputs") or {}).get("parameters") or []:
        jp = (p.get("valueFrom") or {}).get("jsonPath")
        if not jp or not _JSONPATH.match(jp):
            raise WorkflowError(
                f"templates.{name}.outputs.parameters.{p['name']}: only valueFrom.jsonPath '{{.a.b}}' runs locally"
            )


def _json_path(obj: Any, path: str) -> str:
    for part in _JSONPATH.match(path).group(1).split("."):
        obj = obj.get(part, "") if isinstance(obj, dict) else ""
    return obj if isinstance(obj, str) else yaml.safe_dump(obj).strip()


def execute_resource(argo: Any, node: Node | None, call: TemplateCall, substitute: Callable[..., Any]) -> Node:
    """`argo`: the LocalArgo running the node (operator.py imports this file). `substitute`: the executor's tag
    substitution (templates.py _substitute; passed in)."""
    if node is not None and node.phase != "Pending":
        return node
    tmpl = call.tmpl
    n = node or argo._init_call_node(call, "Pod", "Pending")
    if not argo._should_execute(call.on_exit):
        return argo._mark(n, "Failed", f"workflow shutdown with strategy: {argo.shutdown}")
    store = argo.cluster.objects
    if store is None:
        return argo._mark(n, "Error", "resource templates need the local object store (LocalCluster.objects)")
    # workflowpod.go substitutePodParams: the pod spec (the template, manifest included, is its ARGO_TEMPLATE
    # env var) is substituted once more with the workflow's globals, the template's inputs and pod.name,
    # unresolved tags kept.
    pod_params = argo.globals() | {f"inputs.parameters.{k}": v for k, v in (tmpl.get("_inputs") or {}).items()}
    manifest = substitute(tmpl["resource"].get("manifest") or "", pod_params | {"pod.name": n.id}, strict=False)
    try:
        doc = yaml.safe_load(manifest)
        if not isinstance(doc, dict):
            raise WorkflowError("Must provide at least one of flags or manifest.")  # resource.go getKubectlArguments
        created = store.create(doc, argo.namespace)
    except (WorkflowError, yaml.YAMLError) as e:
        # resource.go ExecResource: kubectl's error fails the step ("no more retries ...")
        return argo._mark(n, "Failed", f"no more retries {e}")
    n.outputs = {
        p["name"]: _json_path(created, p["valueFrom"]["jsonPath"])
        for p in (tmpl.get("outputs") or {}).get("parameters") or []
    }
    n.exit_code = "0"
    return argo._mark(n, "Succeeded")
