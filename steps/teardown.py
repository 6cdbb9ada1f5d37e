"""Step: delete the run's DGD. Idempotent: it runs after the sweep and again in the exit handler."""

from __future__ import annotations

import argparse
import sys

from infersweep.platform.operations import teardown
from infersweep.platform.protocol import BadInput, PlatformError
from steps import transient


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.teardown")
    ap.add_argument("--name", required=True, help="the DGD's base name (the recipe's)")
    ap.add_argument("--run-id", default="", help="the run ({{workflow.name}}): the DGD is named per run")
    ap.add_argument("--owner-uid", default="", help="the run's Workflow uid: a DGD owned by another is left alone")
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--api-version", default="v1beta1")
    a = ap.parse_args(argv)
    try:
        teardown(name=a.name, run_id=a.run_id, namespace=a.namespace, api_version=a.api_version, owner_uid=a.owner_uid)
    except BadInput as e:
        print(f"teardown: {e}", file=sys.stderr)
        return 2
    except PlatformError as e:  # DGDOwnedElsewhere: left alone
        print(f"teardown: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "teardown"))
