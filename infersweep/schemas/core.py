"""Strict schema validation for every YAML document we render.

Why: Hera's generated models silently drop unknown fields, and the Kubernetes API server silently
prunes unknown fields of custom resources. A typo therefore renders (or deploys) as *nothing*
instead of failing. We validate each rendered document against the upstream schema of its kind
with unknown properties forbidden, so the typo fails here, with its path.

Sources (read-only, see ``reference_dir()``):
  * Argo: ``argo/schema-<version>.json`` (argo-workflows ``api/jsonschema/schema.json``).
  * DGD:  ``dynamo/crds/nvidia.com_dynamographdeployments.yaml`` (openAPIV3Schema per version).
  * KEDA ScaledObject: ``keda/keda.sh_scaledobjects.yaml`` (the same strict CRD conversion).
  * Core/RBAC objects: the ``io.k8s`` definitions inside the Argo schema where they exist
    (PersistentVolumeClaim, ObjectMeta, ...), small hand-written schemas otherwise.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from infersweep import k8s_types
from infersweep.model_errors import closest
from infersweep.schemas.errors import SchemaError, Violation, _describe_type, _where
from infersweep.schemas.k8s_defs import _EXTRA_DEFINITIONS
from infersweep.schemas.metadata import _metadata_violations

if TYPE_CHECKING:
    from jsonschema import Draft7Validator

__all__ = [
    "SchemaError",
    "reference_dir",
    "validate_argo",
    "validate_dgd",
    "validate_document",
    "validate_yaml_stream",
]

ARGO_VERSIONS = ("v4.1.2", "v3.7.18")

ARGO_KINDS = (
    "Workflow",
    "WorkflowTemplate",
    "CronWorkflow",
    "ClusterWorkflowTemplate",
    "WorkflowEventBinding",
)
DGD_VERSIONS = {"nvidia.com/v1alpha1": "v1alpha1", "nvidia.com/v1beta1": "v1beta1"}
# Other custom resources we render: (apiVersion, kind) -> CRD file under the reference dir.
CRD_KINDS = {("keda.sh/v1alpha1", "ScaledObject"): "keda/keda.sh_scaledobjects.yaml"}

# (apiVersion, kind) -> definition name inside the (patched) Argo definitions.
# "infersweep.*" names are the hand-written schemas below; the others ship with the Argo schema.
K8S_KINDS = {
    ("v1", "PersistentVolumeClaim"): "io.k8s.api.core.v1.PersistentVolumeClaim",
    ("v1", "ConfigMap"): "infersweep.ConfigMap",
    ("v1", "Secret"): "infersweep.Secret",
    ("v1", "ServiceAccount"): "infersweep.ServiceAccount",
    ("rbac.authorization.k8s.io/v1", "Role"): "infersweep.Role",
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): "infersweep.ClusterRole",
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): "infersweep.RoleBinding",
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): "infersweep.RoleBinding",
}


# ----------------------------------------------------------------------------------------------
# Locating and loading the reference schemas


def reference_dir() -> Path:
    """The read-only ``shared/reference`` folder.

    ``$INFERSWEEP_REFERENCE`` wins; then the copy shipped in the package (infersweep/reference, so an
    installed infersweep validates anywhere); then ``<ancestor>/shared/reference`` above this file.
    """
    env = os.environ.get("INFERSWEEP_REFERENCE")
    if env:
        path = Path(env)
        if not path.is_dir():
            raise FileNotFoundError(f"INFERSWEEP_REFERENCE={env} is not a directory")
        return path
    bundled = Path(__file__).resolve().parents[1] / "reference"  # infersweep/reference
    if (bundled / "argo").is_dir():
        return bundled
    for ancestor in Path(__file__).resolve().parents:
        candidate = ancestor / "shared" / "reference"
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"no shared/reference folder above {Path(__file__).resolve()}; set INFERSWEEP_REFERENCE")


def _forbid_unknown_properties(node: Any) -> None:
    """In place: every object schema with ``properties`` and no ``additionalProperties`` gets
    ``additionalProperties: false`` (recursively, so inline objects are covered too)."""
    if isinstance(node, dict):
        if "properties" in node and "additionalProperties" not in node:
            node["additionalProperties"] = False
        for value in node.values():
            _forbid_unknown_properties(value)
    elif isinstance(node, list):
        for value in node:
            _forbid_unknown_properties(value)


# ----------------------------------------------------------------------------------------------
# Prepared schemas, cached on disk
#
# Why: preparing the schemas (parsing the 1.6 MB DGD CRD, patching and inlining the Argo definitions)
# was ~0.5 s of every `render`/`validate`/`submit`, more than validating. The prepared schema is a pure
# function of the source file and of this module's code, so it is kept as a pickle named by the sha256
# of both (+ the Python version); any change to either makes a new key. The validation itself is not
# cached: every document is still checked, with the same strictness, by jsonschema.


def cache_dir() -> Path | None:
    """Where prepared schemas are kept: $INFERSWEEP_CACHE_DIR (``off`` disables), else
    $XDG_CACHE_HOME/infersweep/schemas, else ~/.cache/infersweep/schemas."""
    env = os.environ.get("INFERSWEEP_CACHE_DIR")
    if env:
        return None if env.lower() in ("off", "0", "none") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "infersweep" / "schemas"


@functools.lru_cache(maxsize=1)
def _code_digest() -> str:
    # Every file of this package and the Kubernetes grammars its metadata checks use (a prepared schema or a
    # cached "passed" must not outlive a change to any of them).
    files = sorted(Path(__file__).resolve().parent.glob("*.py")) + [Path(k8s_types.__file__)]
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


def _prepared(kind: str, source: Path, build: Callable[[], Any]) -> Any:
    """``build()``, or its result from the on-disk cache keyed by source + code + Python version.
    An unreadable, corrupt or unwritable cache is ignored (the schema is built, as without one)."""
    folder = cache_dir()
    if folder is None:
        return build()
    key = hashlib.sha256()
    for part in (source.read_bytes(), _code_digest().encode(), sys.version.encode()):
        key.update(part)
    path = folder / f"{kind}-{key.hexdigest()[:32]}.pickle"
    try:
        with path.open("rb") as f:
            return pickle.load(f)  # our own file, named by the hash of what it was built from
    except Exception:  # noqa: BLE001 - missing, truncated or from another pickle format: rebuild
        pass
    value = build()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{kind}-")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the whole new one
        for old in folder.glob(f"{kind}-*.pickle"):  # built from an older source or code: never read again
            if old != path:
                old.unlink(missing_ok=True)
    except OSError:
        pass
    return value


@functools.lru_cache(maxsize=None)
def _argo_definitions(ref_dir: str, version: str) -> dict:
    """The Argo schema's definitions, patched (see module docstring and comments)."""
    path = Path(ref_dir) / "argo" / f"schema-{version}.json"
    if not path.is_file():
        available = sorted(p.stem.removeprefix("schema-") for p in path.parent.glob("schema-*.json"))
        raise ValueError(f"no Argo schema for {version!r}; available: {available}")
    return _prepared(f"argo-{version}", path, lambda: _patched_argo_definitions(path))


