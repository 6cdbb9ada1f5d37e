"""Why a local run did not succeed, for an assertion message: the workflow's message, then each failed step
with the end of its log (a mocker-timing failure under load on CI's 2 cores is unreadable without it)."""

from __future__ import annotations

import re
from typing import Any

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
