"""`infersweep preflight`: everything a run needs from the cluster, checked before any GPU is held.

A run that finds a missing Secret, a stale template or a Prometheus that does not scrape the frontends only
learns it after model-cache, deploy and wait-ready (tens of minutes, GPUs held from deploy on). Each check here
is one request or two, and every problem is one line naming the object and the fix:

  Secrets       the HF token Secret (key HF_TOKEN: huggingface_hub reads it; the DGD's envFrom needs the Secret)
                and the S3 credentials Secret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: what boto3 and
                Argo's artifact repository read), present with non-empty keys
  install set   the ServiceAccounts, the executor's token Secret, Roles, RoleBindings and ConfigMaps present
                (ConfigMaps with the data this checkout renders), the WorkflowTemplates and CronWorkflows
                installed at this checkout's version (infersweep/install_version.py)
  S3            the results bucket and the artifact bucket writable with the Secret's own keys (a probe object
                put and deleted under the prefix)
  Prometheus    answers each query the run requires (params/metrics.yaml `required.cluster`, scoped as the
                scrape step scopes it) and scrapes Dynamo's PodMonitors: each exists and has a scrape pool
                `podMonitor/<namespace>/<name>/<i>` (prometheus-operator pkg/prometheus/promcfg.go names a
                PodMonitor's jobs so), which is there only when the Prometheus' podMonitorSelector and
                podMonitorNamespaceSelector select it
  GPU pools     each recipe's worker pods can be placed: a node matches their placement (the nvidia.com/gpu.product
                label of params/gpus.yaml) and offers their resources (nvidia.com/gpu, a fabric's rdma/ib), and
                their Multus networks exist (infersweep/gpu_pool_check.py); --recipe narrows it to what will run

The cluster is reached through the kubeconfig (infersweep/argo_kube.py). S3 and Prometheus are reached at the
settings' addresses unless --s3-endpoint / --prometheus-url give the laptop's way there (a port-forward).
"""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass
from typing import Any

from infersweep.argo_server import ArgoServerError
from infersweep.cluster_settings import ClusterSettings
from infersweep.install_version import MANAGED_SELECTOR, version_problems
from infersweep.params_files import read_yaml_mapping
from infersweep.paths import params_dir

HF_KEYS = ("HF_TOKEN",)
S3_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")


@dataclass
class Reach:
    """How the laptop reaches S3 and Prometheus (default: the settings' in-cluster addresses)."""

    s3_endpoint_url: str | None = None  # http(s)://host:port; "" = AWS
    prometheus_url: str | None = None


def _secret_data(secret: dict[str, Any]) -> dict[str, str]:
    out = {k: base64.b64decode(v).decode(errors="replace") for k, v in (secret.get("data") or {}).items()}
    out.update(secret.get("stringData") or {})
    return out


def check_secrets(kube, settings: ClusterSettings) -> tuple[list[str], dict[str, str] | None]:
    """(problems, the S3 Secret's data when it is usable)."""
    ns, lines, s3 = kube.namespace, [], None
    for name, keys, what, create in (
        (
            settings.hf_token_secret,
            HF_KEYS,
            "the Hugging Face token",
            f"kubectl -n {ns} create secret generic {settings.hf_token_secret} --from-literal=HF_TOKEN=hf_...",
        ),
        (
            settings.s3.credentials_secret,
            S3_KEYS,
            "the S3 credentials",
            f"kubectl -n {ns} create secret generic {settings.s3.credentials_secret} "
            "--from-literal=AWS_ACCESS_KEY_ID=... --from-literal=AWS_SECRET_ACCESS_KEY=...",
        ),
    ):
        secret = kube.get("Secret", name)
        if secret is None:
            lines.append(f"Secret {ns}/{name} ({what}): missing; create it: {create}")
            continue
        data = _secret_data(secret)
        absent = [k for k in keys if not data.get(k)]
        if absent:
            lines.append(f"Secret {ns}/{name} ({what}): no value for {', '.join(absent)}; add the key(s): {create}")
        elif keys == S3_KEYS:
            s3 = data
    if settings.git_credentials_secret:
        lines += _check_git_secret(kube, settings.git_credentials_secret)
    return lines, s3


