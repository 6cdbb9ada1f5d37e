"""`argo retry` and `argo resubmit` of a finished workflow, as Argo Workflows v4.1.2 formulates them
(workflow/util/util.go FormulateRetryWorkflow, FormulateResubmitWorkflow).

Retry keeps the workflow and its succeeded nodes: every failed/errored pod node without a succeeded
descendant is deleted together with everything below it (its dependents), the group nodes on its path to
the root (DAG, TaskGroup, failed Retry nodes) are reset to Running, the exit handler's nodes are deleted,
and the workflow starts again (phase Unknown, startedAt now). Resubmit (non-memoized) is a new workflow
with the same spec; memoized resubmit keeps succeeded pods as Skipped "original pod: ID" nodes.
"""

from __future__ import annotations

import time
from typing import Any

_GROUP = ("DAG", "TaskGroup", "StepGroup", "Steps")
_EXEC = ("Container", "Pod", "HTTP", "Plugin")


class RetryError(ValueError):
    pass


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def formulate_retry(wf_name: str, status: dict[str, Any]) -> dict[str, Any]:
    """util.go FormulateRetryWorkflow (restartSuccessful=false, no node selector, no parameter overrides)."""
    phase = status.get("phase")
    if phase == "Succeeded":
        raise RetryError("To retry a succeeded workflow, set the options restartSuccessful and nodeFieldSelector")
    if phase not in ("Failed", "Error"):
        raise RetryError(f"Cannot retry a workflow in phase {phase}")
    nodes: dict[str, dict[str, Any]] = status.get("nodes") or {}
    on_exit = f"{wf_name}.onExit"

    def descendant_succeeded(n: dict[str, Any]) -> bool:  # isDescendantNodeSucceeded
        for c in n.get("children", []):
            cn = nodes[c]
            if cn["phase"] == "Succeeded" or descendant_succeeded(cn):
                return True
        return False

    parent_of: dict[str, str] = {}
    for nid in sorted(nodes):  # newWorkflowsDag: one parent per node, in sorted order
        for c in nodes[nid].get("children", []):
            parent_of[c] = nid

    failed: set[str] = set()
    for nid, n in nodes.items():
        if n["phase"] in ("Failed", "Error") and n["type"] in _EXEC:
            subject = n
            if (n.get("nodeFlag") or {}).get("retried") and nid in parent_of:
                subject = nodes[parent_of[nid]]  # FindRetryNodeByChild
            if not descendant_succeeded(subject):
                failed.add(nid)

    # dagSortedNodes: BFS from the root
    order, queue, seen = [], [wf_name] if wf_name in nodes else [], {wf_name}
    while queue:
        cur = queue.pop(0)
        order.append(cur)
        for c in nodes[cur].get("children", []):
            if c not in seen:
                seen.add(c)
                queue.append(c)

    def descendants(nid: str) -> set[str]:  # getChildren
        out, stack = set(), list(nodes[nid].get("children", []))
        while stack:
            c = stack.pop()
            if c not in out:
                out.add(c)
                stack += nodes[c].get("children", [])
        return out

    def reset_until(cur: str | None, boundary: str, reset: set[str]) -> str:
        while cur is not None:
            if cur == boundary:
                reset.add(cur)
                return cur
            cur = parent_of.get(cur)
        raise RetryError("was seeking node but ran out of nodes to explore")

    def reset_boundaries(cur: str | None, reset: set[str]) -> str | None:
        while cur is not None:
            p = parent_of.get(cur)
            if p is not None and nodes[p]["type"] == "Retry":
                reset.add(p)
                cur = p
                p = parent_of.get(cur)
            if p is not None and nodes[p]["type"] in ("StepGroup", "TaskGroup"):
                reset.add(p)
            seeking = nodes[cur].get("boundaryID", "")
            if not seeking:
                return parent_of.get(cur)
            cur = reset_until(cur, seeking, reset)
        return None

    to_reset: set[str] = set()
    to_delete: set[str] = set()
    for nid in [n for n in order if n in failed]:
        if nid in to_delete:
            continue
        to_delete |= descendants(nid) | {nid}
        cur: str | None = parent_of.get(nid)  # resetPath walks up from the failed node
        while cur is not None:
            t = nodes[cur]["type"]
            if t in _GROUP:
                to_reset.add(cur)
                cur = reset_boundaries(cur, to_reset)
                continue
            if t == "Retry" and nodes[cur]["phase"] in ("Failed", "Error"):
                to_reset.add(cur)
            cur = parent_of.get(cur)

    now = time.time()
    new_nodes: dict[str, dict[str, Any]] = {}
    for nid, n in nodes.items():
        if nid in to_delete or n["name"].startswith(on_exit):
            continue
        n = dict(n)
        if nid in to_reset:  # resetNode
            n["phase"] = "Skipped" if n["phase"] == "Skipped" else "Running"
            n.pop("message", None)
            n["startedAt"] = _iso(now)
            n.pop("finishedAt", None)
        n["children"] = [c for c in n.get("children", []) if c not in to_delete]
        n["outboundNodes"] = [c for c in n.get("outboundNodes", []) if c not in to_delete]
        new_nodes[nid] = n
    return {"phase": "", "startedAt": _iso(now), "nodes": new_nodes}


def formulate_resubmit(workflow: dict[str, Any]) -> dict[str, Any]:
    """util.go FormulateResubmitWorkflow (memoized=false): the same spec as a new workflow named
    `<name>-xxxxx` (generateName), labelled with the previous workflow's name; a terminated run's
    activeDeadlineSeconds: 0 is dropped."""
    import copy
    import uuid

    new = {
        "apiVersion": workflow.get("apiVersion", "argoproj.io/v1alpha1"),
        "kind": "Workflow",
        "metadata": {},
        "spec": copy.deepcopy(workflow["spec"]),
    }
    meta = workflow.get("metadata", {})
    gen = meta.get("generateName") or f"{meta['name']}-"
    new["metadata"]["name"] = gen + uuid.uuid4().hex[:5]
    new["metadata"]["labels"] = {
        **{k: v for k, v in (meta.get("labels") or {}).items() if not k.startswith("workflows.argoproj.io/")},
        "workflows.argoproj.io/resubmitted-from-workflow": meta.get("name", ""),
    }
    if meta.get("namespace"):
        new["metadata"]["namespace"] = meta["namespace"]
    if new["spec"].get("activeDeadlineSeconds") == 0:
        del new["spec"]["activeDeadlineSeconds"]
    new["spec"].pop("shutdown", None)
    return new
