"""Argo output parameters are files the step writes (the controller reads them back): keep them small and
always present."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_param(path: str | Path | None, value: Any) -> None:
    """Write one output parameter's file (a string as is, anything else as compact JSON); no path, no file."""
    if not path:
        return
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(value if isinstance(value, str) else json.dumps(value, separators=(",", ":")))
