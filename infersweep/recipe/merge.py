"""The two ways recipe data is laid over recipe data, defined once.

- `deep_merge`: a folder's `_defaults.yaml` and a workload preset under a recipe's own fields (mappings merge,
  anything else replaces).
- `patch`: a change to a recipe (an experiment's `set`/factor levels, a `--set`): the same, and `None`
  deletes the key.
"""

from __future__ import annotations

from typing import Any


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def patch(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Deep merge: mappings merge, other values replace, `None` deletes the key."""
    out = dict(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = patch(out[k], v)
        else:
            out[k] = v
    return out
