"""Strict schema validation for every YAML document we render: a typo fails here, with its path, instead of
rendering (or deploying) as nothing. Hera's models and the API server would drop an unknown field silently.

- core.py      the public API (validate_document, validate_argo, validate_dgd, validate_yaml_stream), the
               reference schemas (Argo's JSON schema, the DGD and KEDA CRDs) prepared and cached on disk,
               and the documents that passed, remembered.
- errors.py    `Violation` and `SchemaError` (a UserError), one line per violation.
- metadata.py  the API server's name/namespace/label rules the schemas cannot express.
- k8s_defs.py  hand-written strict schemas for the core/RBAC kinds the Argo schema lacks.
"""

from infersweep.schemas.core import (
    ARGO_VERSIONS,
    _schemas_digest,
    reference_dir,
    validate_argo,
    validate_dgd,
    validate_document,
    validate_yaml_stream,
)
from infersweep.schemas.errors import SchemaError, Violation, format_path

__all__ = [
    "ARGO_VERSIONS",
    "SchemaError",
    "Violation",
    "_schemas_digest",
    "format_path",
    "reference_dir",
    "validate_argo",
    "validate_dgd",
    "validate_document",
    "validate_yaml_stream",
]
