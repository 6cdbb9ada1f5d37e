"""`infersweep install [--dry-run | --out DIR]`: the install set (workflows/install_set.py) onto the cluster.

- With an Argo Server (ARGO_SERVER / --argo-server): every WorkflowTemplate and CronWorkflow is created or
  updated through it; the ConfigMaps and RBAC, which the Argo Server does not create, are printed for kubectl.
- With only a kubeconfig (as `argo` without ARGO_SERVER): every object, RBAC and ConfigMaps included, is
  created or replaced through the Kubernetes API (infersweep/argo_kube.py).
- `--out DIR` (GitOps): one object per file and a kustomization.yaml, no namespace and no run Workflows;
  commit DIR and let Argo CD / Flux sync it, or `kubectl apply -n NS -k DIR`.
- `--dry-run`: the whole set as one validated YAML stream; touches nothing.

A WorkflowTemplate that a live run references (directly or through its templates) and that this checkout
renders differently is deferred, with whatever references it, and install exits 1 naming the runs: under
`templateReferencing: Secure` changing it would error them (infersweep/template_holds.py).

Idempotent: a second install updates each object in place (with the server's resourceVersion), never
duplicates it. Every Argo object carries infersweep.io/version and infersweep.io/template-hash
(infersweep/install_version.py), which `submit` and `preflight` check against this checkout.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from infersweep.argo_client import server_from_args
from infersweep.argo_server import add_server_flags
from infersweep.cli_util import add_dgd_api_arg
from infersweep.recipe import RecipeError

KUSTOMIZATION = "kustomization.yaml"


def install_set(settings, dgd_api: str = "v1beta1") -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Argo objects, manifests for kubectl), each validated; see workflows/install_set.py. `dgd_api`: the DGD
    apiVersion the cluster's operator serves, which the nightly runs deploy and the reaper lists."""
    from workflows.install_set import install_set as build

    return build(settings, dgd_api=dgd_api)


def in_namespace(settings, namespace: str | None):
    """The settings of an install into `namespace` (`--namespace`, ARGO_NAMESPACE or the Argo config file's;
    None: params/cluster.yaml's own). Everything the set names a namespace in follows it: the RBAC, the
    ConfigMaps, the Prometheus queries, and the settings the UI launchers bake into their render step
    (workflows/launcher.py settings_text), so a launch from another namespace's UI renders for that namespace."""
    if not namespace or namespace == settings.namespace:
        return settings
    return settings.model_copy(update={"namespace": namespace})


def _stream(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, width=120)


def file_name(doc: dict[str, Any]) -> str:
    return f"{doc['kind'].lower()}-{doc['metadata']['name']}.yaml"


def write_gitops(out: Path, argo: list[dict[str, Any]], kube: list[dict[str, Any]], namespace: str) -> list[Path]:
    """One file per object and a kustomization.yaml listing them (kubectl kustomize / Argo CD / Flux read it).
    Files of objects no longer in the set are removed, so a commit of DIR is the whole change."""
    from workflows.install_set import without_namespace

    out.mkdir(parents=True, exist_ok=True)
    docs = [without_namespace(d, namespace) for d in kube + argo]  # RBAC and ConfigMaps first, for readers
    names = [file_name(d) for d in docs]
    for old in out.glob("*.yaml"):
        if old.name not in names and old.name != KUSTOMIZATION and _is_ours(old):
            old.unlink()
    files = []
    for name, doc in zip(names, docs, strict=True):
        f = out / name
        f.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
        files.append(f)
    kust = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": names}
    (out / KUSTOMIZATION).write_text(
        "# Written by `infersweep install --out`; regenerate, do not edit. No namespace on purpose: set it in an\n"
        "# overlay (`namespace: <ns>` in a kustomization that lists this folder), in the Argo CD Application's\n"
        "# destination, or with `kubectl apply -n <ns> -k .`. It must be params/cluster.yaml's `namespace`\n"
        f"# ({namespace}) unless you install per team with another settings file.\n"
        + yaml.safe_dump(kust, sort_keys=False, width=120)
    )
    return [*files, out / KUSTOMIZATION]


ADMISSION_FILE = "optional/dgd-admission-policy.yaml"


def write_admission_policy(out: Path, settings: Any) -> Path:
    """The DGD ValidatingAdmissionPolicy and its binding (workflows/admission.py): cluster-scoped, so outside
    the kustomization, for a cluster admin to apply (docs/security.md)."""
    from workflows.admission import admission_policy

    f = out / ADMISSION_FILE
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(
        "# Optional (Kubernetes >= 1.30, cluster admin): kubectl apply -f " + ADMISSION_FILE + "\n"
        "# The same rules the deploy step checks (infersweep/platform/dgd_policy.py), for every DGD in the namespace.\n"
        + _stream(admission_policy(settings))
    )
    return f


