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

import sys
from pathlib import Path

import yaml

from steps import transient
from steps.output_params import write_param
from steps.platform import DGDOwnedElsewhere, for_run, get_platform
from infersweep.step_declarations import DEPLOY


def main(argv: list[str] | None = None) -> int:
    a = DEPLOY.parser().parse_args(argv)
    if a.dgd_file and not Path(a.dgd_file).is_file():
        print(f"deploy: --dgd-file {a.dgd_file}: no such file (the run's deploy step saves it there)", file=sys.stderr)
        return 2
    dgd = yaml.safe_load(Path(a.dgd_file).read_text() if a.dgd_file else a.dgd)
    if not isinstance(dgd, dict) or dgd.get("kind") != "DynamoGraphDeployment":
        print("deploy: --dgd is not a DynamoGraphDeployment document", file=sys.stderr)
        return 2
    if a.ensure and not a.model:
        print("deploy: --ensure needs --model (what the deployment must serve)", file=sys.stderr)
        return 2
    if a.dgd_file:  # saved by this run's deploy: already renamed and owned
        owners = [o for o in dgd["metadata"].get("ownerReferences") or [] if o.get("kind") == "Workflow"]
        owner = {"name": owners[0]["name"], "uid": owners[0]["uid"]} if owners else None
    else:
        dgd = for_run(dgd, a.run_id)
        owner = {"name": a.owner_name, "uid": a.owner_uid} if a.owner_uid else None
    name, version = dgd["metadata"]["name"], dgd["apiVersion"].split("/", 1)[1]
    platform = get_platform()
    try:
        url = platform.apply_dgd(dgd, a.namespace, owner, patch_own=not a.ensure)
    except DGDOwnedElsewhere as e:
        print(f"deploy: {e}", file=sys.stderr)
        return 1
    write_param(a.url_param, url)
    if a.save:
        Path(a.save).parent.mkdir(parents=True, exist_ok=True)
        Path(a.save).write_text(yaml.safe_dump(dgd, sort_keys=False))
    print(f"applied {dgd['apiVersion']} DynamoGraphDeployment {a.namespace}/{name}; frontend {url}")
    if a.ensure:
        try:
            took = platform.wait_ready(name, a.namespace, a.model, a.timeout_s, api_version=version)
        except (TimeoutError, RuntimeError) as e:
            print(f"deploy --ensure: {a.namespace}/{name} is not serving: {e}", file=sys.stderr)
            return 1
        print(f"{a.namespace}/{name} serves {a.model} (checked in {took:.1f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(transient.run(main, "deploy"))
