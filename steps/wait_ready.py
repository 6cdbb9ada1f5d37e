"""Step: wait until the run's DGD serves the model, failing fast (with the reason) when it never will.

The reason is the last line on stderr, which Argo shows as the step's message; the debug bundle (DGD
status, pods, events, last log lines) goes to --bundle, an optional output artifact of the template.
Once ready, the images the deployment's pods actually run (container image -> imageID with its digest,
from pod status) go to --images for the run context: a tag can move, a digest cannot.
On success, --ready-file records the deployment's time-to-ready (from the DGD's creation to serving):
the results table carries it as a context column (infersweep.results.context).
"""

from __future__ import annotations

from infersweep.platform.operations import WaitReadyRequest, wait_ready
from infersweep.step_declarations import WAIT_READY
from infersweep.step_interface import from_args
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = WAIT_READY.parser().parse_args(argv)
    # not serving (the reason), or the saved DGD belongs to another Workflow: exit 1
    wait_ready(from_args(WaitReadyRequest, a))
    return 0


if __name__ == "__main__":
    main_of(main, WAIT_READY)
