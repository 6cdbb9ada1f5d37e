"""Run an Argo Workflow on this machine the way the Argo Workflows v4.1.2 controller runs it.

This is a port of the controller's reconciliation, not a second scheduler: a loop calls `operate` (workflow/
controller/operator.go operate) whenever a pod finishes or a timer is due, and `operate` walks the templates
exactly as the controller does (executeTemplate, executeDAG, executeDAGTask, assessDAGPhase, processNodeRetries,
checkParallelism, exit handler, shutdown, deadlines), over a node table shaped like `status.nodes`. A
container template is a "pod": a host process in its own thread (its image mapped to a local environment,
or, when allowed, its command run as-is on the host), so independent tasks really run side by side.
Each rule carries the file and function of Argo it follows. What this executor does not implement is
rejected by name before anything runs (validate.py).

Where a real controller's behaviour depends on the Kubernetes API (pod phases, kubelet deadlines), the
local equivalent is stated beside it: exit code != 0 -> Failed `main: Error (exit code N)` (operator.go
inferFailedReason); a template deadline kills the process -> Failed `Pod was active on the node longer than
the specified deadline` (kubelet message); an output parameter file missing with no default -> Error (the
wait container fails: inferFailedReason).
"""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from infersweep.local.argo import expr as argo_expr
from infersweep.local.argo import pvc as argo_pvc
from infersweep.local.argo import resource as argo_resource
from infersweep.local.argo import validate as argo_validate
from infersweep.local.argo.dag import DagExecution
from infersweep.local.argo.errors import ParallelismReached, WorkflowError
from infersweep.local.argo.nodes import Node, NodeTable, TemplateCall, _iso, _node_type, _parse_iso
from infersweep.local.argo.pod import PodExecution, _Pod
from infersweep.local.argo.steps import StepsExecution
from infersweep.local.argo.sync import LocalLocks, SyncError
from infersweep.local.argo.templates import TemplateResolution, _substitute, parse_duration


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
    # The controller's `workflowRestrictions.templateReferencing` ("", "Strict" or "Secure"), and the
    # WorkflowTemplates as installed now (Secure re-reads them on every reconcile; None: never changed).
    template_referencing: str = ""
    current_templates: Callable[[], list[dict[str, Any]]] | None = None


def _humanize(seconds: float) -> str:
    if seconds < 1:
        return f"{int(seconds * 1000)} milliseconds"
    if seconds < 60:
        return f"{int(seconds)} seconds"
    return f"{int(seconds // 60)} minutes"


