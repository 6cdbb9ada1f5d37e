"""Step: wait until the run's DGD serves the model, failing fast (with the reason) when it never will.

The reason is the last line on stderr, which Argo shows as the step's message; the debug bundle (DGD
status, pods, events, last log lines) goes to --bundle, an optional output artifact of the template.
Once ready, the images the deployment's pods actually run (container image -> imageID with its digest,
from pod status) go to --images for the run context: a tag can move, a digest cannot.
On success, --ready-file records the deployment's time-to-ready (from the DGD's creation to serving):
the results table carries it as a context column (infersweep.results.context).
"""

from __future__ import annotations

import argparse
import sys

from infersweep.platform.operations import wait_ready
from infersweep.platform.protocol import BadInput, PlatformError
from steps import transient


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.wait_ready")
    ap.add_argument("--name", required=True, help="the DGD's base name (the recipe's)")
    ap.add_argument("--run-id", default="", help="the run ({{workflow.name}}): the DGD is named per run")
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--model", required=True, help="the model name /v1/models must list")
    ap.add_argument("--timeout-s", type=float, default=1800)
    ap.add_argument("--api-version", default="v1beta1", choices=["v1beta1", "v1alpha1"])
    ap.add_argument("--bundle", default="", help="where to write the debug bundle when it fails")
    ap.add_argument("--images", default="", help="where to write the images the pods run (JSON)")
    ap.add_argument("--failure", default="", help="where to write why it is not serving (the verdict quotes it)")
    ap.add_argument("--ensure-from", default="",
                    help="the DGD this run's deploy saved: re-created first when missing (a UI Retry of a failed "
                         "wait-ready re-runs it after the exit handler deleted the DGD)")
    ap.add_argument("--ready-file", default="", help="where to record when the DGD was applied and when it served")
    a = ap.parse_args(argv)
    try:
        wait_ready(name=a.name, run_id=a.run_id, namespace=a.namespace, model=a.model, timeout_s=a.timeout_s,
                   api_version=a.api_version, bundle=a.bundle, images=a.images, failure=a.failure,
                   ensure_from=a.ensure_from, ready_file=a.ready_file)
    except BadInput as e:
        print(f"wait-ready: {e}", file=sys.stderr)
        return 2
    except PlatformError as e:  # not serving (the reason), or the saved DGD belongs to another Workflow
        print(f"wait-ready: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "wait-ready"))
