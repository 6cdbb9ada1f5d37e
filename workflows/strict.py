"""What a submitted object may say under the controller's `templateReferencing: Strict` (or `Secure`).

Argo v4.1.2 (the same list at v3.7.18), read at the tags:

* workflow/controller/operator.go setExecWorkflow: with `MustUseReference()` (config/config.go: Strict or
  Secure) a Workflow without `spec.workflowTemplateRef` is errored ("workflows must use workflowTemplateRef
  to be executed when the controller is in reference mode"), and one with it is checked by
  workflow/util/merge.go ValidateUserOverrides before its template is merged.
* workflow/util/merge.go ValidateUserOverrides: every WorkflowSpec field that is not in
  `allowedUserOverrideFields` must be its zero value, else the Workflow is errored ("fields [...] are not
  permitted when using workflowTemplateRef with templateReferencing restriction"); in `artifactGC` (itself
  allowed) `serviceAccountName`, `podSpecPatch` and `podMetadata` are refused too
  (artifactGCOverrideViolations). The operator may widen the list (WORKFLOW_USER_OVERRIDE_ALLOWLIST); we
  assume it did not.
* A CronWorkflow's runs are ordinary Workflows made from its `spec.workflowSpec`, so the same rules apply
  to that spec (the CronWorkflow's own `workflowMetadata` is outside the WorkflowSpec and not checked).

So what runs (ServiceAccount, securityContext, volumes, templates, synchronization, podSpecPatch ...)
belongs in the WorkflowTemplate; the submitted object names the template and gives arguments, priority,
deadlines and GC settings only. `violations()` is the check every rendered Workflow/CronWorkflow passes
(tests/workflows/test_strict_reference.py).
"""

from __future__ import annotations

from typing import Any

# merge.go allowedUserOverrideFields, as the JSON names of pkg/apis/workflow/v1alpha1/workflow_types.go
# WorkflowSpec (Go name -> json tag: Arguments arguments, Entrypoint entrypoint, Shutdown shutdown, Suspend
# suspend, ActiveDeadlineSeconds activeDeadlineSeconds, Priority priority, TTLStrategy ttlStrategy, PodGC podGC,
# VolumeClaimGC volumeClaimGC, ArchiveLogs archiveLogs, WorkflowMetadata workflowMetadata, WorkflowTemplateRef
# workflowTemplateRef, Metrics metrics, ArtifactGC artifactGC).
ALLOWED_USER_OVERRIDE_FIELDS = frozenset(
    {
        "arguments",
        "entrypoint",
        "shutdown",
        "suspend",
        "activeDeadlineSeconds",
        "priority",
        "ttlStrategy",
        "podGC",
        "volumeClaimGC",
        "archiveLogs",
        "workflowMetadata",
        "workflowTemplateRef",
        "metrics",
        "artifactGC",
    }
)
# merge.go artifactGCOverrideViolations
REFUSED_ARTIFACT_GC_FIELDS = ("podSpecPatch", "serviceAccountName", "podMetadata")


def spec_violations(spec: dict[str, Any]) -> list[str]:
    """The fields of a submitted WorkflowSpec that Strict/Secure refuses (empty: accepted)."""
    if not spec.get("workflowTemplateRef"):
        return ["workflowTemplateRef (missing: inline templates are refused in reference mode)"]
    # ValueOf(field) DeepEqual zero: absent, null and "" are zero; an empty list or object is a non-nil slice
    # or pointer, so it counts as set (and so does false of a *bool field).
    out = sorted(k for k, v in spec.items() if k not in ALLOWED_USER_OVERRIDE_FIELDS and v is not None and v != "")
    agc = spec.get("artifactGC") or {}
    out += [f"artifactGC.{k}" for k in REFUSED_ARTIFACT_GC_FIELDS if agc.get(k)]
    return out


def violations(doc: dict[str, Any]) -> list[str]:
    """What `templateReferencing: Strict` refuses in a Workflow or in a CronWorkflow's runs."""
    if doc["kind"] == "Workflow":
        return spec_violations(doc["spec"])
    if doc["kind"] == "CronWorkflow":
        return spec_violations(doc["spec"].get("workflowSpec") or {})
    raise ValueError(f"{doc['kind']}: only a Workflow or a CronWorkflow is submitted")
