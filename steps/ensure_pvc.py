"""Step: make sure the model-cache PVC exists (create it if missing) and is Bound (or binds on first use).

Exit 1 with the PVC, its phase and the cause when it will not bind; exit 75 (retried) on an API hiccup.
"""

from __future__ import annotations

import sys

from infersweep.platform.operations import ensure_pvc
from infersweep.platform.protocol import BadInput, PlatformError
from workflows.step_declarations import ENSURE_PVC
from steps import transient


def main(argv: list[str] | None = None) -> int:
    a = ENSURE_PVC.parser().parse_args(argv)
    try:
        ensure_pvc(name=a.name, namespace=a.namespace, size=a.size, storage_class=a.storage_class,
                   bound_timeout_s=a.bound_timeout_s)
    except BadInput as e:
        print(f"ensure-pvc: {e}", file=sys.stderr)
        return 2
    except PlatformError as e:  # PVCNotBound: the PVC, its phase and the cause
        print(f"ensure-pvc: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "ensure-pvc"))
