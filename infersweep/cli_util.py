"""Small helpers shared by the CLI commands."""

from __future__ import annotations

from infersweep.recipe import RecipeError


def parse_sets(values: list[str] | None) -> dict[str, str]:
    """`--set key=value` pairs (workflow parameter overrides)."""
    out = {}
    for v in values or []:
        key, sep, val = v.partition("=")
        if not sep or not key:
            raise RecipeError(f"--set {v!r}: write it as key=value (a workflow parameter name, "
                              "e.g. --set prometheus-url=http://prom:9090)")
        out[key] = val
    return out


def table(head: list[str], rows: list[tuple]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in [head, *rows])
