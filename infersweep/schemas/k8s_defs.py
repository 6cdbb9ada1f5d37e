"""Hand-written strict schemas for the core/RBAC kinds the Argo schema does not carry (ConfigMap, Secret,
ServiceAccount, Role/RoleBinding, ...). They refer to Argo's io.k8s definitions (ObjectMeta,
ObjectReference, ...), so metadata is checked strictly too; core.py adds them to the Argo definitions."""

from __future__ import annotations

# Hand-written strict schemas for core/RBAC kinds the Argo schema does not carry. They refer to
# Argo's io.k8s definitions (ObjectMeta, ObjectReference, ...) so metadata is checked strictly too.
_META = {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_HEADER = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": _META}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_FILE_NAMES = {"pattern": r"^[-._a-zA-Z0-9]+$", "maxLength": 253}


def _kind(*required: str, **properties: object) -> dict:
    """A kind's object schema: apiVersion, kind and metadata (required) and its own `properties`."""
    return {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", *required],
        "properties": {**_HEADER, **properties},
    }


def _refs(definition: str) -> dict:
    """An array of `definition` (a name under #/definitions/)."""
    return {"type": "array", "items": {"$ref": f"#/definitions/{definition}"}}


_POLICY_RULE = {
    "type": "object",
    "required": ["verbs"],
    "properties": {
        "apiGroups": _STRINGS,
        "resources": _STRINGS,
        "verbs": _STRINGS,
        "resourceNames": _STRINGS,
        "nonResourceURLs": _STRINGS,
    },
}
_EXTRA_DEFINITIONS = {
    # Keys of a ConfigMap's data/binaryData must be valid file names (the API server rejects others).
    "infersweep.ConfigMap": _kind(
        data={**_STRING_MAP, "propertyNames": _FILE_NAMES},
        binaryData={**_STRING_MAP, "propertyNames": _FILE_NAMES},
        immutable={"type": "boolean"},
    ),
    # core/v1 Secret; the install set holds one: the executor's token Secret (workflows/cluster.py
    # executor_token_secret), whose data the token controller fills in
    "infersweep.Secret": _kind(
        type={"type": "string"}, data=_STRING_MAP, stringData=_STRING_MAP, immutable={"type": "boolean"}
    ),
    "infersweep.ServiceAccount": _kind(
        automountServiceAccountToken={"type": "boolean"},
        imagePullSecrets=_refs("io.k8s.api.core.v1.LocalObjectReference"),
        secrets=_refs("io.k8s.api.core.v1.ObjectReference"),
    ),
    "infersweep.Role": _kind(rules={"type": "array", "items": _POLICY_RULE}),
    "infersweep.ClusterRole": _kind(
        rules={"type": "array", "items": _POLICY_RULE},
        aggregationRule={
            "type": "object",
            "properties": {"clusterRoleSelectors": _refs("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")},
        },
    ),
    "infersweep.RoleBinding": _kind(
        "roleRef",
        roleRef={
            "type": "object",
            "required": ["apiGroup", "kind", "name"],
            "properties": {
                "apiGroup": {"type": "string"},
                "kind": {"enum": ["Role", "ClusterRole"]},
                "name": {"type": "string"},
            },
        },
        subjects={
            "type": "array",
            "items": {
                "type": "object",
                "required": ["kind", "name"],
                "properties": {
                    "apiGroup": {"type": "string"},
                    "kind": {"enum": ["ServiceAccount", "User", "Group"]},
                    "name": {"type": "string"},
                    "namespace": {"type": "string"},
                },
            },
        },
    ),
}
