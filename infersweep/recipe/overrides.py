"""`--set PATH=VALUE`: a change to the recipe (or to one of the few run settings), checked like the recipe.

A PATH is a recipe field in dotted form (`workload.concurrency=[1,8]`, `router=kv`, `topology.workers.tp=2`);
the VALUE is YAML (`2048` is a number, `[1,8]` a list, `{isl: 1024}` a mapping). A mapping merges into the
field (`workload={isl: 1024}` keeps `osl`), anything else replaces it, `null` (or nothing: `kv_offload=`)
removes it. The changed recipe is then resolved and validated as a recipe file is (one line per mistake),
and rendered: the DGD, the sweep's points, the GPU locks and the run's context all follow from it.

Besides recipe fields, `--set` takes the run settings that are not part of the recipe (RUN_PARAMS: where
the model comes from, the cache PVC, S3, Prometheus, the ready timeout), passed to the workflow as they
are. Every other pipeline parameter is derived from the recipe (DERIVED): setting one is refused with what
to set instead, since a `--set gpu-count=1` would have benchmarked 16 GPUs as 1.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field
from types import NoneType, UnionType
from typing import Any

from pydantic import BaseModel

from infersweep.model_errors import closest
from infersweep.params_files import RecipeError, read_yaml_mapping
from infersweep.pipeline_params import LOCK_ADVICE, LOCK_PREFIX, PARAMS, RUN_PARAMS
from infersweep.recipe.merge import patch

# Workflow parameters that are settings of the run, not of the deployment, and those rendered from the recipe
# (with what to set instead): declared with each parameter in infersweep/pipeline_params.py.
DERIVED = {p.name: p.derived for p in PARAMS if p.derived and not p.name.startswith(LOCK_PREFIX)}
DERIVED["name"] = (  # a recipe field, not a parameter
    "it names the recipe's file and its published results; a variant under another name is a new "
    "recipe file (copy the recipe)"
)
# Recipe fields a mapping value cannot name one key of (its items are not fields) and keys that are not
# model fields but the loader takes.
EXTRA_PATHS = {"workload": {"preset"}}


@dataclass
class Sets:
    """Parsed `--set`s: recipe changes (dotted path -> YAML value, in the order given) and run parameters."""

    recipe: dict[str, Any] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.recipe or self.params)


def _unwrap(ann: Any) -> Any:
    """X from X | None, Annotated[X, ...]; the annotation itself otherwise."""
    while True:
        origin = typing.get_origin(ann)
        if origin is typing.Annotated:
            ann = typing.get_args(ann)[0]
        elif origin in (typing.Union, UnionType):
            args = [a for a in typing.get_args(ann) if a is not NoneType]
            if len(args) != 1:
                return ann
            ann = args[0]
        else:
            return ann


def _is_model(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, BaseModel)


def _fields(model: type[BaseModel]) -> list[str]:
    return [n for n, f in model.model_fields.items() if not f.exclude]


def _did_you_mean(word: str, known: list[str]) -> str:
    near = closest(word, known)
    if not near:  # `max_error_rate` for workload.max_error_rate: match the last part of the dotted names
        tails = {k.rsplit(".", 1)[-1]: k for k in known}
        tail = closest(word.replace("-", "_"), tails, cutoff=0.8)
        near = tails[tail] if tail else None
    return f"; did you mean {near}?" if near else ""


def _all_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    out = []
    for name in _fields(model):
        ann = _unwrap(model.model_fields[name].annotation)
        out.append(prefix + name)
        if _is_model(ann):
            out += _all_paths(ann, f"{prefix}{name}.")
    return out


def check_path(path: str, value: Any) -> None:
    """Refuse a path that names no recipe field, and a list of values for a field that takes one value."""
    from infersweep.recipe.models import Recipe

    parts = path.split(".")
    if any(not p for p in parts):
        raise RecipeError(f"--set {path}: an empty part in the dotted path; write it as field.subfield=VALUE")
    model: Any = Recipe
    for i, part in enumerate(parts):
        here = ".".join(parts[:i]) or "the recipe"
        if _is_model(model):
            known = _fields(model)
            if part in EXTRA_PATHS.get(".".join(parts[:i]), ()):
                return
            if part not in known:
                if i == 0:
                    raise RecipeError(
                        f"--set {path}: no such recipe field or run parameter"
                        f"{_did_you_mean(path, _all_paths(Recipe) + list(RUN_PARAMS))} "
                        f"(recipe fields: {', '.join(known)}; run parameters: {', '.join(RUN_PARAMS)})"
                    )
                raise RecipeError(
                    f"--set {path}: {here} has no field {part!r}"
                    f"{_did_you_mean(part, known).replace('mean ', f'mean {here}.')} "
                    f"(its fields: {', '.join(known)})"
                )
            model = _unwrap(model.model_fields[part].annotation)
        elif typing.get_origin(model) is dict:
            model = _unwrap(typing.get_args(model)[1])
        elif typing.get_origin(model) is list:
            raise RecipeError(f"--set {path}: {here} is a list, set as a whole (--set {here}=[a, b])")
        else:
            raise RecipeError(f"--set {path}: {here} is a single value, it has no fields; --set {here}=VALUE")
    if isinstance(value, list) and typing.get_origin(model) is not list and model is not Any:
        raise RecipeError(
            f"--set {path}={value!r}: {path} takes one value; a list of values (a grid of runs) is "
            "not a --set: run once per value, or write an experiment (params/experiments/) with "
            "a factor for it"
        )


def classify(key: str, value: str) -> tuple[str, Any]:
    """('recipe', parsed value) or ('param', the value as given); RecipeError for what cannot be set."""
    if key in RUN_PARAMS:
        return "param", value
    if key in DERIVED:
        raise RecipeError(f"--set {key}: cannot be set: {DERIVED[key]}")
    if key.startswith(LOCK_PREFIX):
        raise RecipeError(f"--set {key}: cannot be set: {LOCK_ADVICE}")
    parsed = parse_value(key, value)
    check_path(key, parsed)
    if key == "model" and isinstance(parsed, str) and "/" in parsed:
        _model_by_hf_id(parsed)
    return "recipe", parsed


def _model_by_hf_id(hf_id: str) -> None:
    """`--set model=Org/Name`: the recipe's model is a catalog name; say which one has that Hugging Face id."""
    from infersweep.paths import params_dir

    names = []
    for f in sorted((params_dir() / "models").glob("*.yaml")):
        names.append(f.stem)
        try:
            doc = read_yaml_mapping(f)
        except RecipeError:
            continue  # the model's own load reports the file's problem
        if isinstance(doc, dict) and str(doc.get("id", "")).lower() == hf_id.lower():
            raise RecipeError(
                f"--set model={hf_id}: model is a catalog model's name, and {hf_id} is the Hugging "
                f"Face id of {f.stem}: --set model={f.stem}"
            )
    raise RecipeError(
        f"--set model={hf_id}: model is a catalog model's name (params/models/<name>.yaml), not a "
        f"Hugging Face id; use one of {names} or add params/models/<name>.yaml for {hf_id}"
    )


def parse_value(key: str, value: str) -> Any:
    import yaml

    from infersweep.params_files import _safe_load_no_aliases

    try:
        return _safe_load_no_aliases(value) if value.strip() else None
    except yaml.YAMLError as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise RecipeError(
            f"--set {key}=...: not a YAML value ({first}); quote a string, write a list as "
            "[1, 8] and a mapping as {isl: 1024}"
        ) from None


def apply(data: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """The recipe's fields with each change applied in order: a mapping merges into the field, None removes
    it, anything else replaces it."""
    out = dict(data)
    for path, value in changes.items():
        parts = path.split(".")
        node: Any = out
        for i, part in enumerate(parts[:-1]):
            node = node.get(part) if isinstance(node, dict) else None
            if node is not None and not isinstance(node, dict):
                raise RecipeError(
                    f"--set {path}: {'.'.join(parts[: i + 1])} is {node!r} in the recipe, not a mapping; set it whole"
                )
        for part in reversed(parts):
            value = {part: value}
        out = patch(out, value)
    return out


def describe(changes: dict[str, Any]) -> str:
    import json

    return ", ".join(f"{k}={json.dumps(v, separators=(',', ':'))}" for k, v in changes.items())
