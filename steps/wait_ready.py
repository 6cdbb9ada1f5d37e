"""Step: wait until the DGD serves the model, failing fast (with the reason) when it never will.

The reason is the last line on stderr, which Argo shows as the step's message; the debug bundle (DGD
status, pods, events, last log lines) goes to --bundle, an optional output artifact of the template.
On success, --ready-file records the deployment's time-to-ready (from the DGD's creation to serving):
the results table carries it as a context column (infersweep.results.context).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from steps.platform import get_platform


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.wait_ready")
    ap.add_argument("--name", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--model", required=True, help="the model name /v1/models must list")
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--api-version", default="v1beta1", choices=["v1beta1", "v1alpha1"])
    ap.add_argument("--bundle", default="", help="where to write the debug bundle when it fails")
    ap.add_argument("--ready-file", default="", help="where to record when the DGD was applied and when it served")
    a = ap.parse_args(argv)
    try:
        took = get_platform().wait_ready(a.name, a.namespace, a.model, a.timeout_s, api_version=a.api_version,
                                         bundle_path=Path(a.bundle) if a.bundle else None)
    except (TimeoutError, RuntimeError) as e:
        print(f"wait-ready: {a.namespace}/{a.name} is not serving: {e}", file=sys.stderr)
        return 1
    print(f"{a.namespace}/{a.name} serves {a.model} after {took:.1f} s")
    if a.ready_file:
        write_ready_file(Path(a.ready_file), a.name, a.namespace, a.api_version, waited_s=took)
    return 0


def write_ready_file(path: Path, name: str, namespace: str, api_version: str, *, waited_s: float) -> None:
    ready_at = time.time()
    try:
        applied_at = get_platform().applied_at(name, namespace, api_version)
    except Exception as e:  # the record enriches a run: never fail a served deployment over it
        print(f"wait-ready: cannot read when {name} was applied: {e}", file=sys.stderr)
        applied_at = None
    record = {"dgd": name, "applied_at": applied_at, "ready_at": ready_at, "waited_s": round(waited_s, 3),
              "time_to_ready_s": round(ready_at - applied_at, 3) if applied_at else None}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
