"""Step: wait until the DGD serves the model, failing fast (with the reason) when it never will.

The reason is the last line on stderr, which Argo shows as the step's message; the debug bundle (DGD
status, pods, events, last log lines) goes to --bundle, an optional output artifact of the template.
"""

from __future__ import annotations

import argparse
import sys
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
    a = ap.parse_args(argv)
    try:
        took = get_platform().wait_ready(a.name, a.namespace, a.model, a.timeout_s, api_version=a.api_version,
                                         bundle_path=Path(a.bundle) if a.bundle else None)
    except (TimeoutError, RuntimeError) as e:
        print(f"wait-ready: {a.namespace}/{a.name} is not serving: {e}", file=sys.stderr)
        return 1
    print(f"{a.namespace}/{a.name} serves {a.model} after {took:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
