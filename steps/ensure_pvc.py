"""Step: make sure the model-cache PVC exists (create it if missing) and is Bound (or binds on first use).

Exit 1 with the PVC, its phase and the cause when it will not bind; exit 75 (retried) on an API hiccup.
"""

from __future__ import annotations

import sys

from steps import transient
from steps.platform import PVCNotBound, get_platform
from infersweep.step_declarations import ENSURE_PVC


def main(argv: list[str] | None = None) -> int:
    a = ENSURE_PVC.parser().parse_args(argv)
    try:
        state = get_platform().ensure_pvc(a.name, a.namespace, a.size, a.storage_class, bound_timeout_s=a.bound_timeout_s)
    except PVCNotBound as e:
        print(f"ensure-pvc: {e}", file=sys.stderr)
        return 1
    print(f"pvc {a.namespace}/{a.name}: {state}")
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "ensure-pvc"))
