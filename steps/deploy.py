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

import argparse
import sys

from infersweep.platform.operations import deploy
from infersweep.platform.protocol import BadInput, NotServing, PlatformError
from steps import transient


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m steps.deploy")
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--dgd", help="the DynamoGraphDeployment as YAML text (renamed for --run-id)")
    src.add_argument("--dgd-file", help="a DGD as an earlier deploy of this run saved it (--save): used as is")
    ap.add_argument("--save", default="", help="write the DGD as applied (per-run name, owner) to this file")
    ap.add_argument("--namespace", required=True)
    ap.add_argument("--run-id", default="", help="the run ({{workflow.name}}): the DGD is named per run")
    ap.add_argument("--owner-name", default="", help="Workflow that owns the DGD (garbage collection)")
    ap.add_argument("--owner-uid", default="")
    ap.add_argument("--url-param", default="", help="file to write the frontend URL to (Argo output parameter)")
    ap.add_argument("--ensure", action="store_true",
                    help="create only when missing (never patch), then wait until it serves --model")
    ap.add_argument("--model", default="", help="with --ensure: the model /v1/models must list")
    ap.add_argument("--timeout-s", type=float, default=1800, help="with --ensure: readiness timeout")
    a = ap.parse_args(argv)
    try:
        deploy(dgd_text=a.dgd, dgd_file=a.dgd_file, namespace=a.namespace, run_id=a.run_id, owner_name=a.owner_name,
               owner_uid=a.owner_uid, url_param=a.url_param, save=a.save, ensure=a.ensure, model=a.model,
               timeout_s=a.timeout_s)
    except BadInput as e:
        print(f"deploy: {e}", file=sys.stderr)
        return 2
    except NotServing as e:
        print(f"deploy --ensure: {e}", file=sys.stderr)
        return 1
    except PlatformError as e:  # DGDOwnedElsewhere: never adopted
        print(f"deploy: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "deploy"))
