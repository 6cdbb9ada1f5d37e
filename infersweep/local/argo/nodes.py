"""The node table, Argo's `status.nodes` (pkg/apis/workflow/v1alpha1/workflow_types.go NodeStatus), and the
operator's bookkeeping over it (workflow/controller/operator.go initializeNode, markNodePhase,
getOutboundNodes; node_counters.go)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FULFILLED = {"Succeeded", "Failed", "Error", "Skipped", "Omitted"}


@dataclass
class Node:
    """One entry of `status.nodes`."""

    name: str
    template: str = ""
    phase: str = "Pending"
    message: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    children: list[Any] = field(default_factory=list)  # in the engine: child node ids, like status.nodes
    started: float = 0.0
    finished: float = 0.0
    log: Path | None = None
    id: str = ""
    display_name: str = ""
    type: str = "Pod"
    boundary_id: str = ""
    outbound: list[str] = field(default_factory=list)
    exit_code: str | None = None
    template_scope: str = ""
    flags: dict[str, bool] = field(default_factory=dict)  # retried / hooked
    waiting_lock: str = ""
    task: str = ""  # the DAG task this node stands for (compat helpers)

    @property
    def seconds(self) -> float:
        return (self.finished or time.time()) - self.started if self.started else 0.0

    @property
    def fulfilled(self) -> bool:
        return self.phase in FULFILLED

    @property
    def failed_or_error(self) -> bool:
        return self.phase in ("Failed", "Error")

    def to_status(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "displayName": self.display_name,
            "type": self.type,
            "templateName": self.template,
            "phase": self.phase,
        }
        if self.template_scope:
            d["templateScope"] = self.template_scope
        if self.boundary_id:
            d["boundaryID"] = self.boundary_id
        if self.message:
            d["message"] = self.message
        if self.children:
            d["children"] = list(self.children)
        if self.outbound:
            d["outboundNodes"] = list(self.outbound)
        if self.started:
            d["startedAt"] = _iso(self.started)
        if self.finished:
            d["finishedAt"] = _iso(self.finished)
        outs: dict[str, Any] = {}
        params = [{"name": k, "value": v} for k, v in self.outputs.items() if not k.startswith("artifact:")]
        if params:
            outs["parameters"] = params
        arts = [{"name": k[9:], "s3": {"key": v}} for k, v in self.outputs.items() if k.startswith("artifact:")]
        if arts:
            outs["artifacts"] = arts
        if self.exit_code is not None:
            outs["exitCode"] = self.exit_code
        if outs:
            d["outputs"] = outs
        if self.flags:
            d["nodeFlag"] = dict(self.flags)
        return d

    @classmethod
    def from_status(cls, d: dict[str, Any]) -> "Node":
        outs = d.get("outputs") or {}
        outputs = {p["name"]: p.get("value", "") for p in outs.get("parameters", [])}
        outputs |= {f"artifact:{a['name']}": a.get("s3", {}).get("key", "") for a in outs.get("artifacts", [])}
        return cls(
            name=d["name"],
            template=d.get("templateName", ""),
            phase=d["phase"],
            message=d.get("message", ""),
            outputs=outputs,
            children=list(d.get("children", [])),
            started=_parse_iso(d.get("startedAt")),
            finished=_parse_iso(d.get("finishedAt")),
            id=d["id"],
            display_name=d.get("displayName", ""),
            type=d["type"],
            boundary_id=d.get("boundaryID", ""),
            outbound=list(d.get("outboundNodes", [])),
            exit_code=outs.get("exitCode"),
            template_scope=d.get("templateScope", ""),
            flags=dict(d.get("nodeFlag") or {}),
        )


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _parse_iso(s: str | None) -> float:
    if not s:
        return 0.0
    import calendar

    return float(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")))


def _fnv32a(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def _node_type(tmpl: dict[str, Any]) -> str:
    return "DAG" if "dag" in tmpl else "Steps" if "steps" in tmpl else "Pod"


@dataclass(frozen=True)
class TemplateCall:
    """One template to run as one node, as operator.go executeTemplate hands it to the kind's executor
    (executeContainer, executeDAG, executeSteps, executeResource): the node's name, the processed template,
    its scope, the boundary node, whether it runs in an exit handler, and the node's flags."""

    name: str
    tmpl: dict[str, Any]
    scope: str
    boundary: str
    on_exit: bool
    flags: dict[str, bool] | None = None


