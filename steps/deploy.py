"""Step: apply the run's DGD (the rendered YAML, renamed for this run); print and output the frontend URL.

`--ensure` is the points' init container (workflows/steps_library.py): create the DGD only when it is
missing, never patch it, then wait until it serves. That is what makes the Argo UI's Retry work: Retry
re-runs failed pods only (argo-workflows v4.1.2 workflow/util/util.go FormulateRetryWorkflow deletes the
failed pod nodes and their descendants and keeps every Succeeded node), so the deploy and wait-ready pods
of the first attempt are not re-run although the exit handler deleted the DGD; each re-run point brings
the deployment back itself, and the re-run teardown and exit handler release it again.

Exit codes: 0 applied; 1 the DGD exists and belongs to another Workflow (never adopted), or it does not
become ready; 2 bad input; 75 transient API error (the template's retryStrategy retries only that).
"""

from __future__ import annotations

from infersweep.platform.operations import DeployRequest, deploy
from infersweep.platform.protocol import NotServing
from infersweep.step_declarations import DEPLOY
from infersweep.step_interface import from_args
from steps.runner import main_of


def main(argv: list[str] | None = None) -> int:
    a = DEPLOY.parser().parse_args(argv)
    deploy(from_args(DeployRequest, a, dgd_text=a.dgd))  # DGDOwnedElsewhere (exit 1): never adopted
    return 0


if __name__ == "__main__":
    main_of(main, DEPLOY, labels={NotServing: "deploy --ensure"})
