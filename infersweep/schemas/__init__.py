"""Strict schema validation for every YAML document we render (file map: see the split commit)."""

from infersweep.schemas.core import (  # noqa: F401
    ARGO_VERSIONS,
    SchemaError,
    Violation,
    _schemas_digest,
    format_path,
    reference_dir,
    validate_argo,
    validate_dgd,
    validate_document,
    validate_yaml_stream,
)
