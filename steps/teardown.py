"""Step: delete the run's DGD. Idempotent: it runs after the sweep and again in the exit handler."""

from __future__ import annotations

import sys

from infersweep.platform.operations import teardown
from infersweep.platform.protocol import BadInput, PlatformError
from workflows.step_declarations import TEARDOWN
from steps import transient


def main(argv: list[str] | None = None) -> int:
    a = TEARDOWN.parser().parse_args(argv)
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
