"""volumeClaimGC: what becomes of a run's volumeClaimTemplates PVCs when it completes, and so what a Retry finds.

argo-workflows v4.1.2, read at the tag:
* pkg/apis/workflow/v1alpha1/workflow_types.go GetVolumeClaimGC / VolumeClaimGC.GetStrategy: no strategy is
  OnWorkflowSuccess.
* workflow/controller/operator.go deletePVCs (called when the workflow completes, and when the entry or exit
  template errors): OnWorkflowSuccess deletes only when the phase is Succeeded ("Skip deleting PVCs to reuse
  them for retried failed/error workflows"); OnWorkflowCompletion deletes on every completion; any other
  value is "unknown volume gc strategy" (an error the controller only logs: the PVCs stay).
* workflow/util/util.go createNewRetryWorkflow empties status.persistentVolumeClaims, and operator.go
  createPVCs then creates `<workflow>-<claim>` again: an existing one owned by the Workflow is reused (a kept
  workdir), a deleted one comes back empty.

Locally a claim is a folder (run_dir/volumes/<claim>). A deleted claim's folder is kept for local readers (the
local run reads its results from it after a Succeeded run) with a marker beside it; a Retry in that run folder
then starts from an empty folder, as the controller's re-created PVC does (the old one moved to <claim>.gc-N).
An unknown strategy is refused by name rather than imitating the controller's logged error.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from infersweep.local.argo.errors import WorkflowError

STRATEGIES = ("OnWorkflowSuccess", "OnWorkflowCompletion")


def strategy(spec: dict[str, Any]) -> str:
    return (spec.get("volumeClaimGC") or {}).get("strategy") or "OnWorkflowSuccess"


def check(spec: dict[str, Any]) -> None:
    s = strategy(spec)
    if s not in STRATEGIES:
        raise WorkflowError(
            f"spec.volumeClaimGC.strategy: unknown volume gc strategy: {s} (the controller keeps the "
            f"PVCs and logs an error); use one of {', '.join(STRATEGIES)}"
        )


def deletes(spec: dict[str, Any], phase: str) -> bool:
    """operator.go deletePVCs: whether the completed workflow's PVCs are deleted."""
    return strategy(spec) == "OnWorkflowCompletion" or phase == "Succeeded"


def _marker(claim: Path) -> Path:
    return claim.parent / f".{claim.name}.deleted"


def collect(spec: dict[str, Any], phase: str, claims: list[Path]) -> None:
    """The workflow completed in `phase`: mark its claims deleted where Argo deletes them."""
    if not deletes(spec, phase):
        return
    for c in claims:
        if c.exists():
            _marker(c).touch()


def claim_dir(claim: Path) -> Path:
    """The folder of a claim as createPVCs leaves it: a claim deleted by an earlier completion comes back empty."""
    m = _marker(claim)
    if m.exists():
        n = 1
        while claim.with_name(f"{claim.name}.gc-{n}").exists():
            n += 1
        if claim.exists():
            shutil.move(str(claim), str(claim.with_name(f"{claim.name}.gc-{n}")))
        m.unlink()
    return claim
