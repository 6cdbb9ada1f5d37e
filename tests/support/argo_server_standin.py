"""A stand-in for the Argo Server built from its swagger (tests/fixtures/argo/argo-server-swagger-v4.1.2.json):
its paths, request and error bodies, status codes and optimistic concurrency, every body validated with the
strict schemas; and the `argo` fixture that points Argo's own environment variables at it. Used by the tests
of install / submit / status / list / watch / runs (tests/cli/test_argo_server.py says what it follows)."""

from __future__ import annotations

import json
import re
import threading
import uuid
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest

from infersweep.schemas import SchemaError, validate_document
from tests.support.paths import FIXTURES

SWAGGER = FIXTURES / "argo" / "argo-server-swagger-v4.1.2.json"
TOKEN = "test-token"
NS = "bench"
RECIPE = "nemotron-3-nano-fp8-vllm-agg-kv"
# path regex -> (collection, body key in create/update requests)
KINDS = {
    "workflow-templates": ("WorkflowTemplate", "template"),
    "cron-workflows": ("CronWorkflow", "cronWorkflow"),
    "workflows": ("Workflow", "workflow"),
}


def _selects(selector: str, labels: dict) -> bool:
    """Kubernetes equality-based label selectors (apimachinery labels.Parse): `k=v`, `k==v`, `k!=v`; a `!=`
    requirement also matches an object without the label."""
    for term in (t for t in selector.split(",") if t):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k) == v:
                return False
        else:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k) != v:
                return False
    return True


class ArgoServerStandIn:
    def __init__(self) -> None:
        self.store: dict[tuple[str, str, str], dict] = {}  # (collection, ns, name) -> object
        self.rv = 100
        self.requests: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.httpd.server_port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def objects(self, collection: str) -> list[dict]:
        return [o for (c, _, _), o in self.store.items() if c == collection]

    def _stamp(self, obj: dict, ns: str) -> dict:
        self.rv += 1
        meta = obj["metadata"]
        meta["namespace"] = ns
        meta["resourceVersion"] = str(self.rv)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))
        meta["generation"] = meta.get("generation", 0) + 1
        validate_document(obj)  # what we return is shaped as the API says, too
        return obj

    def _handler(self):
        srv = self

        class H(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep pytest output clean
                pass

            def _send(self, code: int, body: dict) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, code: int, grpc: int, msg: str) -> None:
                self._send(code, {"code": grpc, "message": msg})  # grpc.gateway.runtime.Error

            def _route(self, method: str) -> None:
                path, _, query = self.path.partition("?")
                srv.requests.append((method, path))
                if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                    return self._error(401, 16, "token not valid for running mode")
                m = re.fullmatch(r"/api/v1/(workflow-templates|cron-workflows|workflows)/([^/]+)(?:/([^/]+))?", path)
                if not m:
                    return self._error(404, 5, f"Not Found: {path}")
                coll, ns, name = m.groups()
                kind, key = KINDS[coll]
                body = {}
                if method in ("POST", "PUT"):
                    body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with srv.lock:
                    return self._dispatch(method, coll, kind, key, ns, name, body, query)

            def _dispatch(self, method, coll, kind, key, ns, name, body, query):
                if method == "GET" and name is None:
                    selector = parse_qs(query).get("listOptions.labelSelector", [""])[0]
                    items = [
                        o
                        for (c, n, _), o in srv.store.items()
                        if c == coll and n == ns and _selects(selector, o["metadata"].get("labels") or {})
                    ]
                    return self._send(200, {"metadata": {"resourceVersion": str(srv.rv)}, "items": items})
                if method == "GET":
                    obj = srv.store.get((coll, ns, name))
                    return self._send(200, obj) if obj else self._error(404, 5, f'{coll} "{name}" not found')
                unknown = set(body) - {key, "namespace", "name", "createOptions", "serverDryRun"}
                if unknown or key not in body:
                    return self._error(400, 3, f"request body: unknown fields {sorted(unknown)} or missing {key!r}")
                obj = body[key]
                obj.setdefault("apiVersion", "argoproj.io/v1alpha1")
                obj.setdefault("kind", kind)
                try:
                    validate_document(obj)
                except SchemaError as e:
                    return self._error(400, 3, str(e))
                if method == "POST" and name is None:
                    meta = obj["metadata"]
                    if not meta.get("name"):
                        meta["name"] = meta.pop("generateName") + uuid.uuid4().hex[:5]
                    if (coll, ns, meta["name"]) in srv.store:
                        return self._error(409, 6, f'{coll} "{meta["name"]}" already exists')
                    if coll == "workflows":
                        ref = obj["spec"].get("workflowTemplateRef", {}).get("name")
                        if ref and ("workflow-templates", ns, ref) not in srv.store:
                            return self._error(400, 3, f'workflowtemplates.argoproj.io "{ref}" not found')
                    srv.store[(coll, ns, meta["name"])] = srv._stamp(obj, ns)
                    return self._send(200, obj)
                if method == "PUT" and name and coll != "workflows":
                    cur = srv.store.get((coll, ns, name))
                    if cur is None:
                        return self._error(404, 5, f'{coll} "{name}" not found')
                    rv = obj["metadata"].get("resourceVersion")
                    if not rv:
                        return self._error(
                            400, 3, "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
                        )
                    if rv != cur["metadata"]["resourceVersion"]:
                        return self._error(
                            409, 10, f'Operation cannot be fulfilled on {coll} "{name}": the object has been modified'
                        )
                    obj["metadata"]["uid"] = cur["metadata"]["uid"]
                    obj["metadata"]["creationTimestamp"] = cur["metadata"]["creationTimestamp"]
                    obj["metadata"]["generation"] = cur["metadata"]["generation"]
                    srv.store[(coll, ns, name)] = srv._stamp(obj, ns)
                    return self._send(200, obj)
                return self._error(405, 12, f"{method} {coll} not implemented here")

            def do_GET(self):
                self._route("GET")

            def do_POST(self):
                self._route("POST")

            def do_PUT(self):
                self._route("PUT")

        return H


@pytest.fixture
def argo(monkeypatch, tmp_path):
    for var in (
        "ARGO_SERVER",
        "ARGO_TOKEN",
        "ARGO_NAMESPACE",
        "ARGO_SECURE",
        "ARGO_INSECURE_SKIP_VERIFY",
        "ARGO_BASE_HREF",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("INFERSWEEP_CONFIG", str(tmp_path / "none.yaml"))
    srv = ArgoServerStandIn()
    # Configured as a user would: Argo's own environment variables.
    monkeypatch.setenv("ARGO_SERVER", srv.url.removeprefix("http://"))
    monkeypatch.setenv("ARGO_SECURE", "false")
    monkeypatch.setenv("ARGO_TOKEN", TOKEN)
    monkeypatch.setenv("ARGO_NAMESPACE", NS)
    yield srv
    srv.close()
