"""Step: delete the run's DGD. Idempotent: it runs after the sweep and again in the exit handler."""

from __future__ import annotations

import sys

from steps import transient
from steps.platform import DGDOwnedElsewhere, dgd_name, get_platform
from infersweep.step_declarations import TEARDOWN


def main(argv: list[str] | None = None) -> int:
    a = TEARDOWN.parser().parse_args(argv)
    name = dgd_name(a.name, a.run_id)
    try:
        deleted = get_platform().delete_dgd(name, a.namespace, a.api_version, owner_uid=a.owner_uid)
    except DGDOwnedElsewhere as e:
        print(f"teardown: {e}", file=sys.stderr)
        return 1
    print(f"DGD {a.namespace}/{name}: {'deleted' if deleted else 'already gone'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "teardown"))
