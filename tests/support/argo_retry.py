"""Argo's rules for the node tree of a finished Workflow and for the UI's Retry, encoded from the source.

Not a controller: enough of argo-workflows v4.1.2 to answer "after this run, what does Retry re-run?" for
a rendered pipeline, given which pods failed. Every rule is cited:

* Node tree (workflow/controller/dag.go executeDAGTask connectDependencies + operator.go getOutboundNodes):
  a task without dependencies is a child of its DAG's node; a task with dependencies is a child of every
  *outbound* node of each dependency. Outbound of a pod: itself; of a Retry node: its last child; of a
  TaskGroup (withParam): its children's outbound nodes; of a DAG: the outbound nodes of its leaf tasks.
  A template with a retryStrategy makes a Retry node whose child is the pod (NodeFlag.Retried).
* Task runs when its `depends` holds, else it gets an Omitted node (dag.go); a bare task name means
  `name.Succeeded` (common.go/depends: Succeeded, Skipped or Daemoned). A withParam fan-out is a
  TaskGroup, Failed when any child failed.
* DAG phase (dag.go assessDAGPhase): from its leaf (target) tasks only; an Omitted leaf inherits the phase of
  the branch that led to it, Failed/Error preferred.
* Workflow phase and the exit handler (operator.go operate()): the phase of the entry DAG; then the onExit
  node runs unless the shutdown is Terminate; a failed exit handler turns a Succeeded workflow Failed.
* Retry (workflow/util/util.go FormulateRetryWorkflow, restartSuccessful=false): only a Failed/Error
  workflow; every Failed/Error execution node (Pod) none of whose descendants Succeeded
  (isDescendantNodeSucceeded; for a retried pod the check starts at its Retry node) is deleted with all
  its descendants (resetPath -> getChildren), its ancestors are reset to Running, every onExit node is
  deleted; every other node is kept as it was. The controller then re-creates the missing nodes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

DONE_OK = {"Succeeded", "Skipped"}


@dataclass
class Node:
    id: str
    type: str  # DAG, TaskGroup, Retry, Pod, Omitted-as-phase
    phase: str = ""
    template: str = ""  # step template name for pods ("" otherwise)
    children: list[str] = field(default_factory=list)
    outbound: list[str] = field(default_factory=list)
    retried: bool = False  # NodeFlag.Retried: a pod under a Retry node
    task: str = ""
    item: Any = None


def _deps(expr: str) -> set[str]:
    return {
        t.split(".")[0]
        for t in re.findall(r"[A-Za-z0-9-]+(?:\.[A-Za-z]+)?", expr or "")
        if t.split(".")[0] not in ("", "and", "or", "not")
    }


def _eval_depends(expr: str, phases: dict[str, str]) -> bool:
    def sub(m: re.Match) -> str:
        name, _, prop = m.group(0).partition(".")
        ph = phases[name]
        if not prop:
            return str(ph in DONE_OK)
        return str(
            {
                "Succeeded": ph == "Succeeded",
                "Failed": ph == "Failed",
                "Errored": ph == "Error",
                "Omitted": ph == "Omitted",
                "Skipped": ph == "Skipped",
            }[prop]
        )

    py = re.sub(r"[A-Za-z][A-Za-z0-9-]*(?:\.(?:Succeeded|Failed|Errored|Omitted|Skipped))?", sub, expr)
    return bool(eval(py.replace("&&", " and ").replace("||", " or ").replace("!", " not ")))


class Run:
    """Simulate one run of a rendered pipeline to its node tree. `outcome(template, task_path, item)`
    gives a pod's phase (Succeeded/Failed/Error)."""

    def __init__(self, pipeline_spec: dict, step_templates: dict[str, dict], outcome) -> None:
        self.templates = {t["name"]: t for t in pipeline_spec["templates"]}
        self.steps = step_templates  # template name -> template dict (for retryStrategy)
        self.outcome = outcome
        self.nodes: dict[str, Node] = {}
        self.name = "wf"
        root = self._dag(self.name, self.templates[pipeline_spec["entrypoint"]])
        self.phase = {"Succeeded": "Succeeded", "Failed": "Failed", "Error": "Error"}[root.phase]
        exit_node = self._dag(f"{self.name}.onExit", self.templates[pipeline_spec["onExit"]])
        if self.phase == "Succeeded" and exit_node.phase in ("Failed", "Error"):
            self.phase = "Failed"

    def _add(self, n: Node) -> Node:
        self.nodes[n.id] = n
        return n

    def _pod(self, nid: str, template: str, task: str, item: Any) -> Node:
        phase = self.outcome(template, task, item)
        if self.steps.get(template, {}).get("retryStrategy"):
            retry = self._add(Node(nid, "Retry", phase))
            pod = self._add(Node(f"{nid}(0)", "Pod", phase, template, retried=True, task=task, item=item))
            retry.children.append(pod.id)
            retry.outbound = [pod.id]
            return retry
        pod = self._add(Node(nid, "Pod", phase, template, task=task, item=item))
        pod.outbound = [pod.id]
        return pod

    def _dag(self, nid: str, tmpl: dict, inputs: dict | None = None) -> Node:
        dag = self._add(Node(nid, "DAG"))
        tasks = {t["name"]: t for t in tmpl["dag"]["tasks"]}
        phases: dict[str, str] = {}
        made: dict[str, Node] = {}
        order = list(tasks)
        while len(made) < len(tasks):
            for name in order:
                if name in made:
                    continue
                t = tasks[name]
                deps = _deps(t.get("depends", ""))
                if not deps <= set(made):
                    continue
                tid = f"{nid}.{name}"
                if deps and not _eval_depends(t["depends"], phases):
                    node = self._add(Node(tid, "Skipped", "Omitted", task=name))
                    node.outbound = [node.id]
                elif "withParam" in t:
                    node = self._add(Node(tid, "TaskGroup", task=name))
                    for i, item in enumerate(self.items):
                        child = self._pod(f"{tid}({i}:{item['concurrency']})", t["templateRef"]["template"], name, item)
                        node.children.append(child.id)
                        node.outbound += child.outbound
                    kids = [self.nodes[c].phase for c in node.children]
                    node.phase = "Failed" if "Failed" in kids else "Error" if "Error" in kids else "Succeeded"
                elif "template" in t:
                    node = self._dag(tid, self.templates[t["template"]])
                else:
                    node = self._pod(tid, t["templateRef"]["template"], name, None)
                # connectDependencies: child of the DAG, or of every outbound node of every dependency
                if not deps:
                    dag.children.append(node.id)
                for d in sorted(deps):
                    for out in made[d].outbound:
                        self.nodes[out].children.append(node.id)
                made[name], phases[name] = node, node.phase
        dependents = {d for t in tasks.values() for d in _deps(t.get("depends", ""))}
        leaves = [n for n in tasks if n not in dependents]
        dag.outbound = [o for leaf in leaves for o in made[leaf].outbound]
        # assessDAGPhase: leaves only; an omitted leaf inherits its failed branch
        leaf_phases = []
        for leaf in leaves:
            ph = phases[leaf]
            if ph == "Omitted":
                ph = (
                    "Failed"
                    if any(phases[d] in ("Failed", "Error", "Omitted") for d in _deps(tasks[leaf].get("depends", "")))
                    else "Succeeded"
                )
            leaf_phases.append(ph)
        dag.phase = "Failed" if "Failed" in leaf_phases else "Error" if "Error" in leaf_phases else "Succeeded"
        return dag

    items: list[dict] = []

    # -- FormulateRetryWorkflow -------------------------------------------------------------------
    def _descendant_succeeded(self, node: Node, seen: set[str] | None = None) -> bool:
        seen = seen if seen is not None else set()
        for c in node.children:
            if c in seen:
                continue
            seen.add(c)
            child = self.nodes[c]
            if child.phase == "Succeeded" or self._descendant_succeeded(child, seen):
                return True
        return False

    def _all_children(self, nid: str) -> set[str]:
        out, todo = set(), [nid]
        while todo:
            for c in self.nodes[todo.pop()].children:
                if c not in out:
                    out.add(c)
                    todo.append(c)
        return out

    def retry(self) -> tuple[set[str], set[str]]:
        """(deleted node ids, kept pod ids). Raises on a workflow Retry refuses."""
        if self.phase not in ("Failed", "Error"):
            raise RuntimeError(
                f"Cannot retry a workflow in phase {self.phase}"
                " (FormulateRetryWorkflow: only Failed/Error without restartSuccessful)"
            )
        parents = {c: n.id for n in self.nodes.values() for c in n.children}
        deleted: set[str] = set()
        for n in self.nodes.values():
            if n.type != "Pod" or n.phase not in ("Failed", "Error") or n.id.startswith(f"{self.name}.onExit"):
                continue
            check = self.nodes[parents[n.id]] if n.retried else n
            if not self._descendant_succeeded(check):
                # resetPath: the pod and every descendant (getChildren) are deleted; its Retry node and
                # the other ancestors are only reset.
                deleted |= {n.id} | self._all_children(n.id)
        deleted |= {i for i in self.nodes if i.startswith(f"{self.name}.onExit")}
        kept = {i for i, n in self.nodes.items() if n.type == "Pod" and i not in deleted}
        return deleted, kept
