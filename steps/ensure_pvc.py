"""Step: make sure the model-cache PVC exists (create it if missing) and is Bound (or binds on first use).

Exit 1 with the PVC, its phase and the cause when it will not bind; exit 75 (retried) on an API hiccup.
"""

from __future__ import annotations

from infersweep.platform.operations import ensure_pvc
from infersweep.step_declarations import ENSURE_PVC
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = ENSURE_PVC.parser().parse_args(argv)
    # PVCNotBound (exit 1): the PVC, its phase and the cause
    ensure_pvc(**vars(a))  # the declaration's options are ensure_pvc's keywords
    return 0


if __name__ == "__main__":
    main_of(main, ENSURE_PVC)
