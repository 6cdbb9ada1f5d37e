"""The version label every installed Argo object carries, and the check that a cluster runs what this checkout
renders.

Each object of the install set (workflows/install_set.py) is stamped with two labels:

  infersweep.io/version        the package version (pyproject.toml), for people reading `kubectl get -L`
  infersweep.io/template-hash  16 hex digits of the SHA-256 of the object as this checkout renders it

The hash is over the object's canonical JSON (sorted keys) without the things a cluster or an overlay changes:
metadata.namespace, the server's bookkeeping (resourceVersion, uid, generation, creationTimestamp,
managedFields) and the hash label itself. So `submit` and `preflight` compare the installed template's label
with the hash of the template they render now: a WorkflowTemplate left from an older checkout (or edited by
hand in the UI, which keeps the label but a later install fixes) is named in one line, with the fix.
Label values are at most 63 characters of [A-Za-z0-9-_.] (apimachinery validation.IsValidLabelValue).
"""

from __future__ import annotations

import copy
import hashlib
import json
from importlib import metadata
from typing import Any, Iterable

HASH_LABEL = "infersweep.io/template-hash"
VERSION_LABEL = "infersweep.io/version"
MANAGED = {"app.kubernetes.io/managed-by": "infersweep"}
MANAGED_SELECTOR = "app.kubernetes.io/managed-by=infersweep"
_SERVER_FIELDS = ("namespace", "resourceVersion", "uid", "generation", "creationTimestamp", "managedFields", "selfLink")


def package_version() -> str:
    try:
        return metadata.version("infersweep")
    except metadata.PackageNotFoundError:  # a checkout run without `pip install -e .`
        return "0.0.0"


def template_hash(doc: dict[str, Any]) -> str:
    d = copy.deepcopy(doc)
    meta = d.get("metadata") or {}
    for k in _SERVER_FIELDS:
        meta.pop(k, None)
    labels = meta.get("labels") or {}
    labels.pop(HASH_LABEL, None)
    labels.pop(VERSION_LABEL, None)
    d.pop("status", None)
    return hashlib.sha256(json.dumps(d, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def stamp(doc: dict[str, Any]) -> dict[str, Any]:
    """The object with both labels set (a copy); stamping twice gives the same labels."""
    out = copy.deepcopy(doc)
    h = template_hash(out)
    labels = out.setdefault("metadata", {}).setdefault("labels", {})
    labels[VERSION_LABEL] = package_version()
    labels[HASH_LABEL] = h
    return out


def compare_installed(
    expected: Iterable[dict[str, Any]], installed: Iterable[dict[str, Any]], kind: str = "WorkflowTemplate"
) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(names missing, [(name, installed version/hash, this checkout's version/hash)]) for the `kind` objects."""
    have = {o["metadata"]["name"]: o for o in installed}
    missing, stale = [], []
    for doc in expected:
        if doc.get("kind", kind) != kind:
            continue
        name = doc["metadata"]["name"]
        want = f"{package_version()}/{template_hash(doc)}"
        cur = have.get(name)
        if cur is None:
            missing.append(name)
            continue
        labels = cur["metadata"].get("labels") or {}
        if labels.get(HASH_LABEL) != template_hash(doc):
            got = f"{labels.get(VERSION_LABEL, '?')}/{labels[HASH_LABEL]}" if labels.get(HASH_LABEL) else "unlabelled"
            stale.append((name, got, want))
    return missing, stale


FIX = (
    "run `infersweep install` (or sync the `infersweep install --out DIR` files with kubectl apply -k / Argo CD / Flux)"
)


def version_problems(
    expected: Iterable[dict[str, Any]],
    installed: Iterable[dict[str, Any]],
    namespace: str,
    kind: str = "WorkflowTemplate",
) -> list[str]:
    """One line per `expected` object of `kind` that is missing from `installed` or installed at another hash."""
    missing, stale = compare_installed(expected, installed, kind)
    return [f"{kind} {namespace}/{n}: not installed; {FIX}" for n in missing] + [
        f"{kind} {namespace}/{n}: installed at {got}, this checkout renders {want}; {FIX}" for n, got, want in stale
    ]


def version_line(expected: Iterable[dict[str, Any]], installed: Iterable[dict[str, Any]], namespace: str) -> str | None:
    """The whole comparison as one line (what `submit` refuses with), None when the cluster matches."""
    missing, stale = compare_installed(expected, installed)
    parts = []
    if missing:
        parts.append(f"not installed in namespace {namespace}: {', '.join(missing)}")
    if stale:
        parts.append(
            f"installed at another version than this checkout renders ({stale[0][2]}): "
            + ", ".join(f"{n} ({got})" for n, got, _ in stale)
        )
    return f"WorkflowTemplates {'; '.join(parts)}; {FIX}" if parts else None


def check_installed(server, expected: list[dict[str, Any]]) -> None:
    """Refuse (one line) when the cluster's WorkflowTemplates are not the ones this checkout renders: a run on
    templates of another version would carry this checkout's recipe but run other steps. `server`: an
    ArgoServer or KubeArgo (list_templates, cfg.namespace)."""
    from infersweep.params_files import RecipeError

    line = version_line(expected, server.list_templates(MANAGED_SELECTOR), server.cfg.namespace)
    if line:
        raise RecipeError(line)