def _check_git_secret(kube, name: str) -> list[str]:
    """The optional Secret of the launcher's recipes from Git (infersweep/launcher/git_credentials.py): one of
    its two key pairs. The launcher mounts it with optional: true, so a missing one shows only at a fetch."""
    from infersweep.launcher.git_credentials import HTTPS_KEYS, SSH_KEYS

    ns = kube.namespace
    create = (
        f"kubectl -n {ns} create secret generic {name} --type=kubernetes.io/basic-auth "
        "--from-literal=username=... --from-literal=password=<token> (ssh: docs/ui.md)"
    )
    secret = kube.get("Secret", name)
    if secret is None:
        return [f"Secret {ns}/{name} (git_credentials_secret, recipes from Git): missing; create it: {create}"]
    data = _secret_data(secret)
    if not any(all(data.get(k) for k in keys) for keys in (HTTPS_KEYS, SSH_KEYS)):
        return [
            f"Secret {ns}/{name} (git_credentials_secret, recipes from Git): needs keys "
            f"{' and '.join(HTTPS_KEYS)}, or {' and '.join(SSH_KEYS)}; has {', '.join(sorted(data)) or 'none'}: "
            f"{create}"
        ]
    return []


def check_install_set(kube, argo: list[dict[str, Any]], manifests: list[dict[str, Any]]) -> list[str]:
    ns, lines = kube.namespace, []
    for doc in manifests:
        kind, name = doc["kind"], doc["metadata"]["name"]
        cur = kube.get(kind, name)
        if cur is None:
            lines.append(
                f"{kind} {ns}/{name}: missing; apply the install set (`infersweep install`, or "
                f"`infersweep install --out DIR && kubectl apply -n {ns} -k DIR`)"
            )
        elif kind == "ConfigMap" and (cur.get("data") or {}) != (doc.get("data") or {}):
            keys = sorted(
                k
                for k in set(cur.get("data") or {}) | set(doc.get("data") or {})
                if (cur.get("data") or {}).get(k) != (doc.get("data") or {}).get(k)
            )
            lines.append(
                f"ConfigMap {ns}/{name}: keys {', '.join(keys)} differ from what this checkout renders "
                "from params/cluster.yaml; re-apply the install set"
            )
    for kind in ("WorkflowTemplate", "CronWorkflow"):
        installed = kube.list(kind, MANAGED_SELECTOR)
        lines += version_problems([d for d in argo if d["kind"] == kind], installed, ns, kind=kind)
    return lines


def _s3_probe(endpoint_url: str, region: str, creds: dict[str, str], bucket: str, prefix: str) -> str | None:
    """None when a probe object can be put and deleted; else why not (one line)."""
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError

    client = boto3.client(
        "s3",
        endpoint_url=endpoint_url or None,
        region_name=region or creds.get("AWS_DEFAULT_REGION") or "us-east-1",
        aws_access_key_id=creds["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=creds["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=creds.get("AWS_SESSION_TOKEN") or None,
        config=Config(
            connect_timeout=5,
            read_timeout=10,
            retries={"total_max_attempts": 2, "mode": "standard"},
            s3={"addressing_style": "path"} if endpoint_url else None,
        ),
    )
    key = (
        f"{prefix.rstrip('/')}/.infersweep-preflight/{uuid.uuid4().hex}"
        if prefix
        else f".infersweep-preflight/{uuid.uuid4().hex}"
    )
    try:
        client.put_object(Bucket=bucket, Key=key, Body=b"infersweep preflight probe\n")
        client.delete_object(Bucket=bucket, Key=key)
    except ClientError as e:
        err = e.response.get("Error", {})
        return f"{err.get('Code', '?')}: {err.get('Message', e)}"
    except BotoCoreError as e:
        return str(e)
    return None


def check_s3(settings: ClusterSettings, creds: dict[str, str] | None, reach: Reach) -> list[str]:
    if creds is None:
        return ["S3: not checked, the credentials Secret is not usable (see its line)"]
    lines = []
    s3, art = settings.s3, settings.artifact_repository
    results_url = reach.s3_endpoint_url if reach.s3_endpoint_url is not None else s3.endpoint_url
    art_url = f"{'http' if art.insecure else 'https'}://{art.endpoint}"
    if art.endpoint == "s3.amazonaws.com" and not art.insecure:
        art_url = ""  # AWS: boto3's own regional endpoint
    if reach.s3_endpoint_url is not None:
        art_url = reach.s3_endpoint_url  # the laptop's way to the same store (a port-forward)
    for what, url, region, bucket, prefix in (
        ("results", results_url, s3.region, s3.bucket, s3.prefix),
        ("artifacts", art_url, art.region, art.bucket, ""),
    ):
        why = _s3_probe(url, region, creds, bucket, prefix)
        if why:
            where = url or "AWS S3"
            lines.append(
                f"S3 {what} bucket s3://{bucket}/{prefix} at {where}: not writable with the keys of Secret "
                f"{settings.s3.credentials_secret} ({why}); fix the bucket, the endpoint (s3.endpoint / "
                "artifact_repository.endpoint) or the keys"
            )
    return lines


def _get_json(url: str, timeout: float = 10) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read() or b"{}")
        except ValueError:
            return e.code, {"error": e.reason}


