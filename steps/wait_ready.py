"""Step: wait until the DGD serves the model, failing fast (with the reason) when it never will."""

from __future__ import annotations

import argparse
import sys

from steps.platform import get_platform


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.wait_ready")
    ap.add_argument("--name", required=True)
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--model", required=True, help="the model name /v1/models must list")
    ap.add_argument("--timeout-s", type=float, default=1800)
    a = ap.parse_args(argv)
    try:
        took = get_platform().wait_ready(a.name, a.namespace, a.model, a.timeout_s)
    except (TimeoutError, RuntimeError) as e:
        print(f"wait-ready: {a.namespace}/{a.name} is not serving: {e}", file=sys.stderr)
        return 1
    print(f"{a.namespace}/{a.name} serves {a.model} after {took:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
