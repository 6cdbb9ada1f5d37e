"""One formatter of pydantic validation errors, for every typed data file (recipes, experiments, engines,
GPU types, params/cluster.yaml): one line per mistake, `where: field.path: what is wrong and the fix`, an
unknown field with the closest valid name ("did you mean") and the valid names at that place.

`closest` is the one "did you mean" lookup, also used by the rendered-document schemas (schemas/) and
`--set` keys (recipe/overrides.py).
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ValidationError

from infersweep.errors import UserError


def short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def closest(word: str, known: typing.Iterable[str], cutoff: float = 0.6) -> str | None:
    """The known name nearest to a misspelt one (difflib ratio >= cutoff), else None."""
    near = difflib.get_close_matches(word, list(known), n=1, cutoff=cutoff)
    return near[0] if near else None


class Mistakes(UserError, ValueError):
    """Several mistakes found by one validator: (path below the field, message) each, one line each."""

    def __init__(self, items: list[tuple[str, str]]):
        super().__init__("; ".join(f"{p}: {m}" if p else m for p, m in items))
        self.items = items


# The messages for pydantic's own checks (types of sections, lengths); each names the fix.
TYPE_FIX = {
    "model_type": "must be a mapping of fields",
    "model_attributes_type": "must be a mapping of fields",
    "dict_type": "must be a mapping",
    "list_type": "must be a list",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
}


def fields_at(loc: tuple, model: type[BaseModel]) -> list[str] | None:
    """The field names a model expects at `loc` (for an unknown field's message); None when not a model."""
    tp: Any = model
    for part in loc:
        while typing.get_origin(tp) in (Annotated, typing.Union, types.UnionType):
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = args[0]
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if part not in tp.model_fields:
                return None
            tp = tp.model_fields[part].annotation
        elif typing.get_origin(tp) in (dict, list):
            tp = typing.get_args(tp)[-1]
        else:
            return None
    while typing.get_origin(tp) in (Annotated, typing.Union, types.UnionType):
        tp = [a for a in typing.get_args(tp) if a is not type(None)][0]
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [n for n, f in tp.model_fields.items() if not f.exclude]
    return None


def messages(e: dict, model: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    """One pydantic error as (path, message) lines; a validator's several mistakes as several lines."""
    loc = tuple(p for p in e["loc"] if p != "[key]")
    path = ".".join(str(p) for p in loc)
    cause = (e.get("ctx") or {}).get("error")
    if isinstance(cause, Mistakes):
        return [(".".join(p for p in (path, sub) if p), msg) for sub, msg in cause.items]
    if e["type"] == "extra_forbidden":
        valid = fields_at(loc[:-1], model) if model is not None else None
        if not valid:
            return [(path, "unknown field; remove it or fix its spelling")]
        near = closest(str(loc[-1]), valid)
        msg = (
            f"unknown field; did you mean `{near}`? " if near else "unknown field; "
        ) + f"valid fields here: {', '.join(valid)}"
    elif e["type"] == "missing":
        msg = "required field is missing; add it"
    elif e["type"] == "literal_error":
        msg = f"{e['msg'].replace('Input should be', 'must be one of')} (got {short(e['input'])})"
    elif e["type"] in TYPE_FIX:
        msg = f"{TYPE_FIX[e['type']]} (got {short(e['input'])})"
    elif e["type"] == "too_short":
        msg = f"must not be empty (got {short(e['input'])})"
    else:
        msg = e["msg"].removeprefix("Value error, ")
    return [(path, msg)]


def format_errors(where: str, err: ValidationError, model: type[BaseModel] | None = None) -> list[str]:
    """Every mistake of `err` as `where: path: message`; `model` (the validated class) adds "did you mean"."""
    return [f"{where}: {path or '(top level)'}: {msg}" for e in err.errors() for path, msg in messages(e, model)]
