"""A rendered document's violations and the error that lists them: `where: path: message`, one per line,
sorted, at most MAX_LISTED shown."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, NamedTuple

from infersweep.errors import UserError

MAX_LISTED = 20  # violations shown in a SchemaError message; the rest are counted


class Violation(NamedTuple):
    where: str  # "<kind>/<name>"
    path: tuple  # JSON path elements (str keys, int indexes)
    message: str


class SchemaError(UserError, ValueError):
    """One or more documents do not match their schema; ``violations`` holds all of them."""

    def __init__(self, violations: Iterable[Violation]):
        self.violations = sorted(set(violations), key=lambda v: (v.where, _sort_key(v.path), v.message))
        lines = [f"{v.where}: {format_path(v.path)}: {v.message}" for v in self.violations[:MAX_LISTED]]
        if len(self.violations) > MAX_LISTED:
            lines.append(f"... and {len(self.violations) - MAX_LISTED} more")
        super().__init__("\n".join(lines))


def _sort_key(path: tuple) -> tuple:
    # Sort indexes numerically ([2] before [10]) and never compare int with str.
    return tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in path)


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def format_path(path: Iterable) -> str:
    """``("spec", "templates", 0, "nvidia.com/gpu")`` -> ``spec.templates[0]["nvidia.com/gpu"]``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            text += f".{part}"
        else:
            text += f"[{json.dumps(part)}]"
    return text.lstrip(".") or "(root)"


def _where(doc: Any) -> str:
    if not isinstance(doc, dict):
        return "?/?"
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    name = meta.get("name") or meta.get("generateName") or "?"
    return f"{doc.get('kind') or '?'}/{name}"


def _describe_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer", float: "number"}
    return names.get(type(value), "null" if value is None else type(value).__name__)