def _patched_argo_definitions(path: Path) -> dict:
    definitions = json.loads(path.read_text())["definitions"]
    definitions.update(copy.deepcopy(_EXTRA_DEFINITIONS))
    _forbid_unknown_properties(definitions)
    # The schema types IntOrString as string only; the API server (and Argo) accept both.
    definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {
        "anyOf": [{"type": "string"}, {"type": "integer"}]
    }
    # Same for resource quantities: `cpu: 1` or `nvidia.com/gpu: 1` is valid Kubernetes.
    definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {"anyOf": [{"type": "string"}, {"type": "number"}]}
    _inline_refs(definitions)
    return definitions


def _inline_refs(definitions: dict) -> None:
    """In place: replace each ``{"$ref": "#/definitions/X", ...}`` by the definition object X.

    Why: jsonschema's $ref lookups were ~40% of validation time (a 27 KB workflow: ~45 ms ->
    ~25 ms per schema version). The graph becomes cyclic (Template -> DAGTask.inline ->
    Template), which is fine: validation only follows the instance. The siblings dropped with
    each $ref are description/title annotations only. Must run after every other patch.
    """

    def resolve(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                return definitions[node["$ref"].removeprefix("#/definitions/")]
            for key, value in node.items():
                if key == "properties":  # a name -> schema map: never treat a name as a keyword
                    for name, sub in value.items():
                        value[name] = resolve(sub)
                else:
                    node[key] = resolve(value)
        elif isinstance(node, list):
            node[:] = [resolve(item) for item in node]
        return node

    for schema in definitions.values():
        resolve(schema)


@functools.lru_cache(maxsize=None)
def _argo_validator(ref_dir: str, version: str, definition: str) -> Draft7Validator:
    # The file declares draft 2020-12 but only uses keywords whose meaning is identical in
    # draft 7 (type/properties/items/required/additionalProperties/const/enum/format, and $ref
    # whose siblings are only description/title annotations), so Draft 7 validates the same.
    # We validate against the definition of the document's kind, not the top-level
    # oneOf-over-kinds, so errors point at the offending field instead of "not valid under oneOf".
    from jsonschema import Draft7Validator

    definitions = _argo_definitions(ref_dir, version)
    if definition not in definitions:
        raise ValueError(f"Argo schema {version} has no definition {definition}")
    return Draft7Validator(definitions[definition], format_checker=None)


def _crd_to_json_schema(node: dict) -> dict:
    """Convert one structural openAPIV3Schema node to a strict JSON Schema (draft 7).

    * ``x-kubernetes-preserve-unknown-fields: true`` -> extra properties allowed there.
    * ``x-kubernetes-int-or-string: true`` -> integer or string.
    * any other ``type: object`` without ``additionalProperties`` -> unknown properties forbidden:
      the API server prunes them silently. That includes objects with no ``properties`` at all
      (e.g. v1beta1 ``scalingAdapter``): the server prunes *everything* inside them.
    * ``x-kubernetes-validations`` (CEL rules) are ignored: we do not evaluate CEL, and the API
      server rejects CEL violations loudly at apply time anyway.
    * ``null`` is rejected where the schema is not ``nullable``: the API server prunes such nulls
      (another silent drop), and a None rendered from Python almost always means a missing value.
    * descriptions/defaults/other ``x-kubernetes-*`` annotations are dropped (fewer keywords
      to walk per node); ``format`` stays but is not checked (format checker off).
    """
    out: dict = {}
    for key, value in node.items():
        if key == "properties":
            out[key] = {name: _crd_to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "not") or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = _crd_to_json_schema(value)
        elif key in ("anyOf", "allOf", "oneOf"):
            out[key] = [_crd_to_json_schema(sub) for sub in value]
        elif key.startswith("x-kubernetes-") or key in ("description", "default", "example", "nullable"):
            continue
        else:
            out[key] = value
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    is_object = out.get("type") == "object" or "properties" in out
    if is_object and "additionalProperties" not in out and not node.get("x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


@functools.lru_cache(maxsize=None)
def _dgd_validators(ref_dir: str) -> dict[str, Draft7Validator]:
    from jsonschema import Draft7Validator

    path = Path(ref_dir) / "dynamo" / "crds" / "nvidia.com_dynamographdeployments.yaml"
    schemas = _prepared("dgd", path, lambda: _dgd_schemas(path))
    return {version: Draft7Validator(schema, format_checker=None) for version, schema in schemas.items()}


def _dgd_schemas(path: Path) -> dict[str, dict]:
    """The strict JSON schema of each version of the DGD CRD at ``path``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the CRD is 1.6 MB: libyaml is ~20x faster
    crd = yaml.load(path.read_text(), Loader=loader)
    schemas = {}
    for version in crd["spec"]["versions"]:
        schema = _crd_to_json_schema(version["schema"]["openAPIV3Schema"])
        # A CRD declares metadata as a bare `type: object` (the server handles ObjectMeta itself);
        # leave it open here and check it by hand in _metadata_violations.
        schema["properties"]["metadata"] = {"type": "object"}
        schemas[version["name"]] = schema
    return schemas


@functools.lru_cache(maxsize=None)
def _crd_validator(ref_dir: str, rel: str, version: str) -> Draft7Validator:
    import yaml
    from jsonschema import Draft7Validator

    crd = yaml.load((Path(ref_dir) / rel).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schema = next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)
    schema = _crd_to_json_schema(schema)
    schema["properties"]["metadata"] = {"type": "object"}  # checked by _metadata_violations
    schema["properties"].pop("status", None)  # the controller's, never ours to write
    return Draft7Validator(schema, format_checker=None)


def _crd_violations(doc: dict) -> list[Violation]:
    rel = CRD_KINDS[(doc["apiVersion"], doc["kind"])]
    validator = _crd_validator(str(reference_dir()), rel, doc["apiVersion"].split("/", 1)[1])
    return _schema_violations(validator, doc) + _metadata_violations(doc, require_name=True, schema_checked=False)


# ----------------------------------------------------------------------------------------------
# Turning jsonschema errors into violations


def _error_violations(where: str, error) -> list[Violation]:
    path = tuple(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties" and error.validator_value is False:
        known = list(schema.get("properties", {}))
        out = []
        for extra in error.instance:
            if extra in known:
                continue
            close = closest(extra, known)
            hint = f" (did you mean {close!r}?)" if close else ""
            if not known:
                hint = " (this object takes no fields)"
            out.append(Violation(where, path + (extra,), f"unknown field{hint}"))
        return out
    if error.validator == "required":
        # jsonschema yields one error per missing property; its message starts with repr(name).
        missing = next((r for r in error.validator_value if error.message.startswith(repr(r))), "?")
        return [Violation(where, path + (missing,), "required field is missing")]
    if error.validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        return [Violation(where, path, f"expected {expected}, got {_describe_type(error.instance)}")]
    if error.validator == "anyOf" and all(set(sub) == {"type"} for sub in error.validator_value):
        expected = " or ".join(sub["type"] for sub in error.validator_value)
        return [Violation(where, path, f"expected {expected}, got {_describe_type(error.instance)}")]
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    return [Violation(where, path, message)]


def _schema_violations(validator: Draft7Validator, doc: dict) -> list[Violation]:
    where = _where(doc)
    out: list[Violation] = []
    for error in validator.iter_errors(doc):
        out.extend(_error_violations(where, error))
    return out


# ----------------------------------------------------------------------------------------------
# Public API


def _argo_violations(doc: dict, versions: tuple[str, ...]) -> list[Violation]:
    """Schema violations under each Argo version; one line per violation, naming the versions."""
    kind = doc.get("kind")
    if kind not in ARGO_KINDS:
        return [Violation(_where(doc), ("kind",), f"{kind!r} is not an Argo kind {list(ARGO_KINDS)}")]
    failing: dict[Violation, list[str]] = {}
    for version in versions:
        validator = _argo_validator(str(reference_dir()), version, f"io.argoproj.workflow.v1alpha1.{kind}")
        for violation in _schema_violations(validator, doc):
            failing.setdefault(violation, []).append(version)
    return [v._replace(message=f"{v.message} (Argo {', '.join(vs)})") for v, vs in failing.items()]


def validate_argo(doc: dict, argo_version: str = "v4.1.2") -> None:
    """Raise SchemaError unless ``doc`` (an Argo object) matches the schema of ``argo_version``."""
    violations = _argo_violations(doc, (argo_version,)) + _metadata_violations(doc, require_name=False)
    if violations:
        raise SchemaError(violations)


def _dgd_violations(doc: dict) -> list[Violation]:
    version = DGD_VERSIONS.get(doc.get("apiVersion"))
    if version is None or doc.get("kind") != "DynamoGraphDeployment":
        return [Violation(_where(doc), ("apiVersion",),
                          f"expected DynamoGraphDeployment of {sorted(DGD_VERSIONS)}, "
                          f"got {doc.get('apiVersion')!r} {doc.get('kind')!r}")]  # fmt: skip
    validator = _dgd_validators(str(reference_dir()))[version]
    return _schema_violations(validator, doc) + _metadata_violations(doc, require_name=True, schema_checked=False)


def validate_dgd(doc: dict) -> None:
    """Raise SchemaError unless ``doc`` matches the DGD CRD version named by its apiVersion."""
    violations = _dgd_violations(doc)
    if violations:
        raise SchemaError(violations)


def _k8s_violations(doc: dict) -> list[Violation]:
    definition = K8S_KINDS[(doc.get("apiVersion"), doc.get("kind"))]
    # Core definitions are taken from the newest Argo schema (newest Kubernetes API).
    validator = _argo_validator(str(reference_dir()), ARGO_VERSIONS[0], definition)
    return _schema_violations(validator, doc) + _metadata_violations(doc, require_name=True)


def _document_violations(doc: Any, argo_versions: Iterable[str]) -> list[Violation]:
    if not isinstance(doc, dict):
        return [Violation("?/?", (), f"expected a mapping, got {_describe_type(doc)}")]
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return [Violation(_where(doc), (), "apiVersion and kind are required strings")]
    if api_version.startswith("argoproj.io/"):
        return _argo_violations(doc, tuple(argo_versions)) + _metadata_violations(doc, require_name=False)
    if api_version.startswith("nvidia.com/") and kind == "DynamoGraphDeployment":
        return _dgd_violations(doc)
    if (api_version, kind) in K8S_KINDS:
        return _k8s_violations(doc)
    if (api_version, kind) in CRD_KINDS:
        return _crd_violations(doc)
    # Failing loudly is the point: an unchecked kind is exactly where a typo would slip through.
    return [Violation(_where(doc), ("kind",),
                      f"no schema for {api_version} {kind}; add one to infersweep/schemas/")]  # fmt: skip


def validate_document(doc: dict, argo_versions: Iterable[str] = ARGO_VERSIONS) -> None:
    """Validate one document against the schema of its apiVersion/kind.

    argoproj.io -> the Argo schema of every version in ``argo_versions``;
    nvidia.com DynamoGraphDeployment -> the DGD CRD; v1 / rbac kinds -> Kubernetes checks.
    """
    argo_versions = tuple(argo_versions)
    passed = _passed_marker(doc, argo_versions)
    if passed is not None and passed.exists():
        return
    violations = _document_violations(doc, argo_versions)
    if violations:
        raise SchemaError(violations)
    if passed is not None:
        _mark_passed(passed)


# ----------------------------------------------------------------------------------------------
# Documents that passed, remembered on disk
#
# Why: every `render` validates the same step and pipeline templates (and, for a recipe rendered
# before, the same Workflow and DGD); walking them with jsonschema was ~0.3 s of a one-recipe render.
# A document is skipped only if exactly the same document (canonical JSON, by sha256) passed before
# under exactly the same schemas (source files + this module's code + jsonschema's version + the Argo
# versions asked for). Failures are never remembered: a bad document is checked, and reported, every time.


@functools.lru_cache(maxsize=8)
def _schemas_digest(ref_dir: str) -> str:
    from importlib.metadata import version

    key = hashlib.sha256(_code_digest().encode() + version("jsonschema").encode())
    for rel in sorted(_SCHEMA_SOURCES):
        path = Path(ref_dir) / rel
        key.update(rel.encode() + (path.read_bytes() if path.is_file() else b"-"))
    return key.hexdigest()[:24]


_SCHEMA_SOURCES = (
    [f"argo/schema-{v}.json" for v in ARGO_VERSIONS]
    + ["dynamo/crds/nvidia.com_dynamographdeployments.yaml"]
    + sorted(CRD_KINDS.values())
)  # the KEDA CRD too: a ScaledObject that passed must pass again under a changed one


def _passed_marker(doc: Any, argo_versions: tuple[str, ...]) -> Path | None:
    folder = cache_dir()
    if folder is None or not isinstance(doc, dict):
        return None
    try:
        text = json.dumps([doc, argo_versions], sort_keys=True, allow_nan=False)
    except (TypeError, ValueError):  # a value JSON cannot hold exactly (a YAML date, NaN): always validate
        return None
    state = _schemas_digest(str(reference_dir()))
    return folder / f"passed-{state}" / hashlib.sha256(text.encode()).hexdigest()


def _mark_passed(marker: Path) -> None:
    try:
        if not marker.parent.is_dir():
            marker.parent.mkdir(parents=True, exist_ok=True)
            for old in marker.parent.parent.glob("passed-*"):  # markers of older schemas/code never match
                if old != marker.parent:
                    for f in old.iterdir():
                        f.unlink(missing_ok=True)
                    old.rmdir()
        marker.touch()
    except OSError:
        pass  # a read-only or raced cache only costs the next run a validation


def validate_yaml_stream(text: str, argo_versions: Iterable[str] = ARGO_VERSIONS) -> int:
    """Validate every document of a multi-document YAML string; return how many there were.

    All violations of all documents are reported in one SchemaError. Empty documents
    (a stray ``---``) are skipped and not counted.
    """
    import yaml

    argo_versions = tuple(argo_versions)
    count, violations = 0, []
    for doc in yaml.safe_load_all(text):
        if doc is None:
            continue
        count += 1
        violations += _document_violations(doc, argo_versions)
    if violations:
        raise SchemaError(violations)
    return count
