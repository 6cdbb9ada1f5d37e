"""Run an Argo Workflow on this machine the way the Argo Workflows v4.1.2 controller runs it.

This is a port of the controller's reconciliation, not a second scheduler: a loop calls `operate` (workflow/
controller/operator.go operate) whenever a pod finishes or a timer is due, and `operate` walks the templates
exactly as the controller does (executeTemplate, executeDAG, executeDAGTask, assessDAGPhase, processNodeRetries,
checkParallelism, exit handler, shutdown, deadlines), over a node table shaped like `status.nodes`. A
container template is a "pod": a host process in its own thread (its image mapped to a local environment,
or, when allowed, its command run as-is on the host), so independent tasks really run side by side.
Each rule carries the file and function of Argo it follows. What this executor does not implement is
rejected by name before anything runs (argo_validate.py).

Where a real controller's behaviour depends on the Kubernetes API (pod phases, kubelet deadlines), the
local equivalent is stated beside it: exit code != 0 -> Failed `main: Error (exit code N)` (operator.go
inferFailedReason); a template deadline kills the process -> Failed `Pod was active on the node longer than
the specified deadline` (kubelet message); an output parameter file missing with no default -> Error (the
wait container fails: inferFailedReason).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from infersweep.local import argo_expr, argo_pvc, argo_resource, argo_text, argo_when
from infersweep.local.argo_sync import LocalLocks, SyncError

VAR_RE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
FULFILLED = {"Succeeded", "Failed", "Error", "Skipped", "Omitted"}
DONE = FULFILLED  # compatibility name
# Template prefixes a leaf template must have resolved (validate.go checkValidWorkflowVariablePrefix).
_CHECKED_PREFIXES = ("inputs.", "outputs.", "item", "tasks.", "steps.", "workflow.")


from infersweep.local.argo_errors import Stopped, WorkflowError  # noqa: E402,F401 (re-exported)


class _ParallelismReached(Exception):
    """operator.go ErrParallelismReached: not now, try again on the next pass."""


class _NodeErr(Exception):
    """A template-level error that marks the node Error (operator.go initializeNodeOrMarkError)."""


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
        d: dict[str, Any] = {"id": self.id, "name": self.name, "displayName": self.display_name, "type": self.type,
                             "templateName": self.template, "phase": self.phase}
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
        return cls(name=d["name"], template=d.get("templateName", ""), phase=d["phase"], message=d.get("message", ""),
                   outputs=outputs, children=list(d.get("children", [])), started=_parse_iso(d.get("startedAt")),
                   finished=_parse_iso(d.get("finishedAt")), id=d["id"], display_name=d.get("displayName", ""),
                   type=d["type"], boundary_id=d.get("boundaryID", ""), outbound=list(d.get("outboundNodes", [])),
                   exit_code=outs.get("exitCode"), template_scope=d.get("templateScope", ""),
                   flags=dict(d.get("nodeFlag") or {}))


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _parse_iso(s: str | None) -> float:
    if not s:
        return 0.0
    import calendar
    return float(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")))


@dataclass
class LocalCluster:
    """How cluster things map onto this machine."""

    pythons: dict[str, str]  # image -> python interpreter (or an environment's bin/python)
    pvc_dirs: Callable[[str], Path]  # PVC claim name -> folder
    run_dir: Path  # this run's folder: volume claim templates, node outputs, logs
    cwd: Path  # working directory of every process
    env: dict[str, str]  # environment for every step (the local stand-in for Secrets)
    upload_artifact: Callable[[str, Path], str] | None = None  # (key, file) -> URL
    on_event: Callable[[str, Node], None] = lambda kind, node: None
    unmapped_on_host: bool = False  # an image with no mapping runs its command as-is on this host
    configmaps: dict[str, dict[str, str]] = field(default_factory=dict)  # "namespace/name" -> data
    state_dir: Path | None = None  # shared by concurrent local runs (semaphores); default ~/.cache/infersweep
    objects: argo_resource.LocalObjects | None = None  # the local Kubernetes API of resource templates


def _fnv32a(s: str) -> int:
    h = 0x811C9DC5
    for b in s.encode():
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def render_item(item: Any) -> str:
    """operator.go processItem: numbers and booleans render as JSON text (`true`, `1000`), strings as
    themselves, maps and lists as compact JSON with sorted keys (Go's json.Marshal)."""
    if isinstance(item, str):
        return item
    return json.dumps(item, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _substitute(value: Any, scope: dict[str, str], strict: bool = True) -> Any:
    if isinstance(value, str):
        def repl(mt: re.Match) -> str:
            key = mt.group(1).strip()
            if key in scope:
                return scope[key]
            if strict:
                raise WorkflowError(f"failed to resolve {{{{{key}}}}}")
            return mt.group(0)
        return VAR_RE.sub(repl, value)
    if isinstance(value, list):
        return [_substitute(v, scope, strict) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, scope, strict) for k, v in value.items()}
    return value


def depends_tasks(expr: str) -> set[str]:
    return set(argo_expr.task_dependencies({"depends": expr}, {})[0])


def eval_depends(expr: str, nodes: dict[str, Node]) -> bool:
    """`depends` over task nodes by name (dag.go evaluateDependsLogic); unknown results are rejected."""
    err = argo_expr.validate_task_results(expr)
    if err:
        raise WorkflowError(err)
    deps, logic = argo_expr.task_dependencies({"depends": expr}, {})
    results = {}
    for d in deps:
        if d not in nodes:
            raise WorkflowError(f"depends names unknown task {d!r}")
        results[d] = _task_results(nodes[d], [])
    try:
        return argo_expr.eval_depends(logic, results)
    except argo_expr.ExprError as e:
        raise WorkflowError(str(e)) from None


def _task_results(n: Node, kids: list[Node]) -> dict[str, bool]:
    # dag.go evaluateDependsLogic / TaskResults
    any_ok, all_failed = False, False
    if n.type == "TaskGroup":
        all_failed = len(kids) > 0
        for c in kids:
            any_ok = any_ok or c.phase == "Succeeded"
            all_failed = all_failed and c.phase == "Failed"
    return {"Succeeded": n.phase == "Succeeded", "Failed": n.phase == "Failed", "Errored": n.phase == "Error",
            "Skipped": n.phase == "Skipped", "Omitted": n.phase == "Omitted", "Daemoned": False,
            "AnySucceeded": any_ok, "AllFailed": all_failed}


def parse_duration(v: Any) -> float:
    """wfv1.ParseStringToDuration: a bare number is seconds, else a Go duration (1s, 500ms, 1m30s)."""
    s = str(v).strip()
    if re.fullmatch(r"\d+(\.\d+)?", s):
        return float(s)
    total, pos = 0.0, 0
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
    for mt in re.finditer(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s):
        if mt.start() != pos:
            break
        total += float(mt.group(1)) * units[mt.group(2)]
        pos = mt.end()
    if pos != len(s) or not s:
        raise WorkflowError(f"invalid duration {s!r}")
    return total


@dataclass
class _Pod:
    node_id: str
    proc: subprocess.Popen | None = None
    thread: threading.Thread | None = None
    killed: str = ""
    result: tuple[str, str, dict[str, str], str | None] | None = None  # phase, message, outputs, exit code
    deadline: float | None = None
    on_exit: bool = False


class LocalArgo:
    """`LocalArgo(workflow, templates, cluster).run()` -> the root node; `.phase`/`.message` are the
    workflow's; `.status()` is `argo get -o json`'s `status`."""

    def __init__(self, workflow: dict[str, Any], templates: list[dict[str, Any]], cluster: LocalCluster,
                 *, status: dict[str, Any] | None = None, validate: bool = True) -> None:
        from infersweep.local import argo_validate
        self.cluster = cluster
        self.workflow = workflow
        self.wts = {t["metadata"]["name"]: t for t in templates if t.get("kind") == "WorkflowTemplate"}
        self.spec = self._merged_spec(workflow)
        meta = workflow.get("metadata", {})
        self.name = meta.get("name") or (meta.get("generateName", "wf-") + uuid.uuid4().hex[:5])
        self.namespace = meta.get("namespace", "default")
        self.uid = str(uuid.uuid4())
        # sync_manager.go prepAcquire: a lock's queue orders by spec.priority, then creationTimestamp (1 s)
        self.priority = int(str(self.spec.get("priority") or 0))
        self.created = int(time.time())
        self.params = self._global_params()
        if validate:
            argo_validate.validate_workflow(self)
        self.nodes: dict[str, Node] = {}
        self.phase = "Pending"
        self.message = ""
        self.started_at = 0.0
        self.shutdown = ""  # "" | "Stop" | "Terminate"
        self.stop_reason: str | None = None
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._pods: dict[str, _Pod] = {}
        self._requeue_at: float | None = None
        self._sync_held: dict[str, dict[str, Any]] = {}
        self.locks = LocalLocks(cluster.state_dir or Path.home() / ".cache" / "infersweep" / "argo-local", cluster.configmaps)
        self._retrying = bool(status)  # argo retry: the same workflow again (its PVCs: argo_pvc.py)
        if status:
            self.nodes = {nid: Node.from_status(d) for nid, d in (status.get("nodes") or {}).items()}
            self.started_at = _parse_iso(status.get("startedAt")) or 0.0
        self.root: Node | None = None
        self.exit_node: Node | None = None
        self._name_renamed = False

    # ---- spec ------------------------------------------------------------------------------------
    def _merged_spec(self, wf: dict[str, Any]) -> dict[str, Any]:
        spec = dict(wf["spec"])
        ref = spec.pop("workflowTemplateRef", None)
        if not ref:
            spec["_scope"] = ""
            return spec
        base = self.wts.get(ref["name"])
        if base is None:
            raise WorkflowError(f'workflowtemplates.argoproj.io "{ref["name"]}" not found (workflowTemplateRef)')
        # operator.go setExecWorkflow / util JoinWorkflowSpec: the Workflow's fields win over the template's,
        # arguments merge parameter by parameter.
        merged = {**base["spec"], **{k: v for k, v in spec.items() if k != "arguments"}}
        given = {p["name"]: p for p in spec.get("arguments", {}).get("parameters", [])}
        params = [given.pop(p["name"], p) for p in base["spec"].get("arguments", {}).get("parameters", [])]
        merged["arguments"] = {"parameters": params + list(given.values())}
        merged["_scope"] = ref["name"]
        return merged

    def _global_params(self) -> dict[str, str]:
        out = {}
        for p in self.spec.get("arguments", {}).get("parameters", []):
            if "value" not in p:
                if p.get("valueFrom"):
                    raise WorkflowError(f"workflow parameter {p['name']!r}: valueFrom is not supported locally")
                raise WorkflowError(f"spec.arguments.{p['name']}.value is required; pass it with --set {p['name']}=...")
            if p.get("enum") and str(p["value"]) not in [str(e) for e in p["enum"]]:
                raise WorkflowError(f"workflow parameter {p['name']!r}={p['value']!r} is not one of {p['enum']}")
            out[p["name"]] = _str(p["value"])
        return out

    def globals(self) -> dict[str, str]:
        s = {f"workflow.parameters.{k}": v for k, v in self.params.items()}
        s["workflow.parameters"] = json.dumps([{"name": k, "value": v} for k, v in self.params.items()])
        s.update({"workflow.name": self.name, "workflow.namespace": self.namespace, "workflow.uid": self.uid,
                  "workflow.serviceAccountName": self.spec.get("serviceAccountName", "default")})
        for k, v in (self.workflow.get("metadata", {}).get("labels") or {}).items():
            s[f"workflow.labels.{k}"] = str(v)
        for k, v in (self.workflow.get("metadata", {}).get("annotations") or {}).items():
            s[f"workflow.annotations.{k}"] = str(v)
        if getattr(self, "_workflow_status", None):
            # operator.go operate: workflow.status / workflow.failures are set once the entry node is done
            s["workflow.status"] = self._workflow_status
            s["workflow.failures"] = argo_text.workflow_failures(self.name, self.nodes.values())
        if self.started_at:
            s["workflow.creationTimestamp"] = _iso(self.started_at)
            s["workflow.duration"] = f"{time.time() - self.started_at:.6f}"
        return s

    def resolve(self, holder: dict[str, Any], scope: str) -> tuple[dict[str, Any], str]:
        """templateresolution ResolveTemplate: `template` within the current scope, `templateRef` in a
        WorkflowTemplate (ClusterWorkflowTemplates are not available locally)."""
        ref = holder.get("templateRef")
        if ref:
            if ref.get("clusterScope"):
                raise WorkflowError("templateRef.clusterScope: ClusterWorkflowTemplates are not supported locally")
            wt = self.wts.get(ref["name"])
            if wt is None:
                raise WorkflowError(f'workflowtemplates.argoproj.io "{ref["name"]}" not found')
            tmpls, tname, scope = wt["spec"].get("templates", []), ref["template"], ref["name"]
        else:
            tmpls = (self.wts[scope]["spec"] if scope else self.spec).get("templates", [])
            tname = holder.get("template")
            if holder.get("inline"):
                raise WorkflowError("inline templates are not supported locally")
        for t in tmpls:
            if t["name"] == tname:
                return t, scope
        where = f"workflow template {scope}" if scope else "the workflow"
        raise WorkflowError(f"template {tname} not found in {where}")

    # ---- nodes -----------------------------------------------------------------------------------
    def node_id(self, name: str) -> str:
        # pkg/apis/workflow/v1alpha1/workflow_types.go Workflow.NodeID
        return self.name if name == self.name else f"{self.name}-{_fnv32a(name)}"

    def by_name(self, name: str) -> Node | None:
        return self.nodes.get(self.node_id(name))

    def _init_node(self, name: str, ntype: str, tmpl_name: str, scope: str, boundary: str, phase: str,
                   message: str = "", display: str | None = None, flags: dict[str, bool] | None = None) -> Node:
        # operator.go initializeNode
        if display is None:
            # initializeNode: the name without its boundary node's name and the separating "." / "[n]."
            b = self.nodes.get(boundary) if boundary else None
            display = re.sub(r"^(\[\d+\])?\.", "", name[len(b.name):] if b and name.startswith(b.name) else name) if b else name
        n = Node(name=name, template=tmpl_name, phase=phase, message=message, id=self.node_id(name),
                 display_name=display, type=ntype, boundary_id=boundary,
                 template_scope=f"namespaced/{scope}" if scope else "local/", started=time.time(),
                 flags=dict(flags or {}))
        if phase in FULFILLED:
            n.finished = n.started
        self.nodes[n.id] = n
        self.cluster.on_event("start" if phase not in FULFILLED else "end", n)
        return n

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

    # ---- the loop --------------------------------------------------------------------------------
    def run(self) -> Node:
        """Run to completion (blocking). Stop/terminate from another thread or a signal handler."""
        try:
            while True:
                self._wake.clear()  # before the pass: a pod finishing during it wakes the next one
                with self._lock:
                    self._requeue_at = None
                    self.operate()
                    if self.phase in ("Succeeded", "Failed", "Error"):
                        break
                    wait = 0.5 if self._requeue_at is None else max(0.0, min(0.5, self._requeue_at - time.time()))
                self._wake.wait(timeout=max(wait, 0.01))
        finally:
            self._kill_all("workflow ended")
            if self.phase in ("Succeeded", "Failed", "Error"):  # operator.go deletePVCs (argo_pvc.py)
                argo_pvc.collect(self.spec, self.phase, [self.cluster.run_dir / "volumes" / c["metadata"]["name"]
                                                         for c in self.spec.get("volumeClaimTemplates", []) or []])
            self.locks.release(self._holder(), self.spec.get("synchronization"), self.namespace)
            for holder, sync in list(self._sync_held.items()):
                self.locks.release(holder, sync, self.namespace)
            self.locks.leave_queues(self._holder())
        root = self.by_name(self.name)
        self.root = self.tree(root) if root else Node(self.name, self.spec["entrypoint"], phase=self.phase, id=self.name)
        exit_node = self.by_name(f"{self.name}.onExit")
        self.exit_node = self.tree(exit_node) if exit_node else None
        return self.root

    def tree(self, n: Node) -> Node:
        """A copy of `n` whose `children` are nodes, not ids, in the shape a reader expects: a DAG's tasks
        (in start order), a TaskGroup's items, a Retry node's attempts. `status()` keeps Argo's own shape."""
        import dataclasses
        if n.type == "DAG":
            grouped = {c for g in self.nodes.values() if g.type in ("TaskGroup", "Retry") and g.boundary_id == n.id
                       for c in g.children}
            kids = [k for k in self.nodes.values() if k.boundary_id == n.id and k.id not in grouped]
        elif n.type in ("TaskGroup", "Retry"):
            kids = self._kids(n)
        else:
            kids = []
        return dataclasses.replace(n, children=[self.tree(k) for k in kids])

    def stop(self, reason: str = "", strategy: str = "Stop") -> None:
        """`argo stop` (strategy Stop: the exit handler still runs) or `argo terminate` (Terminate: it does
        not). workflow_types.go ShutdownStrategy.ShouldExecute. Safe to call from a signal handler."""
        self.stop_reason = reason or f"Stopped with strategy '{strategy}'"
        if self.shutdown != "Terminate":
            self.shutdown = strategy
        self._wake.set()

    def terminate(self, reason: str = "") -> None:
        self.stop(reason, strategy="Terminate")

    def _should_execute(self, on_exit: bool) -> bool:
        if self.shutdown == "Terminate":
            return False
        if self.shutdown == "Stop":
            return on_exit
        return True

    def deadline(self) -> float | None:
        # operator.go getWorkflowDeadline: startedAt (truncated to the second) + activeDeadlineSeconds
        ads = self.spec.get("activeDeadlineSeconds")
        if ads is None or not self.started_at:
            return None
        return float(int(self.started_at)) + float(ads)

    def _deadline_passed(self) -> bool:
        d = self.deadline()
        return d is not None and time.time() > d

    def operate(self) -> None:
        """operator.go operate, one reconciliation pass."""
        if self.phase in ("Pending",) and not self.started_at:
            pass
        # Workflow-level synchronization (operate: TryAcquire before anything runs).
        if self.spec.get("synchronization") and self.phase in ("Pending", ""):
            try:
                ok, msg = self.locks.try_acquire(self._holder(), self.spec["synchronization"], self.namespace,
                                                 self.priority, self.created)
            except SyncError as e:
                self.phase, self.message = "Failed", f"Failed to acquire the synchronization lock. {e}"
                return
            if not ok:
                self.message = msg
                self._requeue(0.2)
                return
        if self.phase == "Pending":
            self.phase, self.message = "Running", ""
            if not self.started_at:
                self.started_at = time.time()
            self._prepare_volumes()
        self._reconcile_pods()
        self._fail_unstarted_after_deadline_or_shutdown()
        if self.deadline():
            self._requeue(self.deadline() - time.time())

        try:
            node = self.execute_template(self.name, {"template": self.spec["entrypoint"]}, self.spec.get("_scope", ""),
                                         self.spec.get("arguments", {}), boundary="", on_exit=False)
        except _ParallelismReached:
            return
        except WorkflowError as e:
            # operate: "error in entry template execution" -> workflow Error
            self.phase, self.message = "Error", f"error in entry template execution: {e}"
            return
        if node is None or not node.fulfilled:
            return
        wf_status = {"Succeeded": "Succeeded", "Skipped": "Succeeded", "Omitted": "Succeeded", "Failed": "Failed",
                     "Error": "Error"}[node.phase]
        self._workflow_status = wf_status
        exit_node = None
        if self.spec.get("onExit"):
            en_name = f"{self.name}.onExit"
            exit_node = self.by_name(en_name)
            if exit_node is not None or self._should_execute(True):
                try:
                    exit_node = self.execute_template(en_name, {"template": self.spec["onExit"]},
                                                      self.spec.get("_scope", ""), self.spec.get("arguments", {}),
                                                      boundary="", on_exit=True, flags={"hooked": True})
                except _ParallelismReached:
                    return
                except WorkflowError as e:
                    self.phase, self.message = "Error", f"error in exit template execution : {e}"
                    return
                if exit_node is None or not exit_node.fulfilled:
                    return
        if node.failed_or_error and self.shutdown:
            message = f"Stopped with strategy '{self.shutdown}'"
        else:
            message = node.message
        if wf_status == "Succeeded":
            if exit_node is not None and exit_node.failed_or_error:
                # "if main workflow succeeded, but the exit node was unsuccessful the workflow is now
                # considered unsuccessful"
                self.phase = "Failed" if exit_node.phase == "Failed" else "Error"
                self.message = exit_node.message
            else:
                self.phase, self.message = "Succeeded", ""
        else:
            self.phase, self.message = wf_status, message

    def _holder(self) -> str:
        # A lock holder is this execution of the workflow: two local runs of one file share a name, never a uid.
        return f"{self.namespace}/{self.name}/{self.uid[:8]}"

    def _requeue(self, seconds: float) -> None:
        at = time.time() + max(0.0, seconds)
        if self._requeue_at is None or at < self._requeue_at:
            self._requeue_at = at

    # ---- execution control -------------------------------------------------------------------------
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

    def _reconcile_pods(self) -> None:
        """operator.go podReconciliation + exec_control.go applyExecutionControl."""
        now = time.time()
        for nid, pod in list(self._pods.items()):
            n = self.nodes.get(nid)
            if n is None:
                continue
            if pod.result is not None:
                if not n.fulfilled:
                    phase, msg, outs, code = pod.result
                    n.outputs.update(outs)
                    n.exit_code = code
                    self._mark(n, phase, msg)
                del self._pods[nid]
                continue
            if n.fulfilled:
                continue
            if self.shutdown and not self._should_execute(pod.on_exit):
                # exec_control.go: "workflow shutdown with strategy:  %s" (two spaces, as in the source)
                self._kill(pod)
                self._mark(n, "Failed", f"workflow shutdown with strategy:  {self.shutdown}")
            elif self._deadline_passed() and not pod.on_exit:
                self._kill(pod)
                self._mark(n, "Failed", "Step exceeded its deadline")
            elif pod.deadline is not None and now > pod.deadline:
                # the pod's own activeDeadlineSeconds: the kubelet kills it and the pod fails with this message
                self._kill(pod)
                self._mark(n, "Failed", "Pod was active on the node longer than the specified deadline")
            elif pod.deadline is not None:
                self._requeue(pod.deadline - now)

    def _fail_unstarted_after_deadline_or_shutdown(self) -> None:
        # operator.go failNodesWithoutCreatedPodsAfterDeadlineOrShutdown
        for n in list(self.nodes.values()):
            if n.fulfilled:
                continue
            exitish = self._part_of_exit_handler(n)
            if self.shutdown and not self._should_execute(exitish):
                if n.phase == "Pending" and n.waiting_lock:
                    self._mark(n, "Failed", f"Stopped with strategy '{self.shutdown}'")
                    continue
                if n.type == "Retry" and all(k.fulfilled for k in self._kids(n)):
                    self._mark(n, "Failed", f"Stopped with strategy '{self.shutdown}'")
                    continue
            if self._deadline_passed() and not exitish and n.phase == "Pending":
                self._mark(n, "Failed", "Step exceeded its deadline")

    def _kill(self, pod: _Pod) -> None:
        pod.killed = "killed"
        p = pod.proc
        if p is not None and p.poll() is None:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

            def hard_kill(proc=p):
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
            threading.Thread(target=hard_kill, daemon=True).start()

    def _kill_all(self, why: str) -> None:
        for pod in list(self._pods.values()):
            self._kill(pod)
        for pod in list(self._pods.values()):
            if pod.thread is not None:
                pod.thread.join(timeout=15)

    # ---- executeTemplate ---------------------------------------------------------------------------
    def execute_template(self, node_name: str, holder: dict[str, Any], scope: str, args: dict[str, Any], *,
                         boundary: str, on_exit: bool, flags: dict[str, bool] | None = None,
                         local: dict[str, str] | None = None) -> Node | None:
        """operator.go executeTemplate."""
        node = self.by_name(node_name)
        if node is not None and node.fulfilled:
            return node
        try:
            tmpl, new_scope = self.resolve(holder, scope)
            ptmpl = self._process_args(tmpl, args, node_name, holder, local or {})
        except WorkflowError as e:
            return self._node_error(node, node_name, holder, boundary, str(e), flags)

        # operator.go checkParallelism
        self._check_parallelism(ptmpl, node, boundary)

        # synchronization (template level)
        sync = ptmpl.get("synchronization")
        # operator.go executeTemplate calls TryAcquire on every pass of an unfulfilled node (a holder gets
        # "already"), so a Retry node holds its lock across attempts and backoffs, released only when the
        # Retry node is fulfilled.
        if sync and (node is None or not node.fulfilled):
            holder_key = f"{self._holder()}/{self.node_id(node_name)}"
            try:
                ok, msg = self.locks.try_acquire(holder_key, sync, self.namespace, self.priority, self.created)
            except SyncError as e:
                return self._node_error(node, node_name, holder, boundary, str(e), flags)
            if not ok:
                if node is None:
                    node = self._init_node(node_name, _node_type(ptmpl), tmpl["name"], new_scope, boundary, "Pending",
                                           msg, flags=flags)
                node.waiting_lock = msg
                self._requeue(0.2)
                return node
            self._sync_held[holder_key] = sync
            if node is not None:
                node.waiting_lock = ""

        retry = ptmpl.get("retryStrategy")
        retry_name = ""
        if retry is not None:
            retry_name = node_name
            rnode = node
            if rnode is None:
                rnode = self._init_node(retry_name, "Retry", tmpl["name"], new_scope, boundary, "Running", flags=flags)
            go_on = self._process_retries(rnode, retry)
            if not go_on:
                return rnode
            if rnode.fulfilled:
                self._release(node_name, sync)
                attempts = [k for k in self._kids(rnode) if not k.flags.get("hooked")]
                if attempts:
                    rnode.outputs = dict(attempts[-1].outputs)
                    rnode.exit_code = attempts[-1].exit_code
                return rnode
            attempts = [k for k in self._kids(rnode) if not k.flags.get("hooked")]
            last = attempts[-1] if attempts else None
            if last is not None and not last.fulfilled:
                node_name, node, retry_num = last.name, last, len(attempts) - 1
            else:
                retry_num = len(attempts)
                node_name = f"{retry_name}({retry_num})"
                self._add_child(retry_name, node_name)
                node = None
            rp = {"retries": str(retry_num), "lastRetry.exitCode": "0", "lastRetry.duration": "0",
                  "lastRetry.status": "", "lastRetry.message": ""}
            if last is not None:
                rp.update({"lastRetry.exitCode": last.exit_code if last.exit_code is not None else "0",
                           "lastRetry.status": last.phase, "lastRetry.duration": str(last.seconds),
                           "lastRetry.message": last.message})
            # SubstituteParams after ProcessArgs: a second pass, so {{retries}} inside an input value resolves too
            ptmpl = {**_substitute({k: v for k, v in ptmpl.items() if k not in ("_scope",)}, rp, strict=False),
                     "_scope": {**ptmpl["_scope"], **rp}, "_local": rp}
            flags = {**(flags or {}), "retried": True}

        try:
            if "container" in ptmpl or "script" in ptmpl:
                node = self._execute_container(node, node_name, ptmpl, new_scope, boundary, on_exit, flags)
            elif "dag" in ptmpl:
                node = self._execute_dag(node, node_name, ptmpl, new_scope, boundary, on_exit, flags)
            elif "steps" in ptmpl:
                node = self._execute_steps(node, node_name, ptmpl, new_scope, boundary, on_exit, flags)
            elif "resource" in ptmpl:  # operator.go executeResource (action create: argo_resource.py)
                node = argo_resource.execute_resource(self, node, node_name, ptmpl, new_scope, boundary, on_exit, flags,
                                                      substitute=_substitute)
            else:
                kind = next((k for k in ("resource", "suspend", "data", "http", "plugin", "containerSet") if k in ptmpl), None)
                raise WorkflowError(f"Template '{ptmpl['name']}' " + (f"is a {kind} template: not supported locally"
                                                                     if kind else "missing specification"))
        except WorkflowError as e:
            node = self._node_error(self.by_name(node_name), node_name, holder, boundary, str(e), flags)

        if retry_name:
            rdone = self.by_name(retry_name)
            if rdone is not None and rdone.fulfilled:
                self._release(retry_name, sync)
        elif node is not None and node.fulfilled:
            self._release(node_name, sync)
        if retry_name:
            rnode = self.by_name(retry_name)
            if rnode is not None and not rnode.fulfilled and node is not None and node.fulfilled:
                return self.execute_template(retry_name, holder, scope, args, boundary=boundary, on_exit=on_exit,
                                             flags=flags, local=local)
            return rnode
        return node

    def _release(self, node_name: str, sync: Any) -> None:
        if not sync:
            return
        key = f"{self._holder()}/{self.node_id(node_name)}"
        if key in self._sync_held:
            self.locks.release(key, self._sync_held.pop(key), self.namespace)

    def _node_error(self, node: Node | None, name: str, holder: dict[str, Any], boundary: str, msg: str,
                    flags: dict[str, bool] | None) -> Node:
        # operator.go initializeNodeOrMarkError: a Skipped-type node in phase Error
        if node is None:
            return self._init_node(name, "Skipped", holder.get("template") or (holder.get("templateRef") or {}).get("template", ""),
                                   "", boundary, "Error", msg, flags=flags)
        return self._mark(node, "Error", msg)

    def _process_args(self, tmpl: dict[str, Any], args: dict[str, Any], node_name: str, holder: dict[str, Any],
                      local: dict[str, str]) -> dict[str, Any]:
        """common.ProcessArgs: input parameters from arguments, else their default; then substitute
        globals + inputs into the template."""
        given = {p["name"]: p for p in (args or {}).get("parameters", []) or []}
        values: dict[str, str] = {}
        for p in (tmpl.get("inputs") or {}).get("parameters", []) or []:
            if p["name"] in given and ("value" in given[p["name"]]):
                values[p["name"]] = _str(given[p["name"]]["value"])
            elif "value" in p:
                values[p["name"]] = _str(p["value"])
            elif "default" in p:
                values[p["name"]] = _str(p["default"])
            else:
                raise WorkflowError(f"inputs.parameters.{p['name']} was not supplied")
            if p.get("enum") and values[p["name"]] not in [str(e) for e in p["enum"]]:
                raise WorkflowError(f"inputs.parameters.{p['name']}: value {values[p['name']]!r} is not in enum {p['enum']}")
        scope = self.globals() | {f"inputs.parameters.{k}": v for k, v in values.items()} | local
        scope["inputs.parameters"] = json.dumps([{"name": k, "value": v} for k, v in values.items()])
        scope["node.name"] = node_name
        if "name" in holder and holder.get("_kind") == "task":
            scope["tasks.name"] = holder["name"]
        raw = ("dag", "steps", "outputs", "container", "script")
        body = {k: v for k, v in tmpl.items() if k not in raw}
        out = _substitute(body, scope, strict=False)
        # A container's own paths are mapped to this machine before parameters are filled in (a parameter
        # value may already be a host path), so it is kept raw with its scope (see _pod_command).
        for k in ("container", "script"):
            if k in tmpl:
                out[k] = tmpl[k]
        out["_scope"] = scope
        # A DAG's tasks are substituted later, with task outputs in scope (dag.go resolveDependencyReferences)
        for k in ("dag", "steps"):
            if k in tmpl:
                out[k] = _substitute(tmpl[k], {kk: vv for kk, vv in scope.items() if kk.startswith(("inputs.", "workflow."))}, strict=False)
        if "outputs" in tmpl:
            out["outputs"] = tmpl["outputs"]
        out["_inputs"] = values
        return out

    def _check_parallelism(self, tmpl: dict[str, Any], node: Node | None, boundary: str) -> None:
        """operator.go checkParallelism (workflow parallelism, template failFast/parallelism, boundary's)."""
        wp = self.spec.get("parallelism")
        if wp is not None and self._active_pods("") >= int(wp):
            raise _ParallelismReached()
        is_group = "dag" in tmpl or "steps" in tmpl
        if node is not None and is_group:
            if tmpl.get("failFast") and self._unsuccessful_children(node.id) > 0:
                if self._active_pods(node.id) == 0:
                    self._mark(node, "Failed", "template has failed or errored children and failFast enabled")
                raise _ParallelismReached()
            if tmpl.get("parallelism") and self._active_pods(node.id) >= int(tmpl["parallelism"]):
                raise _ParallelismReached()
        if boundary and (node is None or node.phase not in ("Pending", "Running")):
            bnode = self.nodes.get(boundary)
            btmpl = getattr(bnode, "_tmpl", None) if bnode else None
            if btmpl is None:
                return
            if btmpl.get("failFast") and self._unsuccessful_children(boundary) > 0:
                if self._active_pods(boundary) == 0:
                    self._mark(bnode, "Failed", "template has failed or errored children and failFast enabled")
                raise _ParallelismReached()
            if btmpl.get("parallelism") and self._active_children(boundary) >= int(btmpl["parallelism"]):
                raise _ParallelismReached()

    # node_counters.go
    def _active_pods(self, boundary: str) -> int:
        return sum(1 for n in self.nodes.values() if n.type == "Pod" and (not boundary or n.boundary_id == boundary)
                   and n.phase in ("Pending", "Running") and not n.waiting_lock and n.id in self._pods)

    def _active_children(self, boundary: str) -> int:
        return sum(1 for n in self.nodes.values() if n.boundary_id == boundary and n.type in ("Pod", "Steps", "DAG")
                   and n.phase in ("Pending", "Running"))

    def _unsuccessful_children(self, boundary: str) -> int:
        return sum(1 for n in self.nodes.values() if n.boundary_id == boundary and n.type in ("Pod", "Steps", "DAG")
                   and n.phase in ("Failed", "Error"))

    # ---- retries -------------------------------------------------------------------------------------
    def _process_retries(self, node: Node, rs: dict[str, Any]) -> bool:
        """operator.go processNodeRetries. Returns False while a backoff is pending."""
        if node.fulfilled:
            return True
        attempts = [k for k in self._kids(node) if not k.flags.get("hooked")]
        if not attempts:
            return True
        last = attempts[-1]
        if not last.fulfilled:
            return True
        if not last.failed_or_error:
            node.outputs = dict(last.outputs)
            node.exit_code = last.exit_code
            self._mark(node, "Succeeded")
            return True
        if self.shutdown or self._deadline_passed():
            msg = (f"Stopped with strategy '{self.shutdown}'" if self.shutdown
                   else f"retry exceeded workflow deadline {_iso(self.deadline() or 0)}")
            self._mark(node, last.phase, msg)
            return True
        limit = rs.get("limit")
        limit_n = int(str(limit)) if limit is not None else None
        backoff = rs.get("backoff")
        if backoff:
            max_deadline = None
            if backoff.get("maxDuration"):
                max_deadline = attempts[0].started + parse_duration(backoff["maxDuration"])
                if time.time() > max_deadline:
                    self._mark(node, last.phase, "Max duration limit exceeded")
                    return True
            if not backoff.get("duration"):
                raise WorkflowError("no base duration specified for retryStrategy")
            wait = parse_duration(backoff["duration"])
            factor = backoff.get("factor")
            if factor is not None and int(str(factor)) > 0:
                wait = wait * int(str(factor)) ** (len(attempts) - 1)
            if backoff.get("cap"):
                wait = min(wait, parse_duration(backoff["cap"]))
            waiting_deadline = last.finished + wait
            if max_deadline is not None and waiting_deadline > max_deadline:
                self._mark(node, last.phase, "Backoff would exceed max duration limit")
                return True
            if time.time() < waiting_deadline and limit_n is not None and len(attempts) <= limit_n:
                self._requeue(waiting_deadline - time.time())
                node.message = f"Backoff for {_humanize(wait)}"
                return False
            node.message = ""
        policy = rs.get("retryPolicy") or ("OnFailure" if not rs.get("expression") else "Always")
        if policy == "Always":
            on_failed, on_error = True, True
        elif policy == "OnError":
            on_failed, on_error = False, True
        elif policy == "OnTransientError":
            # errors.IsTransientErr: Kubernetes/network transient errors. A local process never produces
            # one, so nothing is retried (as on a cluster for a plain non-zero exit).
            on_failed, on_error = False, False
        elif policy == "OnFailure":
            on_failed, on_error = True, False
        else:
            raise WorkflowError(f"{policy} is not a valid RetryPolicy")
        if (last.phase == "Failed" and not on_failed) or (last.phase == "Error" and not on_error):
            self._mark(node, last.phase, last.message)
            return True
        if limit_n is not None and len(attempts) > limit_n:
            self._mark(node, last.phase, "No more retries left")
            return True
        if rs.get("expression"):
            scope = {"retries": str(len(attempts) - 1),
                     "lastRetry": {"exitCode": last.exit_code if last.exit_code is not None else "-1",
                                   "status": last.phase, "duration": str(last.seconds), "message": last.message}}
            try:
                ok = argo_expr.eval_bool(rs["expression"], scope)
            except argo_expr.ExprError as e:
                raise WorkflowError(str(e)) from None
            if not ok:
                self._mark(node, last.phase, "retryStrategy.expression evaluated to false")
                return True
        return True

    # ---- containers ----------------------------------------------------------------------------------
    def _execute_container(self, node: Node | None, name: str, tmpl: dict[str, Any], scope: str, boundary: str,
                           on_exit: bool, flags: dict[str, bool] | None) -> Node:
        """operator.go executeContainer + workflowpod.go createWorkflowPod."""
        if node is not None and node.id in self._pods:
            return node
        if node is not None and node.phase not in ("Pending",):
            return node
        if not self._should_execute(on_exit):
            # workflowpod.go: do not create pods while shutting down
            n = node or self._init_node(name, "Pod", tmpl["name"], scope, boundary, "Pending", flags=flags)
            return self._mark(n, "Failed", f"workflow shutdown with strategy: {self.shutdown}")
        if self._deadline_passed() and not on_exit:
            n = node or self._init_node(name, "Pod", tmpl["name"], scope, boundary, "Pending", flags=flags)
            return self._mark(n, "Failed", "Step exceeded its deadline")
        n = node or self._init_node(name, "Pod", tmpl["name"], scope, boundary, "Pending", flags=flags)
        argv, env, mounts, root = self._pod_command(n, tmpl)  # a WorkflowError here errors the node
        # A pod's initContainers run one after another before its main container, each to completion
        # (Kubernetes init-container semantics; workflowpod.go createWorkflowPod keeps the template's
        # initContainers after Argo's own `init`). Each gets its own command/env/mounts, mapped like the main one.
        inits = []
        for ic in tmpl.get("initContainers") or []:
            ic_tmpl = {k: v for k, v in tmpl.items() if k not in ("script", "initContainers", "outputs")}
            inits.append((ic.get("name", "init"), *self._pod_command(n, {**ic_tmpl, "container": ic})[:2]))
        n.phase = "Running"
        pod = _Pod(n.id, on_exit=on_exit)
        tdl = tmpl.get("activeDeadlineSeconds", tmpl.get("timeout"))
        if tdl is not None and str(tdl) != "":
            pod.deadline = time.time() + parse_duration(tdl)
            self._requeue(pod.deadline - time.time())
        self._pods[n.id] = pod
        pod.thread = threading.Thread(target=self._run_pod, args=(pod, n, tmpl, argv, env, mounts, root, inits),
                                      daemon=True)
        pod.thread.start()
        return n

    def _prepare_volumes(self) -> None:
        self._vols: dict[str, Path] = {}
        for v in self.spec.get("volumes", []) or []:
            if "persistentVolumeClaim" in v:
                claim = _substitute(v["persistentVolumeClaim"]["claimName"], self.globals(), strict=False)
                self._vols[v["name"]] = self.cluster.pvc_dirs(claim)
            elif "emptyDir" in v:
                self._vols[v["name"]] = self.cluster.run_dir / "volumes" / v["name"]
            else:
                kind = next(iter(k for k in v if k != "name"), "?")
                raise WorkflowError(f"volume {v['name']!r}: {kind} volumes are not supported locally "
                                    "(persistentVolumeClaim and emptyDir are)")
        for c in self.spec.get("volumeClaimTemplates", []) or []:
            # operator.go createPVCs: on a retry, a claim the completion deleted (volumeClaimGC) comes back empty
            # (a local --resume is a new workflow that reuses the folder on purpose: not a retry)
            d = self.cluster.run_dir / "volumes" / c["metadata"]["name"]
            self._vols[c["metadata"]["name"]] = argo_pvc.claim_dir(d) if self._retrying else d

    def _pod_command(self, n: Node, tmpl: dict[str, Any]) -> tuple[list[str], dict[str, str], dict[str, Path], Path]:
        c = tmpl.get("container") or tmpl.get("script")
        safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", n.name)[-120:]
        root = self.cluster.run_dir / "nodes" / safe
        root.mkdir(parents=True, exist_ok=True)
        vols = getattr(self, "_vols", {})
        mounts: dict[str, Path] = {}
        for vm in c.get("volumeMounts", []) or []:
            if vm["name"] not in vols:
                raise WorkflowError(f"volume '{vm['name']}' not found in workflow spec")
            vols[vm["name"]].mkdir(parents=True, exist_ok=True)
            mounts[vm["mountPath"]] = vols[vm["name"]]
        scope = tmpl.get("_scope", {})
        host_shell = self.cluster.pythons.get(_substitute(c.get("image", ""), scope, strict=False)) is None \
            and self.cluster.unmapped_on_host
        outputs = tmpl.get("outputs", {}) or {}
        for p in (outputs.get("parameters") or []) + (outputs.get("artifacts") or []):
            path = (p.get("valueFrom") or {}).get("path") or p.get("path")
            if path and not _under(path, mounts):
                # The container's own filesystem: a folder of this node here. A host-shell container maps
                # the output file itself (its /tmp is otherwise the host's /tmp); a step maps the folder.
                if host_shell:
                    mounts.setdefault(path + "\0file", root / path.lstrip("/"))
                    (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                else:
                    mounts.setdefault(str(Path(path).parent), root / Path(path).parent.relative_to("/"))
        for m, host in mounts.items():
            if not m.endswith("\0file"):
                host.mkdir(parents=True, exist_ok=True)

        def fill(v: str) -> str:
            v = _substitute(_substitute(v, scope, strict=False), tmpl.get("_local", {}), strict=False)
            left = [m.group(1).strip() for m in VAR_RE.finditer(v)
                    if m.group(1).strip().startswith(_CHECKED_PREFIXES) or m.group(1).strip() in ("item", "retries")]
            if left:
                raise WorkflowError(f"failed to resolve {{{{{left[0]}}}}}")
            return v

        image = fill(c.get("image", ""))
        python = self.cluster.pythons.get(image)
        if host_shell:
            # A host-shell container (`sh -c ...`): its paths, also those inside parameter values, stand for
            # the container's filesystem, so they are mapped after substitution, anywhere in the text.
            def fill_map(v: str) -> str:
                return _map_text(fill(v), mounts)
        else:
            # An environment-mapped step: map the template's own paths, then fill in parameters (a parameter
            # value, say a folder an earlier step reported, is already a path of this machine).
            def fill_map(v: str) -> str:
                return fill(_map_path(v, mounts))
        argv = [fill_map(a) for a in list(c.get("command") or []) + list(c.get("args") or [])]
        if "script" in tmpl:
            src = root / "script"
            src.write_text(_map_text(fill(c.get("source", "")), mounts))
            argv = argv + [str(src)]
        env = dict(self.cluster.env)
        for e in c.get("env", []) or []:
            if "valueFrom" in e:
                # The local environment stands for the Secrets/ConfigMaps a pod would read the value from.
                ref = e["valueFrom"].get("secretKeyRef") or e["valueFrom"].get("configMapKeyRef")
                if ref is None:
                    raise WorkflowError(f"env {e['name']}: only secretKeyRef/configMapKeyRef values run locally")
                if e["name"] not in env and not ref.get("optional"):
                    raise WorkflowError(f"env {e['name']}: {ref.get('name')}/{ref.get('key')} is not in the local "
                                        f"environment (export {e['name']} to stand for it)")
                continue
            env[e["name"]] = fill_map(str(e.get("value", "")))
        if python is not None:
            if argv and argv[0] in ("python", "python3"):
                argv[0] = python
            env["PATH"] = f"{Path(python).parent}:{env.get('PATH', os.environ.get('PATH', ''))}"
            env["PYTHONPATH"] = str(self.cluster.cwd)
        elif not self.cluster.unmapped_on_host:
            raise WorkflowError(f"template {tmpl['name']!r}: no local environment for image {image!r}")
        env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        if not argv:
            raise WorkflowError(f"template {tmpl['name']!r}: no command (the image's entrypoint is unknown locally)")
        return argv, env, mounts, root

    def _run_pod(self, pod: _Pod, n: Node, tmpl: dict[str, Any], argv: list[str], env: dict[str, str],
                 mounts: dict[str, Path], root: Path, inits: list | None = None) -> None:
        log_path = root / "main.log"
        n.log = log_path
        try:
            try:
                log = open(log_path, "ab", buffering=0)
            except OSError:
                log = open(os.devnull, "ab", buffering=0)
            with log:
                try:
                    log.write(f"$ {' '.join(argv)}\n".encode())
                except OSError:
                    pass
                for ic_name, ic_argv, ic_env in inits or []:
                    log.write(f"$ [{ic_name}] {' '.join(ic_argv)}\n".encode())
                    try:
                        pod.proc = subprocess.Popen(ic_argv, cwd=self.cluster.cwd, env=ic_env, stdout=log,
                                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                                    start_new_session=True)
                    except OSError as e:
                        pod.result = ("Error", f"failed to start container {ic_name}: {e}", {}, None)
                        return
                    if pod.killed:
                        self._kill(pod)
                    ic_rc = pod.proc.wait()
                    if ic_rc != 0 or pod.killed:
                        # operator.go inferFailedReason: a failed init container names itself in the message;
                        # the main container never starts, so no outputs are saved.
                        code = str(ic_rc if ic_rc >= 0 else 128 - ic_rc)
                        pod.result = ("Failed", f"{ic_name}: Error (exit code {code})", {}, code)
                        return
                try:
                    pod.proc = subprocess.Popen(argv, cwd=self.cluster.cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)
                except OSError as e:
                    # the container could not start: inferFailedReason "Pod failed before main container starts"
                    pod.result = ("Error", f"failed to start container: {e}", {}, None)
                    return
                if pod.killed:
                    self._kill(pod)
                rc = pod.proc.wait()
            pod.result = self._pod_result(n, tmpl, rc, mounts, root)
        except Exception as e:  # never leave the controller waiting on a dead thread
            pod.result = ("Error", f"local executor: {e}", {}, None)
        finally:
            self._wake.set()

    def _pod_result(self, n: Node, tmpl: dict[str, Any], rc: int, mounts: dict[str, Path], root: Path):
        outs: dict[str, str] = {}
        outputs = tmpl.get("outputs", {}) or {}
        code = str(rc if rc >= 0 else 128 - rc)
        # executor.go SaveParameters runs whatever the main container's exit code
        for p in outputs.get("parameters") or []:
            vf = p.get("valueFrom") or {}
            if "path" not in vf:
                continue
            f = Path(_map_path(vf["path"], mounts))
            try:
                value = f.read_text()
            except OSError:
                if "default" not in vf:
                    if rc == 0:
                        return ("Error", f"wait: Error (exit code 1): open {vf['path']}: no such file or directory", outs, code)
                    continue
                value = _str(vf["default"])
            outs[p["name"]] = value[:-1] if value.endswith("\n") else value  # "Trims off a single newline"
        if rc != 0:
            return ("Failed", f"main: Error (exit code {code})", outs, code)
        for a in outputs.get("artifacts") or []:
            f = Path(_map_path(a["path"], mounts))
            if not f.exists():
                if a.get("optional"):
                    continue
                return ("Error", f"wait: Error (exit code 1): open {a['path']}: no such file or directory", outs, code)
            if self.cluster.upload_artifact:
                safe = root.name
                outs[f"artifact:{a['name']}"] = self.cluster.upload_artifact(f"{self.name}/{safe}/{f.name}", f)
        return ("Succeeded", "", outs, code)

    # ---- DAG -----------------------------------------------------------------------------------------
    def _execute_dag(self, node: Node | None, name: str, tmpl: dict[str, Any], scope: str, boundary: str,
                     on_exit: bool, flags: dict[str, bool] | None) -> Node:
        """dag.go executeDAG."""
        if node is None:
            node = self._init_node(name, "DAG", tmpl["name"], scope, boundary, "Running", flags=flags)
        node._tmpl = tmpl  # type: ignore[attr-defined]  # GetTemplateByBoundaryID
        if node.phase == "Pending":
            node.phase = "Running"
        dag = tmpl["dag"]
        ctx = _DagCtx(self, node, tmpl, scope, on_exit)
        targets = dag["target"].split(" ") if dag.get("target") else ctx.leaf_names()
        for t in targets:
            self._execute_dag_task(ctx, t)
        shutdown = bool(self.shutdown) and not on_exit
        phase = ctx.assess(targets, shutdown)
        if phase == "Running" or node.fulfilled:
            return node
        if phase in ("Failed", "Error"):
            node.outbound = ctx.outbound(targets)
            return self._mark(node, phase)
        node.outputs.update(ctx.outputs())
        node.outbound = ctx.outbound(targets)
        return self._mark(node, "Succeeded")

    def _execute_dag_task(self, ctx: "_DagCtx", task_name: str) -> None:
        """dag.go executeDAGTask."""
        if task_name in ctx.visited:
            return
        ctx.visited.add(task_name)
        node = ctx.task_node(task_name)
        task = ctx.tasks.get(task_name)
        if task is None:
            raise WorkflowError(f"target '{task_name}' is not defined")
        if node is not None and node.fulfilled:
            return
        node_name = ctx.task_node_name(task_name)
        deps = ctx.deps(task_name)
        group = self.by_name(node_name)
        if group is not None and group.type != "TaskGroup":
            group = None

        def connect(child_name: str) -> None:
            if not deps or group is not None:
                self._add_child(group.name if group is not None else ctx.node.name, child_name)
            else:
                for d in deps:
                    dn = ctx.task_node(d)
                    for ob in self._outbound(dn.id):
                        self._add_child(self.nodes[ob].name, child_name)

        tdisp = task.get("template") or (task.get("templateRef") or {}).get("template", "")
        if ctx.logic(task_name):
            for d in deps:
                self._execute_dag_task(ctx, d)
            try:
                execute, proceed = ctx.evaluate(task_name)
            except WorkflowError as e:
                n = self._init_node(node_name, "Skipped", tdisp, ctx.scope, ctx.node.id, "Error", str(e))
                connect(node_name)
                return
            if not proceed:
                return
            if not execute:
                self._init_node(node_name, "Skipped", tdisp, ctx.scope, ctx.node.id, "Omitted",
                                "omitted: depends condition not met")
                connect(node_name)
                return
        try:
            resolved = ctx.resolve_references(task)
            expanded = ctx.expand(resolved)
        except WorkflowError as e:
            self._init_node(node_name, "Skipped", tdisp, ctx.scope, ctx.node.id, "Error", str(e))
            connect(node_name)
            return
        should_expand = any(k in task for k in ("withItems", "withParam", "withSequence"))
        if should_expand:
            if not expanded:
                self._init_node(node_name, "Skipped", tdisp, ctx.scope, ctx.node.id, "Skipped", "Skipped, empty params")
                connect(node_name)
            elif group is None:
                connect(node_name)
                group = self._init_node(node_name, "TaskGroup", tdisp, ctx.scope, ctx.node.id, "Running")
        for t in expanded:
            tname = ctx.task_node_name(t["name"])
            n = self.by_name(tname)
            if n is None:
                connect(tname)
                if t.get("when"):
                    try:
                        proceed = argo_when.should_execute(t["when"])  # dag.go executeDAGTask -> shouldExecute
                    except argo_when.WhenError as e:
                        self._init_node(tname, "Skipped", tdisp, ctx.scope, ctx.node.id, "Error", str(e))
                        continue
                    if not proceed:
                        self._init_node(tname, "Skipped", tdisp, ctx.scope, ctx.node.id, "Skipped",
                                        f"when '{t['when']}' evaluated false")
                        continue
            try:
                self.execute_template(tname, {**t, "_kind": "task"}, ctx.scope, t.get("arguments", {}),
                                      boundary=ctx.node.id, on_exit=ctx.on_exit)
            except _ParallelismReached:
                continue
        if group is not None:
            phase = "Succeeded"
            for t in expanded:
                n = ctx.task_node(t["name"])
                if n is None or not n.fulfilled:
                    return
                if n.failed_or_error:
                    phase = n.phase
            self._mark(group, phase)

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

    # ---- steps ---------------------------------------------------------------------------------------
    def _execute_steps(self, node: Node | None, name: str, tmpl: dict[str, Any], scope: str, boundary: str,
                       on_exit: bool, flags: dict[str, bool] | None) -> Node:
        """steps.go executeSteps: step groups run in order, the steps of a group side by side; a failed or
        errored step (without continueOn) fails its group and the template, and later groups never start."""
        if node is None:
            node = self._init_node(name, "Steps", tmpl["name"], scope, boundary, "Running", flags=flags)
        node._tmpl = tmpl  # type: ignore[attr-defined]
        svars: dict[str, str] = {}
        for i, group in enumerate(tmpl["steps"]):
            sg_name = f"{name}[{i}]"
            sg = self.by_name(sg_name)
            if sg is None:
                sg = self._init_node(sg_name, "StepGroup", "", scope, node.id, "Running")
            if i == 0:
                self._add_child(name, sg_name)
            else:
                prev = self.by_name(f"{name}[{i - 1}]")
                if not prev.children:
                    self._add_child(prev.name, sg_name)
                for c in prev.children:
                    for ob in self._outbound(c):
                        self._add_child(self.nodes[ob].name, sg_name)
            steps = group.get("steps", group) if isinstance(group, dict) else group
            sg = self._execute_step_group(steps, sg, node, scope, on_exit, svars)
            if not sg.fulfilled:
                return node
            if sg.failed_or_error:
                node.outbound = [o for c in sg.children for o in self._outbound(c)]
                return self._mark(node, "Failed", sg.message)
            for st in steps:
                child = self.by_name(f"{sg_name}.{st['name']}")
                if child is not None:
                    svars |= _node_vars("steps", st["name"], child)
                else:
                    kids = sorted((k for k in self.nodes.values() if k.boundary_id == node.id and
                                   k.name.startswith(f"{sg_name}.{st['name']}(") and k.type != "Skipped"),
                                  key=lambda k: _loop_index(k.name))
                    svars |= _aggregate_vars("steps", st["name"], kids)
        last = self.by_name(f"{name}[{len(tmpl['steps']) - 1}]")
        node.outbound = [o for c in (last.children if last else []) for o in self._outbound(c)]
        for p in (tmpl.get("outputs") or {}).get("parameters", []) or []:
            vf = p.get("valueFrom") or {}
            if "parameter" in vf:
                node.outputs[p["name"]] = _substitute(vf["parameter"], svars)
        return self._mark(node, "Succeeded")

    def _execute_step_group(self, steps: list[dict[str, Any]], sg: Node, steps_node: Node, scope: str, on_exit: bool,
                            svars: dict[str, str]) -> Node:
        """steps.go executeStepGroup."""
        if sg.fulfilled and all(k.fulfilled for k in self._kids(sg)):
            return sg
        expanded: list[dict[str, Any]] = []
        try:
            for st in steps:
                st = _substitute({k: v for k, v in st.items() if k != "withItems"}, self.globals() | svars, strict=False) \
                    | ({"withItems": st["withItems"]} if "withItems" in st else {})
                leftovers = [m.group(1).strip() for m in VAR_RE.finditer(json.dumps(st.get("arguments", {})))
                             if m.group(1).strip().startswith("steps.")]
                if leftovers:
                    raise WorkflowError(f"Unable to resolve: {{{{{leftovers[0]}}}}}")
                expanded += _DagCtx.expand(st)  # steps.go expandStep: the same item expansion as a DAG task
        except WorkflowError as e:
            return self._mark(sg, "Error", str(e))
        by_child: dict[str, dict[str, Any]] = {}
        for st in expanded:
            child = f"{sg.name}.{st['name']}"
            if st.get("when"):
                try:
                    proceed = argo_when.should_execute(st["when"])  # steps.go executeStepGroup -> shouldExecute
                except argo_when.WhenError as e:
                    self._init_node(child, "Skipped", st.get("template", ""), scope, steps_node.id, "Error", str(e))
                    self._add_child(sg.name, child)
                    return self._mark(sg, "Error", str(e))
                if not proceed:
                    if self.by_name(child) is None:
                        self._init_node(child, "Skipped", st.get("template", ""), scope, steps_node.id, "Skipped",
                                        f"when '{st['when']}' evaluated false")
                        self._add_child(sg.name, child)
                    continue
            try:
                n = self.execute_template(child, st, scope, st.get("arguments", {}), boundary=steps_node.id, on_exit=on_exit)
            except _ParallelismReached:
                continue
            if n is not None:
                by_child[n.name] = st
                self._add_child(sg.name, child)
        kids = self._kids(sg)
        if not all(k.fulfilled for k in kids):
            return sg
        for k in kids:
            cont = (by_child.get(k.name) or {}).get("continueOn") or {}
            if k.failed_or_error and not ((k.phase == "Failed" and cont.get("failed")) or (k.phase == "Error" and cont.get("error"))):
                return self._mark(sg, "Failed", f"child '{k.id}' failed")
        return self._mark(sg, "Succeeded")

    # ---- status --------------------------------------------------------------------------------------
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


class _DagCtx:
    """dag.go dagContext."""

    def __init__(self, argo: LocalArgo, node: Node, tmpl: dict[str, Any], scope: str, on_exit: bool) -> None:
        self.argo, self.node, self.tmpl, self.scope, self.on_exit = argo, node, tmpl, scope, on_exit
        self.tasks = {t["name"]: t for t in tmpl["dag"]["tasks"]}
        self.visited: set[str] = set()
        self._deps: dict[str, tuple[dict[str, str], str]] = {}

    def _dep_info(self, name: str) -> tuple[dict[str, str], str]:
        if name not in self._deps:
            self._deps[name] = argo_expr.task_dependencies(self.tasks[name], self.tasks)
        return self._deps[name]

    def deps(self, name: str) -> list[str]:
        return list(self._dep_info(name)[0])

    def logic(self, name: str) -> str:
        return self._dep_info(name)[1]

    def task_node_name(self, task: str) -> str:
        return f"{self.node.name}.{task}"

    def task_node(self, task: str) -> Node | None:
        return self.argo.by_name(self.task_node_name(task))

    def leaf_names(self) -> list[str]:
        # dag.go findLeafTaskNames (sorted)
        leaf = {t: True for t in self.tasks}
        for t in self.tasks:
            for d in self.deps(t):
                leaf[d] = False
        return sorted(t for t, ok in leaf.items() if ok)

    def evaluate(self, name: str) -> tuple[bool, bool]:
        """dag.go evaluateDependsLogic -> (execute, proceed)."""
        if self.task_node(name) is not None:
            return True, True
        results = {}
        for d in self.deps(name):
            dn = self.task_node(d)
            if dn is None or not dn.fulfilled:
                return False, False
            results[d] = _task_results(dn, self.argo._kids(dn))
        try:
            return argo_expr.eval_depends(self.logic(name), results), True
        except argo_expr.ExprError as e:
            raise WorkflowError(f"unable to evaluate expression '{self.logic(name)}': {e}") from None

    def ancestry(self, name: str) -> set[str]:
        out: set[str] = set()
        stack = list(self.deps(name))
        while stack:
            d = stack.pop()
            if d not in out and d in self.tasks:
                out.add(d)
                stack += self.deps(d)
        return out

    def _scope_vars(self, task_name: str) -> dict[str, str]:
        """dag.go buildLocalScopeFromTask: outputs and status of the task's ancestors."""
        s: dict[str, str] = {}
        for anc in self.ancestry(task_name):
            n = self.task_node(anc)
            if n is None:
                continue
            s[f"tasks.{anc}.id"] = n.id
            s[f"tasks.{anc}.status"] = n.phase
            s[f"tasks.{anc}.startedAt"] = _iso(n.started) if n.started else ""
            s[f"tasks.{anc}.finishedAt"] = _iso(n.finished) if n.finished else ""
            if n.exit_code is not None:
                s[f"tasks.{anc}.exitCode"] = n.exit_code
            if n.type == "TaskGroup":
                # operator.go processAggregateNodeOutputs: succeeded children only, in item order
                kids = sorted((k for k in self.argo._kids(n) if not k.flags.get("hooked") and not k.flags.get("retried")),
                              key=lambda k: _loop_index(k.name))
                plist, by_name = [], {}
                for k in kids:
                    if k.phase != "Succeeded":
                        continue
                    params = {p: v for p, v in k.outputs.items() if not p.startswith("artifact:")}
                    if params:
                        plist.append(params)
                        for p, v in params.items():
                            by_name.setdefault(p, []).append(v)
                s[f"tasks.{anc}.outputs.parameters"] = json.dumps(plist, separators=(",", ":"))
                for p, vals in by_name.items():
                    s[f"tasks.{anc}.outputs.parameters.{p}"] = _aggregated_json(vals)
            else:
                for p, v in n.outputs.items():
                    if p.startswith("artifact:"):
                        continue
                    s[f"tasks.{anc}.outputs.parameters.{p}"] = v
        return s

    def resolve_references(self, task: dict[str, Any]) -> dict[str, Any]:
        """dag.go resolveDependencyReferences: substitute ancestor outputs into the task (items later)."""
        scope = self.argo.globals() | self._scope_vars(task["name"])
        body = {k: v for k, v in task.items() if k not in ("withItems",)}
        out = _substitute(body, scope, strict=False)
        if "withItems" in task:
            out["withItems"] = task["withItems"]
        leftovers = [m.group(1).strip() for m in VAR_RE.finditer(json.dumps(out.get("arguments", {})))
                     if m.group(1).strip().startswith("tasks.")]
        if leftovers:
            raise WorkflowError(f"Unable to resolve: {{{{{leftovers[0]}}}}}")
        return out

    @staticmethod
    def expand(task: dict[str, Any]) -> list[dict[str, Any]]:
        """dag.go expandTask + operator.go processItem."""
        if task.get("withItems"):
            items = task["withItems"]
        elif task.get("withParam"):
            try:
                items = json.loads(task["withParam"])
            except json.JSONDecodeError as e:
                raise WorkflowError(f"withParam value could not be parsed as a JSON list: {task['withParam'].strip()}: {e}") from None
            if not isinstance(items, list):
                raise WorkflowError(f"withParam value could not be parsed as a JSON list: {task['withParam'].strip()}")
        elif task.get("withSequence"):
            items = _sequence(task["withSequence"])
        else:
            return [task]
        body = {k: v for k, v in task.items() if k not in ("withItems", "withParam", "withSequence")}
        out = []
        for i, item in enumerate(items):
            scope = {"item": render_item(item)}
            if isinstance(item, dict):
                vals = []
                for k, v in item.items():
                    scope[f"item.{k}"] = render_item(v)
                    vals.append(f"{k}:{render_item(v)}")
                desc = ",".join(sorted(vals))
            elif isinstance(item, (str, int, float, bool, list)) and item is not None:
                desc = render_item(item) if not isinstance(item, list) else "[" + " ".join(render_item(v) for v in item) + "]"
            else:
                raise WorkflowError(f"withItems[{i}] expected string, number, list, or map. received: {item}")
            t = _substitute(body, scope, strict=False)
            t["name"] = f"{task['name']}({i}:{desc.replace('(', '').replace(')', '')})"
            out.append(t)
        return out

    def assess(self, targets: list[str], shutdown: bool) -> str:
        """dag.go assessDAGPhase: BFS from the DAG's children; an omitted node inherits its branch's
        phase (Failed/Error preferred); the DAG is judged by its target (leaf) tasks only."""
        if shutdown:
            return "Failed"
        target_ids = {self.argo.node_id(self.task_node_name(t)): t for t in targets}
        target_phase: dict[str, str] = {tid: "" for tid in target_ids}
        queue = [(c, "Succeeded") for c in self.node.children]
        seen: set[tuple[str, str]] = set()
        while queue:
            cid, branch = queue.pop(0)
            if (cid, branch) in seen:
                continue
            seen.add((cid, branch))
            n = self.argo.nodes.get(cid)
            if n is None:
                return "Running"
            if not n.fulfilled:
                # completableTaskGroupPhase: a TaskGroup whose every child is fulfilled completes from them
                kids = self.argo._kids(n)
                if n.type == "TaskGroup" and kids and all(k.fulfilled for k in kids):
                    branch = next((k.phase for k in reversed(kids) if k.failed_or_error), "Succeeded")
                    self.argo._mark(n, branch)
                else:
                    return "Running"
            elif n.phase in ("Succeeded", "Failed", "Error"):
                branch = n.phase  # NodePhase.Completed(): a Skipped/Omitted node inherits its branch's phase
            if n.id in target_phase and target_phase[n.id] not in ("Failed", "Error"):
                target_phase[n.id] = branch
            if n.type == "Retry":
                nxt: list[str] = []
                for k in reversed(self.argo._kids(n)):
                    nxt += [k.id] if k.flags.get("hooked") else list(k.children)
            else:
                nxt = list(n.children)
            queue += [(c, branch) for c in nxt]
        fail_fast = self.tmpl["dag"].get("failFast", True) is not False
        result = "Succeeded"
        for t in targets:
            bp = target_phase[self.argo.node_id(self.task_node_name(t))]
            if bp == "":
                result = "Running"
                if not fail_fast:
                    break
            elif bp in ("Failed", "Error"):
                cont = self.tasks[t].get("continueOn") or {}
                if (bp == "Failed" and cont.get("failed")) or (bp == "Error" and cont.get("error")):
                    continue
                result = bp
                if fail_fast:
                    break
        return result

    def outbound(self, targets: list[str]) -> list[str]:
        out: list[str] = []
        for t in targets:
            n = self.task_node(t)
            if n is not None:
                out += self.argo._outbound(n.id)
        return out

    def outputs(self) -> dict[str, str]:
        """operator.go getTemplateOutputsFromScope: a DAG's outputs.parameters from valueFrom.parameter."""
        outs: dict[str, str] = {}
        scope: dict[str, str] = {}
        for t in self.tasks:
            scope |= self._scope_vars_for(t)
        for p in (self.tmpl.get("outputs") or {}).get("parameters", []) or []:
            vf = p.get("valueFrom") or {}
            if "parameter" in vf:
                try:
                    outs[p["name"]] = _substitute(vf["parameter"], scope)
                except WorkflowError:
                    if "default" in vf:
                        outs[p["name"]] = _str(vf["default"])
                    else:
                        raise
        return outs

    def _scope_vars_for(self, task: str) -> dict[str, str]:
        fake = "\0self"
        self._deps[fake] = ({task: "task"}, "")
        try:
            return self._scope_vars(fake)
        finally:
            del self._deps[fake]


def _node_vars(kind: str, name: str, n: Node) -> dict[str, str]:
    """operator.go buildLocalScope: steps.NAME.id/status/outputs.parameters.P (tasks.NAME.* likewise)."""
    s = {f"{kind}.{name}.id": n.id, f"{kind}.{name}.status": n.phase}
    if n.exit_code is not None:
        s[f"{kind}.{name}.exitCode"] = n.exit_code
    for p, v in n.outputs.items():
        if not p.startswith("artifact:"):
            s[f"{kind}.{name}.outputs.parameters.{p}"] = v
    return s


def _aggregate_vars(kind: str, name: str, kids: list[Node]) -> dict[str, str]:
    """operator.go processAggregateNodeOutputs: succeeded children only, in item order."""
    plist: list[dict[str, str]] = []
    by_name: dict[str, list[str]] = {}
    for k in kids:
        if k.phase != "Succeeded" or k.flags.get("hooked") or k.flags.get("retried"):
            continue
        params = {p: v for p, v in k.outputs.items() if not p.startswith("artifact:")}
        if params:
            plist.append(params)
            for p, v in params.items():
                by_name.setdefault(p, []).append(v)
    s = {f"{kind}.{name}.outputs.parameters": json.dumps(plist, separators=(",", ":"))}
    for p, vals in by_name.items():
        s[f"{kind}.{name}.outputs.parameters.{p}"] = _aggregated_json(vals)
    return s


def _loop_index(name: str) -> int:
    m = re.search(r"\((\d+):", name)
    return int(m.group(1)) if m else 0


def _aggregated_json(values: list[str]) -> str:
    # operator.go aggregatedJSONValueList: JSON values stay JSON, else a list of strings
    parsed = []
    for v in values:
        try:
            parsed.append(json.loads(v))
        except json.JSONDecodeError:
            return json.dumps(values, separators=(",", ":"))
    return json.dumps(parsed, separators=(",", ":"))


def _sequence(seq: dict[str, Any]) -> list[str]:
    # operator.go expandSequence
    fmt = seq.get("format") or "%d"
    start = int(str(seq.get("start", 0)))
    if "count" in seq and "end" in seq:
        raise WorkflowError("only one of count or end can be defined in withSequence")
    if "count" in seq:
        end = start + int(str(seq["count"])) - 1
        if int(str(seq["count"])) == 0:
            return []
    else:
        end = int(str(seq.get("end", 0)))
    step = 1 if end >= start else -1
    return [fmt % i for i in range(start, end + step, step)]


def _humanize(seconds: float) -> str:
    if seconds < 1:
        return f"{int(seconds * 1000)} milliseconds"
    if seconds < 60:
        return f"{int(seconds)} seconds"
    return f"{int(seconds // 60)} minutes"


def _str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (dict, list)):
        return json.dumps(v, separators=(",", ":"))
    return str(v)


def _display(name: str) -> str:
    # initializeNode: the display name is the last element of the node name
    depth, cut = 0, -1
    for i, ch in enumerate(name):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "." and depth == 0:
            cut = i
    return name[cut + 1:] if cut >= 0 else name


def _node_type(tmpl: dict[str, Any]) -> str:
    return "DAG" if "dag" in tmpl else "Steps" if "steps" in tmpl else "Pod"


# A mount key ending in "\0file" maps exactly that file path (no prefix).
def _under(path: str, mounts: dict[str, Path]) -> bool:
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts if not m.endswith("\0file"))


def _map_path(value: str, mounts: dict[str, Path]) -> str:
    # Longest mount first, so /work/run maps through /work/run before /work.
    for m in sorted(mounts, key=len, reverse=True):
        if m.endswith("\0file"):
            if value == m[:-5]:
                return str(mounts[m])
        elif value == m or value.startswith(m.rstrip("/") + "/"):
            return str(mounts[m]) + value[len(m.rstrip("/")):]
    return value


def _map_text(text: str, mounts: dict[str, Path]) -> str:
    """Every occurrence of a mount path (as a whole path prefix) in free text, longest mount first."""
    if not mounts:
        return text
    keys = {(m[:-5] if m.endswith("\0file") else m.rstrip("/")): m for m in mounts}
    pat = re.compile(r"(?<![\w./-])(" + "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True))
                     + r")(?=/|$|[^\w.-])")

    def repl(mt: re.Match) -> str:
        m = keys[mt.group(1)]
        if m.endswith("\0file") and text[mt.end():mt.end() + 1] == "/":
            return mt.group(1)
        return str(mounts[m])
    return pat.sub(repl, text)


def _last_line(log: Path | None) -> str:
    if not log or not log.exists():
        return ""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
