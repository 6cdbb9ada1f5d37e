"""Argo output parameters are files the step writes; these helpers keep them small and always present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_param(path: str | Path | None, value: Any) -> None:
    if not path:
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))


def json_object(text: str) -> dict[str, Any]:
    """argparse type for a JSON-object argument (SLOs, tolerances): bad input is one clear usage error."""
    import argparse

    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    return value