def _is_ours(path: Path) -> bool:
    try:
        doc = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError:
        return False
    return (
        isinstance(doc, dict)
        and ((doc.get("metadata") or {}).get("labels") or {}).get("app.kubernetes.io/managed-by") == "infersweep"
    )


def unpinned_images(settings) -> list[str]:
    """The pipeline's images still as the checkout ships them (a tag, not the digest `infersweep images build`
    writes): every step pod of every run would pull an image nobody here built, or none at all (issue 38)."""
    return [
        f"images.{name} is {ref} (params/cluster.yaml), not pinned by a digest: the checkout's placeholder? "
        "Build and push yours with `infersweep images build --registry R` (it writes REF@sha256:... there)"
        for name, ref in (("steps", settings.images.steps), ("aiperf", settings.images.aiperf))
        if "@sha256:" not in ref
    ]


def run(a: argparse.Namespace) -> int:
    from infersweep.argo_kube import KubeArgo
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.install_version import MANAGED_SELECTOR
    from infersweep.template_holds import LIVE_SELECTOR, held_line, split_updates

    settings = load_cluster_settings()
    if a.out and a.dry_run:
        raise RecipeError("install: give --out DIR or --dry-run, not both")
    for line in unpinned_images(settings):
        print(f"install: warning: {line}", file=sys.stderr)
    server = None if a.out or a.dry_run else server_from_args(a)  # bad settings fail here, before any request
    # --dry-run / --out show what the install would create: the namespace it would use (flag, ARGO_NAMESPACE)
    settings = in_namespace(
        settings, server.cfg.namespace if server else a.namespace or os.environ.get("ARGO_NAMESPACE")
    )
    argo, kube = install_set(settings, a.dgd_api)
    if a.out:
        files = write_gitops(Path(a.out), argo, kube, settings.namespace)
        write_admission_policy(Path(a.out), settings)
        print(
            f"wrote {len(files) - 1} objects and {KUSTOMIZATION} to {a.out} ({len(argo)} Argo, {len(kube)} "
            f"RBAC/ConfigMaps; no namespace, no run Workflows)\n"
            f"  apply: kubectl apply -n {settings.namespace} -k {a.out}   (or commit it for Argo CD / Flux)"
        )
        return 0
    if a.dry_run:
        docs = {"argo": argo, "kubectl": kube, "all": argo + kube}[a.only]
        sys.stdout.write(_stream(docs))
        print(f"# {len(docs)} documents, all valid (Argo v4.1.2 + v3.7.18 schemas, Kubernetes checks)", file=sys.stderr)
        return 0
    assert server is not None
    ns = server.cfg.namespace
    through_kube = isinstance(server, KubeArgo)
    # Never change a template a live run reads (infersweep/template_holds.py: templateReferencing Secure
    # errors the run, and its exit handler never tears the DGD down).
    now, deferred = split_updates(argo, server.list_templates(MANAGED_SELECTOR), server.list_workflows(LIVE_SELECTOR))
    for doc in (kube if through_kube else []) + now:
        verb, rv = server.apply(doc)
        print(f"{verb:8} {doc['kind']}/{doc['metadata']['name']} (resourceVersion {rv})")
    for doc, runs in deferred:
        print(f"deferred {held_line(doc['kind'], doc['metadata']['name'], runs)}")
    if not through_kube:
        kinds = ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in kube)
        print(
            f"\nThe Argo Server does not create these; apply them once with kubectl (namespace {ns}):\n  {kinds}\n"
            f"  infersweep install --dry-run --only kubectl | kubectl apply -n {ns} -f -"
        )
    if deferred:
        print(
            f"\n{len(deferred)} object(s) deferred while runs use them; run `infersweep install` again once those "
            "runs end (`infersweep list` shows them)",
            file=sys.stderr,
        )
        return 1
    return 0


HELP = (
    "create or update every WorkflowTemplate, CronWorkflow, RBAC and ConfigMap (Argo Server or kubeconfig), "
    "or write them for GitOps (--out)"
)
DGD_API_HELP = (
    "DGD apiVersion to render and list (v1alpha1: the Dynamo 1.3.1 release, for a 1.3 operator): the nightly runs "
    "deploy it and the reaper lists it"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("install", help=HELP)
    p.add_argument("--dry-run", action="store_true", help="print the YAML set (validated) and touch nothing")
    p.add_argument("--only", choices=["all", "argo", "kubectl"], default="all", help="with --dry-run: which documents")
    add_dgd_api_arg(p, help=DGD_API_HELP)
    p.add_argument(
        "--out", metavar="DIR", help="write one file per object and a kustomization.yaml (GitOps); touch no cluster"
    )
    add_server_flags(p)
    p.set_defaults(fn=run)
