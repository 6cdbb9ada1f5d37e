"""Hand-written strict schemas for the core/RBAC kinds the Argo schema does not carry (ConfigMap, Secret,
ServiceAccount, Role/RoleBinding, ...). They refer to Argo's io.k8s definitions (ObjectMeta,
ObjectReference, ...), so metadata is checked strictly too; core.py adds them to the Argo definitions."""

from __future__ import annotations

# Hand-written strict schemas for core/RBAC kinds the Argo schema does not carry. They refer to
# Argo's io.k8s definitions (ObjectMeta, ObjectReference, ...) so metadata is checked strictly too.
_META = {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_HEADER = {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": _META}
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
    "infersweep.ConfigMap": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            **_HEADER,
            # Keys of data/binaryData must be valid file names (the API server rejects others).
            "data": {
                "type": "object",
                "propertyNames": {"pattern": r"^[-._a-zA-Z0-9]+$", "maxLength": 253},
                "additionalProperties": {"type": "string"},
            },
            "binaryData": {
                "type": "object",
                "propertyNames": {"pattern": r"^[-._a-zA-Z0-9]+$", "maxLength": 253},
                "additionalProperties": {"type": "string"},
            },
            "immutable": {"type": "boolean"},
        },
    },
    # core/v1 Secret; the install set holds one: the executor's token Secret (workflows/cluster.py
    # executor_token_secret), whose data the token controller fills in
    "infersweep.Secret": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            **_HEADER,
            "type": {"type": "string"},
            "data": {"type": "object", "additionalProperties": {"type": "string"}},
            "stringData": {"type": "object", "additionalProperties": {"type": "string"}},
            "immutable": {"type": "boolean"},
        },
    },
    "infersweep.ServiceAccount": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            **_HEADER,
            "automountServiceAccountToken": {"type": "boolean"},
            "imagePullSecrets": {
                "type": "array",
                "items": {"$ref": "#/definitions/io.k8s.api.core.v1.LocalObjectReference"},
            },
            "secrets": {
                "type": "array",
                "items": {"$ref": "#/definitions/io.k8s.api.core.v1.ObjectReference"},
            },
        },
    },
    "infersweep.Role": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {**_HEADER, "rules": {"type": "array", "items": _POLICY_RULE}},
    },
    "infersweep.ClusterRole": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata"],
        "properties": {
            **_HEADER,
            "rules": {"type": "array", "items": _POLICY_RULE},
            "aggregationRule": {
                "type": "object",
                "properties": {
                    "clusterRoleSelectors": {
                        "type": "array",
                        "items": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"},
                    }
                },
            },
        },
    },
    "infersweep.RoleBinding": {
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", "roleRef"],
        "properties": {
            **_HEADER,
            "roleRef": {
                "type": "object",
                "required": ["apiGroup", "kind", "name"],
                "properties": {
                    "apiGroup": {"type": "string"},
                    "kind": {"enum": ["Role", "ClusterRole"]},
                    "name": {"type": "string"},
                },
            },
            "subjects": {
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
        },
    },
}
