"""Metadata checks the schemas cannot express (a CRD's metadata is a bare object; Argo's ObjectMeta types
name/labels as plain strings): the API server's name, namespace, label and annotation rules
(k8s.io/apimachinery pkg/api/validation/objectmeta.go ValidateObjectMeta), with the grammars of
infersweep/k8s_types.py."""

from __future__ import annotations

import re

from infersweep import k8s_types
from infersweep.schemas.errors import Violation, _describe_type, _where

RBAC_KINDS = {"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}


_OBJECT_META_FIELDS = {
    "annotations", "creationTimestamp", "deletionGracePeriodSeconds", "deletionTimestamp",
    "finalizers", "generateName", "generation", "labels", "managedFields", "name", "namespace",
    "ownerReferences", "resourceVersion", "selfLink", "uid",
}  # fmt: skip


def _is_path_segment(value: str) -> bool:
    return value not in (".", "..") and not re.search(r"[/%]", value)


def _is_qualified_key(key: str) -> bool:
    """Label/annotation key: optional DNS-subdomain prefix + '/' + name of at most 63 chars."""
    prefix, _, name = key.rpartition("/")
    if prefix and not k8s_types.is_dns_subdomain(prefix):
        return False
    return k8s_types.is_qualified_name(name)


def _metadata_violations(doc: dict, require_name: bool, schema_checked: bool = True) -> list[Violation]:
    """Name/namespace/label rules of the API server. ``schema_checked=False`` (CRDs, whose
    metadata schema is a bare object) also checks field names and value types."""
    where = _where(doc)
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return [Violation(where, ("metadata",), "required field is missing")]
    out: list[Violation] = []

    def bad(path: tuple, message: str) -> None:
        out.append(Violation(where, ("metadata",) + path, message))

    if not schema_checked:
        for key in meta:
            if key not in _OBJECT_META_FIELDS:
                bad((key,), "unknown field")
    name, generate_name = meta.get("name"), meta.get("generateName")
    # RBAC object names only need to be valid path segments; everything else a DNS-1123 subdomain.
    if doc.get("kind") in RBAC_KINDS:
        name_ok, rule = _is_path_segment, "a path segment (no '/', '%', '.' or '..')"
    else:
        name_ok, rule = k8s_types.is_dns_subdomain, "a DNS-1123 subdomain (<=253, lowercase alnum, '-', '.')"
    if name is None and (require_name or generate_name is None):
        bad(("name",), "required field is missing" if require_name else "name or generateName is required")
    if name is not None and not (isinstance(name, str) and name_ok(name)):
        bad(("name",), f"{name!r} is not {rule}")
    if generate_name is not None:
        # The API server masks a trailing '-' before checking generateName as a name.
        masked = (
            generate_name[:-1] + "a"
            if isinstance(generate_name, str) and generate_name.endswith("-")
            else generate_name
        )
        if not (isinstance(masked, str) and name_ok(masked)):
            bad(("generateName",), f"{generate_name!r} is not a valid prefix of {rule}")
    namespace = meta.get("namespace")
    if namespace is not None and not (k8s_types.is_dns_label(namespace)):
        bad(("namespace",), f"{namespace!r} is not a DNS-1123 label")
    for field in ("labels", "annotations"):
        mapping = meta.get(field)
        if mapping is None:
            continue
        if not isinstance(mapping, dict):
            if not schema_checked:
                bad((field,), f"expected object, got {_describe_type(mapping)}")
            continue
        for key, value in mapping.items():
            if not (isinstance(key, str) and _is_qualified_key(key)):
                bad(
                    (field, key),
                    "invalid key (optional DNS prefix + '/' + name of <=63 alnum, '-', '_', '.')",
                )
            if not isinstance(value, str):
                # YAML turns `true`/`1` into bool/int; the API server only accepts strings.
                if not schema_checked:
                    bad((field, key), f"expected string, got {_describe_type(value)}")
            elif field == "labels" and not (k8s_types.is_label_value(value)):
                bad((field, key), f"{value!r} is not a valid label value (<=63 alnum, '-', '_', '.')")
    return out
