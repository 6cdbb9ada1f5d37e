"""Plain-text tables for terminals and reports (columns padded to their widest cell)."""

from __future__ import annotations


def table(head: list[str], rows: list[tuple]) -> str:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=False)]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=False)).rstrip() for row in [head, *rows]
    )
