"""The Argo Server, as the laptop commands (install, submit, status, list) talk to it: through Hera's
WorkflowsService (Hera has no submit CLI), configured the way Argo's own CLI is.

Configuration, first found wins: command-line flags; the environment variables Argo's CLI reads
(ARGO_SERVER as host:port, ARGO_SECURE=false for plain http, ARGO_BASE_HREF, ARGO_TOKEN,
ARGO_NAMESPACE, ARGO_INSECURE_SKIP_VERIFY); ~/.config/infersweep/config.yaml (keys host, token,
namespace, insecure_skip_verify); the namespace of params/cluster.yaml. ARGO_HTTP1 is accepted and
changes nothing: Argo's CLI uses it to leave gRPC, and Hera only ever speaks HTTP/1 REST.

Every document is validated against the strict Argo schemas, and its conversion to Hera's model is
checked to be lossless, before it is sent: Hera's models drop unknown fields silently.
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from infersweep.errors import UserError
from infersweep.schemas import validate_document

CONFIG_PATH = Path("~/.config/infersweep/config.yaml")
CONFIG_KEYS = {"host", "token", "namespace", "insecure_skip_verify"}
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


class ArgoConfigError(UserError):
    """Missing or malformed Argo Server settings: one line, before any request."""


class ArgoServerError(UserError):
    """The Argo Server refused or could not be reached (its address, token or namespace are the user's to fix):
    the CLI prints it as one line."""


@dataclass(frozen=True)
class ArgoConfig:
    host: str  # scheme://host:port/base-href/ (trailing slash: Hera joins API paths onto it)
    token: str | None = field(repr=False)  # never in a repr: a traceback or a debug print would show it
    namespace: str
    verify_ssl: bool

    def ui_link(self, name: str) -> str:
        return f"{self.host}workflows/{self.namespace}/{name}"


def _flag(value: str, source: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ArgoConfigError(f"{source}={value!r}: use true or false")


def _read_config_file(path: Path) -> dict[str, Any]:
    path = path.expanduser()
    if not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ArgoConfigError(f"{path}: not YAML: {e}") from None
    if not isinstance(data, dict):
        raise ArgoConfigError(f"{path}: expected a mapping with keys {sorted(CONFIG_KEYS)}")
    unknown = set(data) - CONFIG_KEYS
    if unknown:
        raise ArgoConfigError(f"{path}: unknown keys {sorted(unknown)}; known: {sorted(CONFIG_KEYS)}")
    return data


def load_config(
    *,
    host: str | None = None,
    token: str | None = None,
    namespace: str | None = None,
    insecure_skip_verify: bool | None = None,
    env: Mapping[str, str] | None = None,
    config_path: Path | None = None,
    default_namespace: str = "infersweep",
) -> ArgoConfig:
    env = os.environ if env is None else env
    file = _read_config_file(config_path or Path(env.get("INFERSWEEP_CONFIG", CONFIG_PATH)))
    raw_host = host or env.get("ARGO_SERVER") or file.get("host")
    if not raw_host:
        raise ArgoConfigError(
            "no Argo Server: pass --argo-server HOST:PORT, set ARGO_SERVER, or put `host:` in "
            f"{CONFIG_PATH} (e.g. kubectl -n argo port-forward svc/argo-server 2746 -> localhost:2746)"
        )
    if "://" not in raw_host:
        # Argo's CLI convention: ARGO_SERVER is host:port, https unless ARGO_SECURE=false.
        secure = _flag(env.get("ARGO_SECURE", "true"), "ARGO_SECURE")
        raw_host = f"{'https' if secure else 'http'}://{raw_host}"
    if not raw_host.startswith(("http://", "https://")):
        raise ArgoConfigError(f"Argo Server {raw_host!r}: use host:port or http(s)://host:port")
    base = env.get("ARGO_BASE_HREF", "").strip("/")
    url = raw_host.rstrip("/") + "/" + (base + "/" if base else "")
    if insecure_skip_verify is None:
        if "ARGO_INSECURE_SKIP_VERIFY" in env:
            insecure_skip_verify = _flag(env["ARGO_INSECURE_SKIP_VERIFY"], "ARGO_INSECURE_SKIP_VERIFY")
        else:
            insecure_skip_verify = bool(file.get("insecure_skip_verify", False))
    tok = token or env.get("ARGO_TOKEN") or file.get("token") or None
    ns = namespace or env.get("ARGO_NAMESPACE") or file.get("namespace") or default_namespace
    return ArgoConfig(host=url, token=tok, namespace=ns, verify_ssl=not insecure_skip_verify)


def _diff_paths(sent: Any, back: Any, path: str = "") -> list[str]:
    if isinstance(sent, dict) and isinstance(back, dict):
        out = []
        for k in sent:
            if k not in back:
                out.append(f"{path}.{k}".lstrip("."))
            else:
                out += _diff_paths(sent[k], back[k], f"{path}.{k}")
        return out
    if isinstance(sent, list) and isinstance(back, list) and len(sent) == len(back):
        return [p for i, (a, b) in enumerate(zip(sent, back, strict=False)) for p in _diff_paths(a, b, f"{path}[{i}]")]
    return [] if sent == back else [path.lstrip(".") or "(root)"]


def to_hera_model(doc: dict[str, Any]) -> Any:
    """Validate `doc` strictly, then convert it to Hera's model of its kind, refusing any silent loss."""
    from hera.workflows import models as m

    validate_document(doc)
    cls = {"Workflow": m.Workflow, "WorkflowTemplate": m.WorkflowTemplate, "CronWorkflow": m.CronWorkflow}.get(
        doc["kind"]
    )
    if cls is None:
        raise ArgoServerError(f"{doc['kind']} is not created through the Argo Server; apply it with kubectl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Hera 7 uses pydantic-v1 style calls on v2
        model = cls.parse_obj(doc)
        back = json.loads(model.json(by_alias=True, exclude_none=True))
    lost = _diff_paths(doc, back)
    if lost:
        raise ArgoServerError(
            f"{doc['kind']}/{doc['metadata'].get('name')}: Hera's model would drop or change "
            f"{lost[:5]}; refusing to send it"
        )
    return model


def to_dict(model: Any) -> dict[str, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return json.loads(model.json(by_alias=True, exclude_none=True))


class ArgoServer:
    """The few calls infersweep makes, on top of Hera's WorkflowsService."""

    def __init__(self, cfg: ArgoConfig) -> None:
        from hera.workflows.service import WorkflowsService

        self.cfg = cfg
        self.svc = WorkflowsService(host=cfg.host, token=cfg.token, namespace=cfg.namespace, verify_ssl=cfg.verify_ssl)

    def _call(self, what: str, fn, *args, **kw):
        from hera.exceptions import HeraException
        from requests import RequestException

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                return fn(*args, **kw)
        except HeraException as e:
            raise ArgoServerError(f"{what}: {e}") from None
        except RequestException as e:
            raise ArgoServerError(f"{what}: cannot reach the Argo Server at {self.cfg.host}: {e}") from None

    def apply(self, doc: dict[str, Any]) -> tuple[str, str]:
        """Create or update a WorkflowTemplate or CronWorkflow; returns (created|updated, resourceVersion).

        An update carries the server's current resourceVersion (optimistic concurrency, as kubectl apply):
        two installs racing get a conflict instead of one silently undoing the other."""
        from hera.exceptions import NotFound
        from hera.workflows import models as m

        kind, name = doc["kind"], doc["metadata"]["name"]
        model = to_hera_model(doc)
        model.metadata.namespace = self.cfg.namespace
        get, create, update, key, creq, ureq = {
            "WorkflowTemplate": (
                self.svc.get_workflow_template,
                self.svc.create_workflow_template,
                self.svc.update_workflow_template,
                "template",
                m.WorkflowTemplateCreateRequest,
                m.WorkflowTemplateUpdateRequest,
            ),
            "CronWorkflow": (
                self.svc.get_cron_workflow,
                self.svc.create_cron_workflow,
                self.svc.update_cron_workflow,
                "cron_workflow",
                m.CreateCronWorkflowRequest,
                m.UpdateCronWorkflowRequest,
            ),
        }[kind]
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                current = get(name)
        except NotFound:
            current = None
        except Exception:
            current = self._call(f"get {kind}/{name}", get, name)  # re-raise as a readable error
        if current is None:
            out = self._call(f"create {kind}/{name}", create, creq(**{key: model, "namespace": self.cfg.namespace}))
            return "created", out.metadata.resource_version or ""
        model.metadata.resource_version = current.metadata.resource_version
        out = self._call(
            f"update {kind}/{name}", update, name, ureq(**{key: model, "namespace": self.cfg.namespace, "name": name})
        )
        return "updated", out.metadata.resource_version or ""

    def create_workflow(self, doc: dict[str, Any]) -> dict[str, Any]:
        from hera.workflows import models as m

        model = to_hera_model(doc)
        model.metadata.namespace = self.cfg.namespace
        out = self._call(
            "create Workflow",
            self.svc.create_workflow,
            m.WorkflowCreateRequest(workflow=model, namespace=self.cfg.namespace),
        )
        return to_dict(out)

    def get_workflow(self, name: str) -> dict[str, Any]:
        return to_dict(self._call(f"get Workflow/{name}", self.svc.get_workflow, name))

    def list_workflows(self, selector: str | None = None) -> list[dict[str, Any]]:
        out = self._call("list Workflows", self.svc.list_workflows, label_selector=selector or None)
        return [to_dict(w) for w in out.items or []]

    def list_templates(self, selector: str | None = None) -> list[dict[str, Any]]:
        out = self._call("list WorkflowTemplates", self.svc.list_workflow_templates, label_selector=selector or None)
        return [to_dict(w) for w in out.items or []]

    def ui_link(self, name: str) -> str:
        return self.cfg.ui_link(name)


def add_server_flags(p) -> None:
    """The flags every command that talks to the Argo Server takes."""
    p.add_argument(
        "--argo-server",
        metavar="HOST:PORT",
        help="Argo Server (default: $ARGO_SERVER or the config file; without one: the Kubernetes API "
        "through $KUBECONFIG or ~/.kube/config, as `argo` does)",
    )
    p.add_argument(
        "--token-file",
        metavar="PATH",
        help="file holding the bearer token (default: $ARGO_TOKEN or the config file)",
    )
    p.add_argument("--token", help="bearer token; visible to other users in `ps`: prefer --token-file or $ARGO_TOKEN")
    p.add_argument(
        "-n", "--namespace", help="namespace (default: $ARGO_NAMESPACE, the config file, params/cluster.yaml)"
    )
    p.add_argument(
        "-k",
        "--insecure-skip-verify",
        action="store_true",
        default=None,
        help="do not verify the server's TLS certificate ($ARGO_INSECURE_SKIP_VERIFY)",
    )


def token_from_args(a) -> str | None:
    """The token of --token-file (or the discouraged --token, with a warning), else None: load_config then
    takes $ARGO_TOKEN or the config file. A command line is readable by every user of the machine
    (/proc/PID/cmdline, `ps`), so a token given there has already leaked to them."""
    path, token = getattr(a, "token_file", None), getattr(a, "token", None)
    if path and token:
        raise ArgoConfigError("--token and --token-file: give one (--token-file; --token shows in `ps`)")
    if token:
        print(
            "warning: --token is visible to every user of this machine in `ps`; use --token-file PATH or "
            "$ARGO_TOKEN instead",
            file=sys.stderr,
        )
        return token
    if not path:
        return None
    try:
        text = Path(path).expanduser().read_text().strip()
    except OSError as e:
        raise ArgoConfigError(f"--token-file {path}: cannot read it ({e.strerror})") from None
    if not text:
        raise ArgoConfigError(f"--token-file {path}: empty; put the bearer token in it (argo auth token)")
    return text


def server_from_args(a) -> ArgoServer:
    """The Argo Server only; the commands use infersweep.argo_client.server_from_args (kubeconfig too)."""
    from infersweep.cluster_settings import load_cluster_settings

    cfg = load_config(
        host=a.argo_server,
        token=token_from_args(a),
        namespace=a.namespace,
        insecure_skip_verify=a.insecure_skip_verify,
        default_namespace=load_cluster_settings().namespace,
    )
    return ArgoServer(cfg)