class LocalArgo(NodeTable, TemplateResolution, PodExecution, DagExecution, StepsExecution):
    """`LocalArgo(workflow, templates, cluster).run()` -> the root node; `.phase`/`.message` are the
    workflow's; `.status()` is `argo get -o json`'s `status`. Its methods are spread over the files of the
    package as the controller's `wfOperationCtx` methods are over operator.go, dag.go, steps.go, workflowpod.go."""

    def __init__(
        self,
        workflow: dict[str, Any],
        templates: list[dict[str, Any]],
        cluster: LocalCluster,
        *,
        status: dict[str, Any] | None = None,
        validate: bool = True,
    ) -> None:
        self.cluster = cluster
        self.workflow = workflow
        self.wts = {t["metadata"]["name"]: t for t in templates if t.get("kind") == "WorkflowTemplate"}
        self.spec = self._merged_spec(workflow)
        self._stored_spec = copy.deepcopy(self.spec)  # status.storedWorkflowSpec, what Secure compares with
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
        self._execution_deadlines: dict[str, float | None] = {}  # Retry node id -> its attempts' ARGO_DEADLINE
        self.locks = LocalLocks(
            cluster.state_dir or Path.home() / ".cache" / "infersweep" / "argo-local", cluster.configmaps
        )
        self._retrying = bool(status)  # argo retry: the same workflow again (its PVCs: pvc.py)
        if status:
            self.nodes = {nid: Node.from_status(d) for nid, d in (status.get("nodes") or {}).items()}
            self.started_at = _parse_iso(status.get("startedAt")) or 0.0
        self.root: Node | None = None
        self.exit_node: Node | None = None

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
            if self.phase in ("Succeeded", "Failed", "Error"):  # operator.go deletePVCs (pvc.py)
                argo_pvc.collect(
                    self.spec,
                    self.phase,
                    [
                        self.cluster.run_dir / "volumes" / c["metadata"]["name"]
                        for c in self.spec.get("volumeClaimTemplates", []) or []
                    ],
                )
            self.locks.release(self._holder(), self.spec.get("synchronization"), self.namespace)
            for holder, sync in list(self._sync_held.items()):
                self.locks.release(holder, sync, self.namespace)
            self.locks.leave_queues(self._holder())
        root = self.by_name(self.name)
        self.root = (
            self.tree(root) if root else Node(self.name, self.spec["entrypoint"], phase=self.phase, id=self.name)
        )
        exit_node = self.by_name(f"{self.name}.onExit")
        self.exit_node = self.tree(exit_node) if exit_node else None
        return self.root

    def stop(self, reason: str = "", strategy: str = "Stop") -> None:
        """`argo stop` (strategy Stop: the exit handler still runs) or `argo terminate` (Terminate: it does
        not). workflow_types.go ShutdownStrategy.ShouldExecute. Safe to call from a signal handler."""
        self.stop_reason = reason or f"Stopped with strategy '{strategy}'"
        if self.shutdown != "Terminate":
            self.shutdown = strategy
        self._wake.set()

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

    def _reference_mode_error(self) -> str | None:
        """operator.go setExecWorkflow (v4.1.2 :4482-4505) and setStoredWfSpec (:4595-4643): in reference mode
        (Strict or Secure) a Workflow without workflowTemplateRef is errored; under Secure every reconcile
        re-merges the WorkflowTemplate as installed now and errors the Workflow when the result differs from
        the spec stored at its first reconcile. operate returns on that error before the DAG and the exit
        handler (:235-238): the exit handler never runs."""
        mode = self.cluster.template_referencing
        if mode not in ("Strict", "Secure"):
            return None
        if not self.workflow.get("spec", {}).get("workflowTemplateRef"):
            return "workflows must use workflowTemplateRef to be executed when the controller is in reference mode"
        if mode == "Secure" and self.cluster.current_templates is not None:
            now = {
                t["metadata"]["name"]: t
                for t in self.cluster.current_templates()
                if t.get("kind") == "WorkflowTemplate"
            }
            saved, self.wts = self.wts, now
            try:
                merged = self._merged_spec(self.workflow)
            except WorkflowError as e:  # fetchWorkflowSpec: the template is gone
                return str(e)
            finally:
                self.wts = saved
            if json.dumps(merged, sort_keys=True) != json.dumps(self._stored_spec, sort_keys=True):
                return "WorkflowSpec may not change during execution when the controller is set `templateReferencing: Secure`"
        return None

    def operate(self) -> None:
        """operator.go operate, one reconciliation pass."""
        err = self._reference_mode_error()
        if err:
            self.phase, self.message = "Error", err  # markWorkflowError
            return
        # Workflow-level synchronization (operate: TryAcquire before anything runs).
        if self.spec.get("synchronization") and self.phase in ("Pending", ""):
            try:
                ok, msg = self.locks.try_acquire(
                    self._holder(), self.spec["synchronization"], self.namespace, self.priority, self.created
                )
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

        # operate: "error in entry template execution" -> workflow Error
        node = self._execute_top(self.name, self.spec["entrypoint"], "error in entry template execution: ")
        if node is None or not node.fulfilled:
            return
        wf_status = {
            "Succeeded": "Succeeded",
            "Skipped": "Succeeded",
            "Omitted": "Succeeded",
            "Failed": "Failed",
            "Error": "Error",
        }[node.phase]
        self._workflow_status = wf_status
        exit_node = None
        if self.spec.get("onExit"):
            en_name = f"{self.name}.onExit"
            exit_node = self.by_name(en_name)
            if exit_node is not None or self._should_execute(True):
                exit_node = self._execute_top(
                    en_name, self.spec["onExit"], "error in exit template execution : ", on_exit=True
                )
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

    def _execute_top(self, node_name: str, template: str, error: str, *, on_exit: bool = False) -> Node | None:
        """A workflow-level template (the entrypoint, or the exit handler with `on_exit`), given the workflow's
        arguments. None when it cannot go on now (parallelism) or errored the workflow (`error` + why)."""
        try:
            return self.execute_template(
                node_name,
                {"template": template},
                self.spec.get("_scope", ""),
                self.spec.get("arguments", {}),
                boundary="",
                on_exit=on_exit,
                flags={"hooked": True} if on_exit else None,
            )
        except ParallelismReached:
            return None
        except WorkflowError as e:
            self.phase, self.message = "Error", f"{error}{e}"
            return None

    def _holder(self) -> str:
        # A lock holder is this execution of the workflow: two local runs of one file share a name, never a uid.
        return f"{self.namespace}/{self.name}/{self.uid[:8]}"

    def _requeue(self, seconds: float) -> None:
        at = time.time() + max(0.0, seconds)
        if self._requeue_at is None or at < self._requeue_at:
            self._requeue_at = at

    def execute_template(
        self,
        node_name: str,
        holder: dict[str, Any],
        scope: str,
        args: dict[str, Any],
        *,
        boundary: str,
        on_exit: bool,
        flags: dict[str, bool] | None = None,
        local: dict[str, str] | None = None,
    ) -> Node | None:
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
                    node = self._init_node(
                        node_name, _node_type(ptmpl), tmpl["name"], new_scope, boundary, "Pending", msg, flags=flags
                    )
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
            rp = _retry_params(retry_num, last)
            # SubstituteParams after ProcessArgs: a second pass, so {{retries}} inside an input value resolves too
            ptmpl = {
                **_substitute({k: v for k, v in ptmpl.items() if k not in ("_scope",)}, rp, strict=False),
                "_scope": {**ptmpl["_scope"], **rp},
                "_local": rp,
            }
            flags = {**(flags or {}), "retried": True}
            if node is None and self._execution_deadlines.get(rnode.id):
                ptmpl["_execution_deadline"] = self._execution_deadlines[rnode.id]

        try:
            node = self._execute_kind(node, TemplateCall(node_name, ptmpl, new_scope, boundary, on_exit, flags))
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
                return self.execute_template(
                    retry_name, holder, scope, args, boundary=boundary, on_exit=on_exit, flags=flags, local=local
                )
            return rnode
        return node

    def _execute_kind(self, node: Node | None, call: TemplateCall) -> Node:
        """operator.go executeTemplate's switch on the template's type."""
        tmpl = call.tmpl
        if "container" in tmpl or "script" in tmpl:
            return self._execute_container(node, call)
        if "dag" in tmpl:
            return self._execute_dag(node, call)
        if "steps" in tmpl:
            return self._execute_steps(node, call)
        if "resource" in tmpl:  # operator.go executeResource (action create: resource.py)
            return argo_resource.execute_resource(self, node, call, substitute=_substitute)
        kind = next((k for k in ("resource", "suspend", "data", "http", "plugin", "containerSet") if k in tmpl), None)
        raise WorkflowError(
            f"Template '{tmpl['name']}' "
            + (f"is a {kind} template: not supported locally" if kind else "missing specification")
        )

    def _release(self, node_name: str, sync: Any) -> None:
        if not sync:
            return
        key = f"{self._holder()}/{self.node_id(node_name)}"
        if key in self._sync_held:
            self.locks.release(key, self._sync_held.pop(key), self.namespace)

    def _node_error(
        self,
        node: Node | None,
        name: str,
        holder: dict[str, Any],
        boundary: str,
        msg: str,
        flags: dict[str, bool] | None,
    ) -> Node:
        # operator.go initializeNodeOrMarkError: a Skipped-type node in phase Error
        if node is None:
            return self._init_node(
                name,
                "Skipped",
                holder.get("template") or (holder.get("templateRef") or {}).get("template", ""),
                "",
                boundary,
                "Error",
                msg,
                flags=flags,
            )
        return self._mark(node, "Error", msg)

    def _check_parallelism(self, tmpl: dict[str, Any], node: Node | None, boundary: str) -> None:
        """operator.go checkParallelism (workflow parallelism, template failFast/parallelism, boundary's)."""
        wp = self.spec.get("parallelism")
        if wp is not None and self._active_pods("") >= int(wp):
            raise ParallelismReached()
        is_group = "dag" in tmpl or "steps" in tmpl
        if node is not None and is_group:
            if tmpl.get("failFast") and self._unsuccessful_children(node.id) > 0:
                if self._active_pods(node.id) == 0:
                    self._mark(node, "Failed", "template has failed or errored children and failFast enabled")
                raise ParallelismReached()
            if tmpl.get("parallelism") and self._active_pods(node.id) >= int(tmpl["parallelism"]):
                raise ParallelismReached()
        if boundary and (node is None or node.phase not in ("Pending", "Running")):
            bnode = self.nodes.get(boundary)
            btmpl = getattr(bnode, "_tmpl", None) if bnode else None
            if btmpl is None:
                return
            if btmpl.get("failFast") and self._unsuccessful_children(boundary) > 0:
                if self._active_pods(boundary) == 0:
                    self._mark(bnode, "Failed", "template has failed or errored children and failFast enabled")
                raise ParallelismReached()
            if btmpl.get("parallelism") and self._active_children(boundary) >= int(btmpl["parallelism"]):
                raise ParallelismReached()

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
            msg = (
                f"Stopped with strategy '{self.shutdown}'"
                if self.shutdown
                else f"retry exceeded workflow deadline {_iso(self.deadline() or 0)}"
            )
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
            # operator.go :1146-1147: the next attempt's pod gets executionDeadline = first start + maxDuration
            self._execution_deadlines[node.id] = max_deadline
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
            scope = {
                "retries": str(len(attempts) - 1),
                "lastRetry": {
                    "exitCode": last.exit_code if last.exit_code is not None else "-1",
                    "status": last.phase,
                    "duration": str(last.seconds),
                    "message": last.message,
                },
            }
            try:
                ok = argo_expr.eval_bool(rs["expression"], scope)
            except argo_expr.ExprError as e:
                raise WorkflowError(str(e)) from None
            if not ok:
                self._mark(node, last.phase, "retryStrategy.expression evaluated to false")
                return True
        return True


def _retry_params(retry_num: int, last: Node | None) -> dict[str, str]:
    """The retry variables of an attempt (operator.go executeTemplate: retries, lastRetry.*), from the attempt
    before it (`last`; none for the first)."""
    if last is None:
        return {
            "retries": str(retry_num),
            "lastRetry.exitCode": "0",
            "lastRetry.duration": "0",
            "lastRetry.status": "",
            "lastRetry.message": "",
        }
    return {
        "retries": str(retry_num),
        "lastRetry.exitCode": last.exit_code if last.exit_code is not None else "0",
        "lastRetry.duration": str(last.seconds),
        "lastRetry.status": last.phase,
        "lastRetry.message": last.message,
    }
