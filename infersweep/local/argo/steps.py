"""Steps templates (workflow/controller/steps.go executeSteps, executeStepGroup, expandStep)."""

from __future__ import annotations

from typing import Any

from infersweep.local.argo import when as argo_when
from infersweep.local.argo.dag import _aggregate_vars, _DagCtx, _loop_index
from infersweep.local.argo.errors import ParallelismReached, WorkflowError
from infersweep.local.argo.nodes import Node, TemplateCall
from infersweep.local.argo.templates import _substitute, check_resolved


def _node_vars(kind: str, name: str, n: Node) -> dict[str, str]:
    """operator.go buildLocalScope: steps.NAME.id/status/outputs.parameters.P (tasks.NAME.* likewise)."""
    s = {f"{kind}.{name}.id": n.id, f"{kind}.{name}.status": n.phase}
    if n.exit_code is not None:
        s[f"{kind}.{name}.exitCode"] = n.exit_code
    for p, v in n.outputs.items():
        if not p.startswith("artifact:"):
            s[f"{kind}.{name}.outputs.parameters.{p}"] = v
    return s


class StepsExecution:
    """steps.go executeSteps/executeStepGroup on the operator; mixed into LocalArgo."""

    def _execute_steps(self, node: Node | None, call: TemplateCall) -> Node:
        """steps.go executeSteps: step groups run in order, the steps of a group side by side; a failed or
        errored step (without continueOn) fails its group and the template, and later groups never start."""
        name, tmpl, scope, on_exit = call.name, call.tmpl, call.scope, call.on_exit
        if node is None:
            node = self._init_call_node(call, "Steps", "Running")
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
                    kids = sorted(
                        (
                            k
                            for k in self.nodes.values()
                            if k.boundary_id == node.id
                            and k.name.startswith(f"{sg_name}.{st['name']}(")
                            and k.type != "Skipped"
                        ),
                        key=lambda k: _loop_index(k.name),
                    )
                    svars |= _aggregate_vars("steps", st["name"], kids)
        last = self.by_name(f"{name}[{len(tmpl['steps']) - 1}]")
        node.outbound = [o for c in (last.children if last else []) for o in self._outbound(c)]
        for p in (tmpl.get("outputs") or {}).get("parameters", []) or []:
            vf = p.get("valueFrom") or {}
            if "parameter" in vf:
                node.outputs[p["name"]] = _substitute(vf["parameter"], svars)
        return self._mark(node, "Succeeded")

    def _execute_step_group(
        self, steps: list[dict[str, Any]], sg: Node, steps_node: Node, scope: str, on_exit: bool, svars: dict[str, str]
    ) -> Node:
        """steps.go executeStepGroup."""
        if sg.fulfilled and all(k.fulfilled for k in self._kids(sg)):
            return sg
        expanded: list[dict[str, Any]] = []
        try:
            for st in steps:
                st = _substitute(
                    {k: v for k, v in st.items() if k != "withItems"}, self.globals() | svars, strict=False
                ) | ({"withItems": st["withItems"]} if "withItems" in st else {})
                check_resolved(st.get("arguments", {}), "steps.")
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
                        self._init_node(
                            child,
                            "Skipped",
                            st.get("template", ""),
                            scope,
                            steps_node.id,
                            "Skipped",
                            f"when '{st['when']}' evaluated false",
                        )
                        self._add_child(sg.name, child)
                    continue
            try:
                n = self.execute_template(
                    child, st, scope, st.get("arguments", {}), boundary=steps_node.id, on_exit=on_exit
                )
            except ParallelismReached:
                continue
            if n is not None:
                by_child[n.name] = st
                self._add_child(sg.name, child)
        kids = self._kids(sg)
        if not all(k.fulfilled for k in kids):
            return sg
        for k in kids:
            cont = (by_child.get(k.name) or {}).get("continueOn") or {}
            if k.failed_or_error and not (
                (k.phase == "Failed" and cont.get("failed")) or (k.phase == "Error" and cont.get("error"))
            ):
                return self._mark(sg, "Failed", f"child '{k.id}' failed")
        return self._mark(sg, "Succeeded")
