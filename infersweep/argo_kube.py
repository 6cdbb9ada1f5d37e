"""Argo objects through the Kubernetes API, with the user's kubeconfig: what `argo` does without ARGO_SERVER.

Argo's CLI talks to the Argo Server when it is given one (ARGO_SERVER / --argo-server) and otherwise creates and
reads the Workflow objects itself through the Kubernetes API with the kubeconfig (argo-workflows
pkg/apiclient/apiclient.go NewClientFromOptsWithContext: ArgoServerOpts.URL != "" -> newArgoServerClient, else
newArgoKubeClient). The workflow-controller watches Workflow objects however they were created, so a Workflow
POSTed to /apis/argoproj.io/v1alpha1/namespaces/NS/workflows runs exactly like one the Argo Server created
(the Argo Server's own WorkflowServer.CreateWorkflow ends in the same Create call on the clientset).

`KubeArgo` has the calls the commands make on `infersweep.argo_server.ArgoServer` (apply, create_workflow,
get_workflow, list_workflows, list_templates, ui_link), so install, submit, status and list work either way.
Unlike the Argo Server it also creates the ConfigMaps and RBAC (`apply` takes any object of the install set).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

from infersweep.argo_server import ArgoConfigError, ArgoServerError
from infersweep.schemas import validate_document

# kind -> (API group/version path prefix, plural); the objects infersweep creates.
_PATHS = {
    "Workflow": ("/apis/argoproj.io/v1alpha1", "workflows"),
    "WorkflowTemplate": ("/apis/argoproj.io/v1alpha1", "workflowtemplates"),
    "CronWorkflow": ("/apis/argoproj.io/v1alpha1", "cronworkflows"),
    "ConfigMap": ("/api/v1", "configmaps"),
    "Secret": ("/api/v1", "secrets"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "PodMonitor": ("/apis/monitoring.coreos.com/v1", "podmonitors"),
    # Multus (k8s.cni.cncf.io/v1, network-attachment-definitions): a worker pod's secondary networks
    "NetworkAttachmentDefinition": ("/apis/k8s.cni.cncf.io/v1", "network-attachment-definitions"),
}


def kubeconfig_path(env: Mapping[str, str] | None = None) -> str | None:
    """The kubeconfig the Kubernetes client would read ($KUBECONFIG, else ~/.kube/config), None when there is none."""
    env = os.environ if env is None else env
    if env.get("KUBECONFIG"):
        files = [p for p in env["KUBECONFIG"].split(os.pathsep) if p]
        return env["KUBECONFIG"] if any(Path(p).expanduser().is_file() for p in files) else None
    default = Path("~/.kube/config").expanduser()
    return str(default) if default.is_file() else None


class KubeArgo:
    """Argo objects through the Kubernetes API (the `argo` CLI's kube mode)."""

    def __init__(self, kubeconfig: str, namespace: str) -> None:
        from kubernetes import config

        try:
            self.api = config.new_client_from_config(config_file=kubeconfig)
        except Exception as e:  # noqa: BLE001 - ConfigException, a YAML error, a missing context: one line
            raise ArgoConfigError(f"kubeconfig {kubeconfig}: {e}") from None
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.host = self.api.configuration.host

    # the same attribute the commands read on ArgoServer
    @property
    def cfg(self):
        return self

    def _call(self, what: str, method: str, path: str, body: dict | None = None, query: list | None = None) -> dict:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            data = self.api.call_api(
                path,
                method,
                query_params=query or [],
                body=body,
                header_params={"Content-Type": "application/json", "Accept": "application/json"},
                auth_settings=["BearerToken"],
                response_types_map={},
                _return_http_data_only=True,
                _preload_content=False,
                _request_timeout=30,
            )
        except ApiException as e:
            try:
                msg = json.loads(e.body).get("message") or e.reason
            except (TypeError, ValueError):
                msg = e.reason
            err = ArgoServerError(f"{what}: Kubernetes API {e.status}: {msg}")
            err.status = e.status  # type: ignore[attr-defined]
            raise err from None
        except HTTPError as e:
            raise ArgoServerError(
                f"{what}: cannot reach the Kubernetes API at {self.host} (kubeconfig {self.kubeconfig}): {e}"
            ) from None
        return json.loads(data.data or b"{}")

    def _path(self, kind: str, name: str | None = None, namespace: str | None = None) -> str:
        prefix, plural = _PATHS[kind]
        return f"{prefix}/namespaces/{namespace or self.namespace}/{plural}" + (f"/{name}" if name else "")

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The object, None when the API says 404 (any other refusal is an ArgoServerError)."""
        try:
            return self._call(f"get {kind}/{name}", "GET", self._path(kind, name, namespace))
        except ArgoServerError as e:
            if getattr(e, "status", None) == 404:
                return None
            raise

    def list(self, kind: str, selector: str | None = None) -> list[dict[str, Any]]:
        query = [("labelSelector", selector)] if selector else []
        return self._call(f"list {kind}", "GET", self._path(kind), query=query).get("items") or []

    def list_nodes(self) -> list[dict[str, Any]]:
        """The cluster's Nodes (cluster-scoped: GET /api/v1/nodes), their labels and status.allocatable."""
        return self._call("list Node", "GET", "/api/v1/nodes").get("items") or []

    def apply(self, doc: dict[str, Any]) -> tuple[str, str]:
        """Create, or replace with the current resourceVersion (a racing writer gets 409, as kubectl apply)."""
        kind, name = doc["kind"], doc["metadata"]["name"]
        validate_document(doc)
        body = {**doc, "metadata": {**doc["metadata"], "namespace": self.namespace}}
        current = self.get(kind, name)
        if current is None:
            out = self._call(f"create {kind}/{name}", "POST", self._path(kind), body)
            return "created", (out.get("metadata") or {}).get("resourceVersion", "")
        body["metadata"]["resourceVersion"] = current["metadata"].get("resourceVersion")
        out = self._call(f"update {kind}/{name}", "PUT", self._path(kind, name), body)
        return "updated", (out.get("metadata") or {}).get("resourceVersion", "")

    def create_workflow(self, doc: dict[str, Any]) -> dict[str, Any]:
        validate_document(doc)
        body = {**doc, "metadata": {**doc["metadata"], "namespace": self.namespace}}
        return self._call("create Workflow", "POST", self._path("Workflow"), body)

    def get_workflow(self, name: str) -> dict[str, Any]:
        return self._call(f"get Workflow/{name}", "GET", self._path("Workflow", name))

    def list_workflows(self, selector: str | None = None) -> list[dict[str, Any]]:
        return self.list("Workflow", selector)

    def list_templates(self, selector: str | None = None) -> list[dict[str, Any]]:
        return self.list("WorkflowTemplate", selector)

    def ui_link(self, name: str) -> str:
        return f"kubectl -n {self.namespace} get workflow {name}   (or: argo -n {self.namespace} get {name})"