def required_queries(settings: ClusterSettings) -> dict[str, str]:
    """The queries a cluster run requires (metrics.yaml `required.cluster`), scoped as the scrape step would
    scope them for a run of this namespace (the DGD name is a placeholder: the query must parse and run)."""
    from infersweep.results.server_metrics import scoped_queries

    spec = read_yaml_mapping(params_dir() / "metrics.yaml")
    queries, _ = scoped_queries(spec, namespace=settings.namespace, dgd="preflight")
    return {q: queries[q] for q in (spec.get("required") or {}).get("cluster", []) if q in queries}


def check_prometheus(kube, settings: ClusterSettings, reach: Reach) -> list[str]:
    url = (reach.prometheus_url or settings.prometheus_url).rstrip("/")
    if not url:
        return []  # no Prometheus: the scrape step records metrics/SKIPPED, nothing is required of one
    lines = []
    try:
        code, body = _get_json(f"{url}/api/v1/status/buildinfo")
    except (urllib.error.URLError, OSError) as e:
        return [
            f"Prometheus at {url}: not answering ({getattr(e, 'reason', e)}); check prometheus_url, or pass "
            "--prometheus-url http://localhost:9090 after kubectl port-forward"
        ]
    for name, q in required_queries(settings).items():
        code, body = _get_json(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": q}))
        if code != 200 or body.get("status") != "success":
            lines.append(
                f"Prometheus at {url}: query {name} (params/metrics.yaml) fails: "
                f"{body.get('errorType', code)}: {body.get('error', '')}".rstrip(": ")
            )
    code, body = _get_json(f"{url}/api/v1/scrape_pools")
    pools = set((body.get("data") or {}).get("scrapePools") or []) if code == 200 else None
    pm = settings.pod_monitors
    for name in pm.names:
        try:
            exists = kube.get("PodMonitor", name, namespace=pm.namespace) is not None
        except ArgoServerError as e:
            lines.append(f"PodMonitor {pm.namespace}/{name}: cannot be read ({e})")
            continue
        if not exists:
            lines.append(
                f"PodMonitor {pm.namespace}/{name}: missing; install Dynamo's platform chart with "
                "dynamo.metrics.podMonitors.enabled=true (or set pod_monitors in params/cluster.yaml)"
            )
            continue
        if pools is None:
            lines.append(
                f"Prometheus at {url}: /api/v1/scrape_pools unanswered (HTTP {code}, Prometheus < 2.42?); "
                f"cannot tell whether it scrapes PodMonitor {pm.namespace}/{name}"
            )
        elif not any(p.startswith(f"podMonitor/{pm.namespace}/{name}/") for p in pools):
            lines.append(
                f"PodMonitor {pm.namespace}/{name}: not selected by the Prometheus at {url} (no scrape pool "
                f"podMonitor/{pm.namespace}/{name}/*); give it the labels of the Prometheus' "
                "podMonitorSelector (Dynamo chart: dynamo.metrics.podMonitors.labels) and allow its "
                "namespace in podMonitorNamespaceSelector"
            )
    return lines


def _check_hint(name: str) -> str:
    return f"; check it with --recipe {name} or --all-recipes"


def check_gpu_pools(
    kube,
    settings: ClusterSettings,
    recipes: list[str] | None = None,
    *,
    skipped: list[str] | None = None,
    all_recipes: bool = False,
) -> list[str]:
    """The nodes and networks the recipes' worker pods need (infersweep/gpu_pool_check.py), one line per need
    no node or NetworkAttachmentDefinition meets. `recipes`: the recipes to run (names or files); None: the
    catalogue. By default the catalogue check skips a recipe with its own transport (an EFA recipe among RoCE
    ones: another cluster's fabric) and one whose GPU type no node here has (another pool's), and appends one
    line per skipped recipe with its reason to `skipped`; one problem line when no node has any GPU type (the
    placement labels are the seed cluster's). `all_recipes`: check every catalogue recipe, skipping none."""
    from infersweep.dgd import deployable_dgd
    from infersweep.gpu_pool_check import node_matches, pool_problems, worker_pods
    from infersweep.recipe import all_recipe_paths, load_recipe

    try:
        nodes = kube.list_nodes()
    except ArgoServerError as e:
        return [f"Nodes: cannot list them ({e}); the GPU pools were not checked (RBAC: list nodes)"]
    nads: dict[tuple[str, str], bool] = {}

    def network_exists(namespace: str, name: str) -> bool:
        if (namespace, name) not in nads:
            try:
                nads[(namespace, name)] = kube.get("NetworkAttachmentDefinition", name, namespace) is not None
            except ArgoServerError:  # no Multus CRD at all: the API answers 404 for the whole group
                nads[(namespace, name)] = False
        return nads[(namespace, name)]

    lines: list[str] = []
    chosen = [load_recipe(r) for r in recipes] if recipes else [load_recipe(p) for p in all_recipe_paths()]
    skip = not recipes and not all_recipes
    why_skipped: list[str] = []
    no_node: set[str] = set()
    for r in chosen:
        if skip and r.recipe.transport is not None:
            why_skipped.append(
                f"skipped recipe {r.name}: its own transport ({r.recipe.transport}){_check_hint(r.name)}"
            )
            continue
        dgd = deployable_dgd(r, settings, name=r.name)
        pods = list(worker_pods(dgd))
        if skip and pods and not any(node_matches(n, spec) for _, spec, _ in pods for n in nodes):
            no_node.add(r.recipe.gpu.type)
            why_skipped.append(
                f"skipped recipe {r.name}: no node has its GPU type ({r.recipe.gpu.type}){_check_hint(r.name)}"
            )
            continue
        lines += pool_problems(dgd, nodes, network_exists, settings.namespace, f"recipe {r.name} ({r.recipe.gpu.type})")
    if skipped is not None:
        skipped += why_skipped
    if skip and no_node and len(no_node) == len({r.recipe.gpu.type for r in chosen}):
        products = sorted(
            {((n.get("metadata") or {}).get("labels") or {}).get("nvidia.com/gpu.product", "-") for n in nodes}
        )
        lines.append(
            f"GPU pools: no node matches the placement of any GPU type in params/gpus.yaml ({', '.join(sorted(no_node))}); "
            f"this cluster's nvidia.com/gpu.product: {products}: adapt params/gpus.yaml placement.gpu_product "
            "(and fabric: networks, resources, UCX_NET_DEVICES) to this cluster"
        )
    return lines


def preflight(
    kube,
    settings: ClusterSettings,
    reach: Reach | None = None,
    *,
    install: tuple[list[dict[str, Any]], list[dict[str, Any]]],
    recipes: list[str] | None = None,
    skipped: list[str] | None = None,
    all_recipes: bool = False,
) -> list[str]:
    """Every problem, one line each; [] when a run can start. `install` is this checkout's install set
    (workflows/install_set.py install_set), rendered by the command: the checks below render nothing.
    `skipped`, `all_recipes`: check_gpu_pools'."""
    reach = reach or Reach()
    argo, manifests = install
    lines, creds = check_secrets(kube, settings)
    lines += check_install_set(kube, argo, manifests)
    lines += check_s3(settings, creds, reach)
    lines += check_prometheus(kube, settings, reach)
    lines += check_gpu_pools(kube, settings, recipes, skipped=skipped, all_recipes=all_recipes)
    return lines
