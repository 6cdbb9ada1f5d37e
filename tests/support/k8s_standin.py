"""A small stand-in for the Kubernetes API server: real HTTP, objects kept in memory, every request recorded.

Steps talk to it through the real `kubernetes` client (a kubeconfig pointing at it), so what is tested is
the exact request the client sends: path, verb and body. It implements what the steps use: create / get /
patch / delete of namespaced custom objects and PersistentVolumeClaims (404 for a missing object, 409 for
a duplicate create, a uid and resourceVersion on create, generateName), replace (PUT, 409 on a stale
resourceVersion), and list of any collection (pods, events, workflows, cluster-scoped nodes under namespace "":
what was put in `objects`; equality and existence label selectors). A created PVC is Bound at once (`pvc_phase_on_create`). Not a
real API server: no validation, no watch, no field selectors.

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


class K8sStandin:
    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str, str, str], dict] = {}
        # The PV controller's part: a created PVC is Bound at once unless a test says otherwise
        # (None: stays Pending, as with a storage class that cannot provision).
        self.pvc_phase_on_create: str | None = "Bound"
        self.requests: list[tuple[str, str, dict | None]] = []
        self._lock = threading.Lock()
        self._query: dict[str, list[str]] = {}
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
                    code, obj = standin._dispatch(self.command, path, body)
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

    def _dispatch(self, method: str, path: str, body: dict | None) -> tuple[int, dict]:
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
            return 200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items}
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
            obj = self.objects[key]
            for k, v in (body or {}).items():  # merge patch, one level deep is all the steps send
                obj[k] = {**obj.get(k, {}), **v} if isinstance(v, dict) else v
            return 200, obj
        if method == "PUT":  # replace: optimistic concurrency on metadata.resourceVersion, as the API server
            cur = self.objects[key]
            rv = (body or {}).get("metadata", {}).get("resourceVersion")
            if rv != cur["metadata"].get("resourceVersion"):
                return 409, self._status(409, "Conflict", f"{plural} {name!r}: the object has been modified")
            obj = dict(body or {})
            obj["metadata"] = {
                **obj["metadata"],
                "uid": cur["metadata"].get("uid"),
                "resourceVersion": str(len(self.requests)),
            }
            self.objects[key] = obj
            return 200, obj
        if method == "DELETE":
            self.objects.pop(key)
            return 200, self._status(200, "Deleted", "deleted") | {"status": "Success"}
        return 405, self._status(405, "MethodNotAllowed", method)
