"""Why a local run did not succeed, for an assertion message: the workflow's message, then each failed step
with the end of its log (a mocker-timing failure under load on CI's 2 cores is unreadable without it)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, Callable

LOG_TAIL_LINES = 25


def why_failed(res: Any) -> str:
    lines = [f"phase {res.phase}: {res.message or '(no workflow message)'}"]
    for step in getattr(res, "failed_steps", []):
        lines.append(f"failed step {step}")
        m = re.search(r"\(log: (.+)\)$", step)
        if m:
            try:
                with open(m.group(1), errors="replace") as f:
                    lines += ["    " + t.rstrip() for t in f.readlines()[-LOG_TAIL_LINES:]]
            except OSError as e:
                lines.append(f"    (log unreadable: {e})")
    return "\n".join(lines)


def run_settled(run: Callable[[Path], Any], root: Path, attempts: int = 2) -> Any:
    """A mocker end-to-end run that a 2-core CI machine under load may fail for reasons of timing alone: run
    it again (in a fresh folder) once, with the first failure's diagnosis shown as a warning in the test
    summary, so a rare timing failure is seen without turning the suite red, and a real fault (one that fails
    every time) still fails the test. `run(folder)` returns a LocalRun."""
    for attempt in range(1, attempts + 1):
        res = run(root / f"attempt-{attempt}")
        if res.phase == "Succeeded" or attempt == attempts:
            return res
        warnings.warn(
            f"local run attempt {attempt} of {attempts} did not succeed, running again:\n{why_failed(res)}",
            stacklevel=2,
        )
    raise AssertionError("unreachable")