class NodeTable:
    """The `wfOperationCtx` methods over `status.nodes` (operator.go); mixed into LocalArgo."""

    def node_id(self, name: str) -> str:
        # pkg/apis/workflow/v1alpha1/workflow_types.go Workflow.NodeID
        return self.name if name == self.name else f"{self.name}-{_fnv32a(name)}"

    def by_name(self, name: str) -> Node | None:
        return self.nodes.get(self.node_id(name))

    def _init_node(
        self,
        name: str,
        ntype: str,
        tmpl_name: str,
        scope: str,
        boundary: str,
        phase: str,
        message: str = "",
        *,
        flags: dict[str, bool] | None = None,
    ) -> Node:
        # operator.go initializeNode
        # the display name: the name without its boundary node's name and the separating "." / "[n]."
        b = self.nodes.get(boundary) if boundary else None
        display = (
            re.sub(r"^(\[\d+\])?\.", "", name[len(b.name) :] if b and name.startswith(b.name) else name) if b else name
        )
        n = Node(
            name=name,
            template=tmpl_name,
            phase=phase,
            message=message,
            id=self.node_id(name),
            display_name=display,
            type=ntype,
            boundary_id=boundary,
            template_scope=f"namespaced/{scope}" if scope else "local/",
            started=time.time(),
            flags=dict(flags or {}),
        )
        if phase in FULFILLED:
            n.finished = n.started
        self.nodes[n.id] = n
        self.cluster.on_event("start" if phase not in FULFILLED else "end", n)
        return n

    def _init_call_node(self, call: TemplateCall, ntype: str, phase: str) -> Node:
        """The node of `call` (initializeNode), of type `ntype`, in `phase`."""
        return self._init_node(call.name, ntype, call.tmpl["name"], call.scope, call.boundary, phase, flags=call.flags)

    def _mark(self, n: Node, phase: str, message: str | None = None) -> Node:
        # operator.go markNodePhase
        was = n.phase
        n.phase = phase
        if message is not None:
            n.message = message
        if phase in FULFILLED and not n.finished:
            n.finished = time.time()
        if phase in FULFILLED and was not in FULFILLED:
            # handleNodeFulfilled / executeDAGTask: a fulfilled node releases the locks it holds
            key = f"{self._holder()}/{n.id}"
            if key in self._sync_held:
                self.locks.release(key, self._sync_held.pop(key), self.namespace)
            self.cluster.on_event("end", n)
        return n

    def _add_child(self, parent_name: str, child_name: str) -> None:
        p = self.by_name(parent_name)
        cid = self.node_id(child_name)
        if p is not None and cid not in p.children:
            p.children.append(cid)

    def _kids(self, n: Node) -> list[Node]:
        return [self.nodes[c] for c in n.children if c in self.nodes]

    def tree(self, n: Node) -> Node:
        """A copy of `n` whose `children` are nodes, not ids, in the shape a reader expects: a DAG's tasks
        (in start order), a TaskGroup's items, a Retry node's attempts. `status()` keeps Argo's own shape."""
        import dataclasses

        if n.type == "DAG":
            grouped = {
                c
                for g in self.nodes.values()
                if g.type in ("TaskGroup", "Retry") and g.boundary_id == n.id
                for c in g.children
            }
            kids = [k for k in self.nodes.values() if k.boundary_id == n.id and k.id not in grouped]
        elif n.type in ("TaskGroup", "Retry"):
            kids = self._kids(n)
        else:
            kids = []
        return dataclasses.replace(n, children=[self.tree(k) for k in kids])

    def _outbound(self, node_id: str) -> list[str]:
        """operator.go getOutboundNodes."""
        n = self.nodes[node_id]
        if n.type in ("Skipped", "Pod", "Suspend"):
            return [n.id]
        if n.type == "TaskGroup":
            if not n.children:
                return [n.id]
            out: list[str] = []
            for c in n.children:
                out += self._outbound(c)
            return out
        if n.type == "Retry":
            return [n.children[-1]] if n.children else []
        out = []
        for ob in n.outbound:
            out += self._outbound(ob)
        return out

    def _part_of_exit_handler(self, n: Node) -> bool:
        # NodeStatus.IsPartOfExitHandler: the node or a boundary above it is an exit-handler node
        seen = 0
        cur: Node | None = n
        while cur is not None and seen < 1000:
            if cur.flags.get("hooked"):
                return True
            cur = self.nodes.get(cur.boundary_id) if cur.boundary_id else None
            seen += 1
        return False

    # node_counters.go
    def _active_pods(self, boundary: str) -> int:
        return sum(
            1
            for n in self.nodes.values()
            if n.type == "Pod"
            and (not boundary or n.boundary_id == boundary)
            and n.phase in ("Pending", "Running")
            and not n.waiting_lock
            and n.id in self._pods
        )

    def _active_children(self, boundary: str) -> int:
        return sum(
            1
            for n in self.nodes.values()
            if n.boundary_id == boundary and n.type in ("Pod", "Steps", "DAG") and n.phase in ("Pending", "Running")
        )

    def _unsuccessful_children(self, boundary: str) -> int:
        return sum(
            1
            for n in self.nodes.values()
            if n.boundary_id == boundary and n.type in ("Pod", "Steps", "DAG") and n.phase in ("Failed", "Error")
        )

    def status(self) -> dict[str, Any]:
        """`argo get -o json` .status (the fields this executor knows)."""
        with self._lock:
            st: dict[str, Any] = {"phase": self.phase, "nodes": {nid: n.to_status() for nid, n in self.nodes.items()}}
            if self.message:
                st["message"] = self.message
            if self.started_at:
                st["startedAt"] = _iso(self.started_at)
            if self.phase in ("Succeeded", "Failed", "Error"):
                st["finishedAt"] = _iso(max([n.finished for n in self.nodes.values()] + [self.started_at]))
            return st

    def node_by_display(self, display: str) -> Node | None:
        for n in self.nodes.values():
            if n.display_name == display:
                return n
        return None
