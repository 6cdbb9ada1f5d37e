"""Step: delete the run's DGD. Idempotent: it runs after the sweep and again in the exit handler."""

from __future__ import annotations

from infersweep.platform.operations import teardown
from infersweep.step_declarations import TEARDOWN
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = TEARDOWN.parser().parse_args(argv)
    # DGDOwnedElsewhere: left alone
    teardown(name=a.name, run_id=a.run_id, namespace=a.namespace, api_version=a.api_version, owner_uid=a.owner_uid)
    return 0


if __name__ == "__main__":
    main_of(main, TEARDOWN)
