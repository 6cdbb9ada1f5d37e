"""DAG templates (workflow/controller/dag.go executeDAG, executeDAGTask, assessDAGPhase, dagContext)."""

from __future__ import annotations

import json
import re
from typing import Any

from infersweep.local.argo import expr as argo_expr
from infersweep.local.argo import when as argo_when
from infersweep.local.argo.errors import ParallelismReached, WorkflowError
from infersweep.local.argo.nodes import Node, TemplateCall, _iso
from infersweep.local.argo.templates import (
    ABSENT_OPTIONAL,
    _sequence,
    _str,
    _substitute,
    check_resolved,
    render_item,
)


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
    return {
        "Succeeded": n.phase == "Succeeded",
        "Failed": n.phase == "Failed",
        "Errored": n.phase == "Error",
        "Skipped": n.phase == "Skipped",
        "Omitted": n.phase == "Omitted",
        "Daemoned": False,
        "AnySucceeded": any_ok,
        "AllFailed": all_failed,
    }


class _DagCtx:
    """dag.go dagContext. `argo` is the LocalArgo running the DAG (typed Any: this file is one of its bases)."""

    def __init__(self, argo: Any, node: Node, tmpl: dict[str, Any], scope: str, on_exit: bool) -> None:
        self.argo, self.node, self.tmpl, self.scope, self.on_exit = argo, node, tmpl, scope, on_exit
        self.absent: set[str] = set()  # scope keys of skipped tasks' outputs without a default (_skipped_outputs)
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
                s |= _aggregate_vars("tasks", anc, sorted(self.argo._kids(n), key=lambda k: _loop_index(k.name)))
            else:
                for p, v in n.outputs.items():
                    if p.startswith("artifact:"):
                        continue
                    s[f"tasks.{anc}.outputs.parameters.{p}"] = v
                if n.phase in ("Skipped", "Omitted") and not n.outputs:
                    s |= self._skipped_outputs(anc)
        return s

    def _skipped_outputs(self, task: str) -> dict[str, str]:
        """scope.go addSkippedNodeOutputsToScope (argo-workflows v4.1.2, called from dag.go :408-410 and
        :753-755): a skipped or omitted task's declared output parameters resolve to the producer's
        `valueFrom.default`, or, without one, to an absent optional (recorded in self.absent, not in scope)."""
        try:
            tmpl, _ = self.argo.resolve(self.tasks[task], self.scope)
        except WorkflowError:  # scope.go: a template that cannot be resolved populates nothing
            return {}
        out: dict[str, str] = {}
        for p in (tmpl.get("outputs") or {}).get("parameters", []) or []:
            key = f"tasks.{task}.outputs.parameters.{p['name']}"
            vf = p.get("valueFrom") or {}
            if "default" in vf:
                out[key] = _str(vf["default"])
            else:
                self.absent.add(key)
        return out

    def resolve_references(self, task: dict[str, Any]) -> dict[str, Any]:
        """dag.go resolveDependencyReferences: substitute ancestor outputs into the task (items later)."""
        scope = self.argo.globals() | self._scope_vars(task["name"])
        body = {k: v for k, v in task.items() if k not in ("withItems",)}
        # scope.go markAbsentOptionalArgs: an argument that is one pure reference to an absent optional
        # becomes the sentinel, which _process_args reads as "not supplied" (common/util.go ProcessArgs :212-219)
        args = body.get("arguments") or {}
        if self.absent and args.get("parameters"):
            params = []
            for p in args["parameters"]:
                v = p.get("value")
                key = v[2:-2].strip() if isinstance(v, str) and v.startswith("{{") and v.endswith("}}") else None
                params.append({**p, "value": ABSENT_OPTIONAL} if key in self.absent else p)
            body = {**body, "arguments": {**args, "parameters": params}}
        out = _substitute(body, scope, strict=False)
        if "withItems" in task:
            out["withItems"] = task["withItems"]
        check_resolved(out.get("arguments", {}), "tasks.")
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
                raise WorkflowError(
                    f"withParam value could not be parsed as a JSON list: {task['withParam'].strip()}: {e}"
                ) from None
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
                desc = (
                    render_item(item)
                    if not isinstance(item, list)
                    else "[" + " ".join(render_item(v) for v in item) + "]"
                )
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


class DagExecution:
    """dag.go executeDAG/executeDAGTask on the operator; mixed into LocalArgo."""

    def _execute_dag(self, node: Node | None, call: TemplateCall) -> Node:
        """dag.go executeDAG."""
        tmpl, scope, on_exit = call.tmpl, call.scope, call.on_exit
        if node is None:
            node = self._init_call_node(call, "DAG", "Running")
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
                self._init_node(
                    node_name, "Skipped", tdisp, ctx.scope, ctx.node.id, "Omitted", "omitted: depends condition not met"
                )
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
                        self._init_node(
                            tname,
                            "Skipped",
                            tdisp,
                            ctx.scope,
                            ctx.node.id,
                            "Skipped",
                            f"when '{t['when']}' evaluated false",
                        )
                        continue
            try:
                self.execute_template(
                    tname,
                    {**t, "_kind": "task"},
                    ctx.scope,
                    t.get("arguments", {}),
                    boundary=ctx.node.id,
                    on_exit=ctx.on_exit,
                )
            except ParallelismReached:
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
