"""Step of the `infersweep-reaper` CronWorkflow: delete every infersweep DGD whose run is over
(infersweep/platform/reaper.py says how and why).

Exit 75 (retried) on an API hiccup; the next schedule runs anyway.
"""

from __future__ import annotations

from infersweep.platform.reaper import reap_namespace
from infersweep.step_declarations import REAP
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = REAP.parser().parse_args(argv)
    reap_namespace(a.namespace, a.api_version)
    return 0


if __name__ == "__main__":
    main_of(main, REAP)
