"""Which installed WorkflowTemplates a live Workflow still reads, so `install` and `experiment submit` never
change one under it.

Why: under the controller's `templateReferencing: Secure`, every reconcile of a Workflow with a
`workflowTemplateRef` re-merges the WorkflowTemplate as it is now and compares it with the spec stored at the
first reconcile; any difference errors the Workflow ("WorkflowSpec may not change during execution when the
controller is set `templateReferencing: Secure`", argo-workflows v4.1.2 (16a52d6) workflow/controller/
operator.go setStoredWfSpec, :4628-4643; setExecWorkflow marks the Workflow Error, :4494-4497). `operate`
then returns before the DAG and the exit handler (:235-238), so a run errored this way never tears its DGD
down. Under every mode a `templateRef` template is read from the cluster when its step first runs and stored
then (workflow/templateresolution/context.go:213 SetStoredTemplate), so a step template changed mid-run
would pair an old pipeline DAG with new steps. Hence: a WorkflowTemplate that a live Workflow references,
directly or through the templates it references, is updated only when its content is unchanged.

A Workflow is live until the controller labels it `workflows.argoproj.io/completed=true` (operator.go
markWorkflowPhase :2776-2830; a Workflow not yet reconciled has no label, which `!=true` also selects).
"""

from __future__ import annotations

from typing import Any, Iterable

from infersweep.install_version import HASH_LABEL, template_hash

LIVE_SELECTOR = "workflows.argoproj.io/completed!=true"
_DONE = ("Succeeded", "Failed", "Error")


def referenced_names(obj: Any) -> set[str]:
    """Names of the WorkflowTemplates `obj` reaches in one hop: `workflowTemplateRef.name` and every
    `templateRef.name` (cluster-scoped references name ClusterWorkflowTemplates, which infersweep does not
    install)."""
    out: set[str] = set()
    if isinstance(obj, dict):
        for key in ("workflowTemplateRef", "templateRef"):
            ref = obj.get(key)
            if isinstance(ref, dict) and ref.get("name") and not ref.get("clusterScope"):
                out.add(ref["name"])
        for v in obj.values():
            out |= referenced_names(v)
    elif isinstance(obj, list):
        for v in obj:
            out |= referenced_names(v)
    return out


def _is_live(wf: dict[str, Any]) -> bool:
    labels = (wf.get("metadata") or {}).get("labels") or {}
    return (
        labels.get("workflows.argoproj.io/completed") != "true" and (wf.get("status") or {}).get("phase") not in _DONE
    )


def held_templates(workflows: Iterable[dict[str, Any]], installed: Iterable[dict[str, Any]]) -> dict[str, list[str]]:
    """template name -> the live Workflows that reference it, directly or through installed templates."""
    by_name = {t["metadata"]["name"]: t for t in installed}
    out: dict[str, list[str]] = {}
    for wf in workflows:
        if not _is_live(wf):
            continue
        todo = list(
            referenced_names(wf.get("spec")) | referenced_names((wf.get("status") or {}).get("storedWorkflowSpec"))
        )
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo += referenced_names((by_name.get(name) or {}).get("spec"))
        for name in sorted(seen):
            out.setdefault(name, []).append(wf["metadata"]["name"])
    return out


def _installed_hash(t: dict[str, Any]) -> str | None:
    return ((t.get("metadata") or {}).get("labels") or {}).get(HASH_LABEL)


def split_updates(
    docs: list[dict[str, Any]], installed: list[dict[str, Any]], workflows: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], list[tuple[dict[str, Any], list[str]]]]:
    """(documents safe to apply now, [(document deferred, the live Workflows that hold it)]).

    A WorkflowTemplate is deferred when a live Workflow holds it and the installed one is not the content
    being applied (by infersweep.io/template-hash; an unlabelled one counts as different). Any object that
    references a deferred template (a CronWorkflow's workflowTemplateRef, a pipeline's templateRef to a held
    step), transitively, is deferred with it: the installed set stays one version, never new callers on old
    callees."""
    held = held_templates(workflows, installed)
    have = {t["metadata"]["name"]: _installed_hash(t) for t in installed}
    deferred: dict[tuple[str, str], list[str]] = {}
    for doc in docs:
        name = doc["metadata"]["name"]
        if doc.get("kind") == "WorkflowTemplate" and name in held and have.get(name) != template_hash(doc):
            deferred[("WorkflowTemplate", name)] = held[name]
    changed = True
    while changed:  # and whatever references a deferred template, transitively
        changed = False
        names = {n: runs for (k, n), runs in deferred.items() if k == "WorkflowTemplate"}
        for doc in docs:
            key = (doc.get("kind", ""), doc["metadata"]["name"])
            blocked = referenced_names(doc.get("spec")) & set(names)
            if key not in deferred and blocked:
                deferred[key] = sorted({w for b in blocked for w in names[b]})
                changed = True
    now = [d for d in docs if (d.get("kind", ""), d["metadata"]["name"]) not in deferred]
    later = [(d, deferred[(d.get("kind", ""), d["metadata"]["name"])]) for d in docs if d not in now]
    return now, later


def held_line(kind: str, name: str, runs: list[str]) -> str:
    shown = ", ".join(runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
    return (
        f"{kind}/{name}: live Workflow(s) {shown} reference it and this checkout renders it differently; "
        "changing it now would error them under templateReferencing: Secure (and hand later steps a newer "
        "template under any mode)"
    )
