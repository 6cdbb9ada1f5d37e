"""Reading the project's data files (params/): YAML without aliases, a size cap, one-line errors.

Below both the recipe package and the engines package: a recipe, a shared fact (model, GPU type, workload)
and an engine's data file are read and reported the same way, and a shared fact is looked up by one
function (`shared_fact_file`). Every mistake is a `RecipeError` naming the file, the field and the fix.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from infersweep.errors import UserError
from infersweep.model_errors import format_errors

MAX_RECIPE_BYTES = 256 * 1024  # a recipe is a page of YAML; anything larger is a mistake or an attack
# Shared facts are files, not Kubernetes names: dots allowed (qwen3.6-35b-a3b-fp8), slashes not.
SHARED_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")


class RecipeError(UserError, ValueError):
    """A recipe (or a data file it names) that cannot run. The message names the file, the field and the fix."""


class Strict(BaseModel):
    # Unknown fields are mistakes (a typo would otherwise silently fall back to a default).
    model_config = ConfigDict(extra="forbid", frozen=True)


def format_pydantic(path: Path | str, err: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Every mistake as `file: field: message` (infersweep/model_errors.py, the one formatter)."""
    return "\n".join(format_errors(str(path), err, model))


_CLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: ~10x faster on the catalog


def _safe_load_no_aliases(text: str) -> Any:
    """YAML without anchors/aliases: a recipe never needs them, and aliases are how a 1 KB file
    ("billion laughs") expands into gigabytes in memory or in an error message. The event scan is cheap
    (no objects are built), so the check costs little next to the load itself."""
    for event in yaml.parse(text, Loader=_CLoader):
        if isinstance(event, yaml.AliasEvent):
            raise yaml.YAMLError(
                f"aliases (*{event.anchor}) are not allowed in a recipe; write the value out "
                f"(line {event.start_mark.line + 1})"
            )
    return yaml.load(text, Loader=_CLoader)  # noqa: S506 (a safe loader)


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise RecipeError(f"{path}: no such file")
    if path.stat().st_size > MAX_RECIPE_BYTES:
        raise RecipeError(f"{path}: file is {path.stat().st_size} bytes; a recipe is at most {MAX_RECIPE_BYTES} bytes")
    try:
        data = _safe_load_no_aliases(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise RecipeError(f"{path}: not valid YAML: {' '.join(str(e).split())}") from None
    except UnicodeDecodeError:
        raise RecipeError(f"{path}: not UTF-8 text") from None
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: the top level must be a mapping of fields (got {type(data).__name__})")
    return data


def shared_fact_file(pdir: Path, kind: str, name: Any, recipe_path: Path | str, field: str) -> Path:
    """params/<kind>s/<name>.yaml, the shared fact a recipe's `field` names; a bad or unknown name is a
    RecipeError naming the field, the known names and the file to add."""
    if not isinstance(name, str) or not SHARED_NAME_RE.match(name) or ".." in name:
        raise RecipeError(f"{recipe_path}: {field}: {name!r} is not a valid {kind} name (a file in params/{kind}s/)")
    f = pdir / f"{kind}s" / f"{name}.yaml"
    if not f.is_file():
        known = sorted(p.stem for p in (pdir / f"{kind}s").glob("*.yaml"))
        raise RecipeError(
            f"{recipe_path}: {field}: unknown {kind} {name!r}; use one of {known} or add params/{kind}s/{name}.yaml"
        )
    return f


def load_model_file(f: Path, model_cls: type[BaseModel]) -> Any:
    """A data file validated against its typed model; every mistake as `file: field: message`."""
    try:
        return model_cls.model_validate(read_yaml_mapping(f))
    except ValidationError as e:
        raise RecipeError(format_pydantic(f, e, model_cls)) from None
