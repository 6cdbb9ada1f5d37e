"""A small stand-in for the Kubernetes API server: real HTTP, objects kept in memory, every request recorded.

Steps talk to it through the real `kubernetes` client (a kubeconfig pointing at it), so what is tested is
the exact request the client sends: path, verb and body. It implements what the steps use: create / get /
patch / delete of namespaced custom objects and PersistentVolumeClaims (404 for a missing object, 409 for
a duplicate create, a uid and resourceVersion on create, generateName), replace (PUT, 409 on a stale
resourceVersion), and list of any collection (pods, events, workflows, cluster-scoped nodes under namespace "":
what was put in `objects`; equality and existence label selectors, fieldSelector metadata.name, limit/continue
pages; an Accept of `...;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` answers metadata only). A created PVC is Bound at once (`pvc_phase_on_create`). Not a real API server: no validation, no watch,
no other field selectors. A PATCH is a JSON merge patch (RFC 7386: objects merged key by key, null deletes, lists
replaced), what the client sends for a dict body. One admission rule is kept, Dynamo's DGD webhook on replicas a
scaling adapter owns (`dgd_replica_webhook`), since every request here comes from a step's account, never the
operator's. A DELETE with `propagationPolicy: Foreground` keeps the object (deletionTimestamp, finalizer
foregroundDeletion) while an object whose ownerReference blocks it exists (the garbage collector's part,
`collect_garbage`, runs before every request).

    with K8sStandin() as api:
        env["KUBECONFIG"] = str(api.kubeconfig(tmp_path))
        ... run a step ...
        api.objects[("nvidia.com", "v1beta1", "ns", "dynamographdeployments", "name")]
        api.requests  # [(method, path, body), ...]
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import yaml

_CUSTOM = re.compile(
    r"^/apis/(?P<group>[^/]+)/(?P<version>[^/]+)/namespaces/(?P<ns>[^/]+)/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$"
)
_CORE = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$")
# cluster-scoped core objects (Nodes: the preflight's GPU pool check), kept under namespace ""
_CLUSTER = re.compile(r"^/api/v1/(?P<plural>nodes)(?:/(?P<name>[^/]+))?$")


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch (the API server's application/merge-patch+json)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def dgd_replica_webhook(version: str, old: dict, new: dict) -> str | None:
    """Dynamo's validating webhook on a DGD update from an account other than the operator's or the
    planner's (ai-dynamo/dynamo deploy/operator/internal/webhook/validation/dynamographdeployment.go
    validateReplicasChanges): a component with a scaling adapter may not change `replicas` (absent reads
    as 1). The refusal message, or None."""

    def comps(spec):
        if isinstance(spec.get("components"), list):
            return {c.get("name"): c for c in spec["components"]}
        return dict(spec.get("services") or {})

    was = comps(old.get("spec") or {})
    for name, c in comps(new.get("spec") or {}).items():
        sa = c.get("scalingAdapter")
        owned = sa is not None if version == "v1beta1" else isinstance(sa, dict) and bool(sa.get("enabled"))
        if owned and name in was and int(was[name].get("replicas", 1)) != int(c.get("replicas", 1)):
            return (
                f"admission webhook denied the request: spec.components[{name}].replicas cannot be modified "
                "directly when scaling adapter is enabled; scale or update the related "
                "DynamoGraphDeploymentScalingAdapter instead"
            )
    return None


class K8sStandin:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str, str, str], dict] = {}
        # The PV controller's part: a created PVC is Bound at once unless a test says otherwise
        # (None: stays Pending, as with a storage class that cannot provision).
        self.pvc_phase_on_create: str | None = "Bound"
        self.requests: list[tuple[str, str, dict | None]] = []
        self.sent: list[tuple[str, str, int]] = []  # (method, path, bytes of the response body)
        self._lock = threading.Lock()
        self._query: dict[str, list[str]] = {}
        self._accept = ""
        self.accepts: list[tuple[str, str, str]] = []  # (method, path, the request's Accept header)
        self._server: ThreadingHTTPServer | None = None

    # -- lifecycle ----------------------------------------------------------------------------------
    def __enter__(self) -> "K8sStandin":
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def _body(self) -> dict | None:
                n = int(self.headers.get("Content-Length") or 0)
                return json.loads(self.rfile.read(n)) if n else None

            def _send(self, code: int, obj: dict) -> None:
                data = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _handle(self) -> None:
                path, _, query = self.path.partition("?")
                body = self._body()
                with standin._lock:
                    standin.requests.append((self.command, path, body))
                    standin._query = parse_qs(query)
                    standin._accept = self.headers.get("Accept") or ""
                    standin.accepts.append((self.command, path, standin._accept))
                    code, obj = standin._dispatch(self.command, path, body)
                    standin.sent.append((self.command, path, len(json.dumps(obj))))
                self._send(code, obj)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        if self._server:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self, folder: Path) -> Path:
        f = Path(folder) / "kubeconfig"
        f.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": "standin",
                    "clusters": [{"name": "standin", "cluster": {"server": self.url}}],
                    "users": [{"name": "standin", "user": {"token": "standin-token"}}],
                    "contexts": [
                        {
                            "name": "standin",
                            "context": {"cluster": "standin", "user": "standin", "namespace": "default"},
                        }
                    ],
                }
            )
        )
        return f

    # -- API ----------------------------------------------------------------------------------------
    @staticmethod
    def _status(code: int, reason: str, message: str) -> dict:
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "code": code,
            "reason": reason,
            "message": message,
        }

    def _dependents(self, obj: dict) -> list[dict]:
        """Objects whose ownerReferences name `obj` (the stand-in keeps the owner chain one level deep: a
        test puts a DGD's pods here owned by the DGD itself)."""
        uid = obj.get("metadata", {}).get("uid")
        return [
            o
            for o in self.objects.values()
            if any(
                r.get("uid") == uid and r.get("blockOwnerDeletion")
                for r in o.get("metadata", {}).get("ownerReferences") or []
            )
        ]

    def collect_garbage(self) -> None:
        """The garbage collector's part: an object in foreground deletion goes once no dependent blocks it."""
        for key, obj in list(self.objects.items()):
            if "foregroundDeletion" in (obj.get("metadata", {}).get("finalizers") or []) and not self._dependents(obj):
                self.objects.pop(key)

    def _dispatch(self, method: str, path: str, body: dict | None) -> tuple[int, dict]:
        self.collect_garbage()
        m = _CUSTOM.match(path)
        if m:
            group, version = m["group"], m["version"]
        else:
            m = _CORE.match(path) or _CLUSTER.match(path)
            if not m:
                return 404, self._status(404, "NotFound", f"no route {path}")
            group, version = "", "v1"
        ns, plural, name = m.groupdict().get("ns") or "", m["plural"], m["name"]
        if method == "GET" and name is None:
            items = [o for k, o in self.objects.items() if k[:4] == (group, version, ns, plural)]
            # `key=value`, `key!=value` (also matches objects without the key) and `key` (exists)
            for sel in self._query.get("labelSelector", [""])[0].split(","):
                if sel:
                    k, eq, v = sel.partition("=")
                    labels_of = lambda o: o.get("metadata", {}).get("labels") or {}  # noqa: E731
                    if k.endswith("!"):
                        items = [o for o in items if labels_of(o).get(k[:-1]) != v]
                    else:
                        items = [o for o in items if (labels_of(o).get(k) == v if eq else k in labels_of(o))]
            # fieldSelector metadata.name=X (served for every resource, custom ones included)
            for sel in self._query.get("fieldSelector", [""])[0].split(","):
                if sel.startswith("metadata.name="):
                    items = [o for o in items if o.get("metadata", {}).get("name") == sel.split("=", 1)[1]]
            # limit / continue: pages in name order, the token the next offset
            items = sorted(items, key=lambda o: o.get("metadata", {}).get("name", ""))
            start = int(self._query.get("continue", ["0"])[0] or 0)
            limit = int(self._query.get("limit", ["0"])[0] or 0)
            page = items[start : start + limit] if limit else items[start:]
            meta = {"continue": str(start + limit)} if limit and start + limit < len(items) else {}
            if "as=PartialObjectMetadataList;g=meta.k8s.io;v=v1" in self._accept:
                # what the API server answers that Accept with (k8s.io/apiserver pkg/endpoints/handlers/response.go
                # asPartialObjectMetadataList): each item's metadata only
                partial = [
                    {"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": o.get("metadata", {})}
                    for o in page
                ]
                return 200, {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": meta,
                    "items": partial,
                }
            return 200, {"kind": "List", "apiVersion": "v1", "metadata": meta, "items": page}
        if method == "POST" and name is None:
            meta = (body or {}).setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                # the API server names it: generateName + 5 random characters (apiserver
                # pkg/storage/names/generate.go SimpleNameGenerator, randomLength = 5)
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name", "")
            key = (group, version, ns, plural, name)
            if key in self.objects:
                return 409, self._status(409, "AlreadyExists", f"{plural} {name!r} already exists")
            obj = dict(body or {})
            obj.setdefault("metadata", {})["namespace"] = ns
            obj["metadata"].setdefault("uid", f"uid-{len(self.requests)}-{name}")
            obj["metadata"]["resourceVersion"] = str(len(self.requests))
            if plural == "persistentvolumeclaims":
                obj["status"] = {"phase": self.pvc_phase_on_create or "Pending"}
            self.objects[key] = obj
            return 201, obj
        key = (group, version, ns, plural, name or "")
        if key not in self.objects:
            return 404, self._status(404, "NotFound", f"{plural} {name!r} not found")
        if method == "GET":
            return 200, self.objects[key]
        if method == "PATCH":
            obj = merge_patch(self.objects[key], body or {})
            if plural == "dynamographdeployments" and (why := dgd_replica_webhook(version, self.objects[key], obj)):
                return 403, self._status(403, "Forbidden", why)
            self.objects[key] = obj
            return 200, obj
        if method == "PUT":  # replace: optimistic concurrency on metadata.resourceVersion, as the API server
            cur = self.objects[key]
            rv = (body or {}).get("metadata", {}).get("resourceVersion")
            if rv != cur["metadata"].get("resourceVersion"):
                return 409, self._status(409, "Conflict", f"{plural} {name!r}: the object has been modified")
            if plural == "dynamographdeployments" and (why := dgd_replica_webhook(version, cur, body or {})):
                return 403, self._status(403, "Forbidden", why)
            obj = dict(body or {})
            obj["metadata"] = {
                **obj["metadata"],
                "uid": cur["metadata"].get("uid"),
                "resourceVersion": str(len(self.requests)),
            }
            self.objects[key] = obj
            return 200, obj
        if method == "DELETE":
            obj = self.objects[key]
            if (body or {}).get("propagationPolicy") == "Foreground" and self._dependents(obj):
                # Foreground cascading deletion: kept, marked, until its blocking dependents are gone
                # (kubernetes.io docs concepts/architecture/garbage-collection)
                obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
                obj["metadata"]["finalizers"] = ["foregroundDeletion", *obj["metadata"].get("finalizers", [])]
                return 200, obj
            self.objects.pop(key)
            return 200, self._status(200, "Deleted", "deleted") | {"status": "Success"}
        return 405, self._status(405, "MethodNotAllowed", method)
