"""What `argo submit` rejects before a workflow runs (Argo Workflows v4.1.2 workflow/validate/validate.go),
and what this local executor cannot run, each named, before any process starts.

Encoded from validate.go validateDAG: a DAG needs a task; `depends` and `dependencies` are not mixed;
`continueOn` is not used with `depends`; task names do not begin with a digit when dependencies are used;
task results are valid (ancestry.go ValidateTaskResults); every dependency is defined; `.AnySucceeded`/
`.AllFailed` only on a task with items; no cycles (verifyNoCycles); targets are defined
(validateDAGTargets); an argument whose value starts with `{{tasks.X` names an ancestor of the task
(validateDAGTaskArgumentDependency: "missing dependency 'X' for parameter 'P'"); a `{{tasks.X.outputs.
parameters.Y}}` reference names an output X's template declares and `{{tasks.X.status}}` an ancestor
(resolveAllVariables + addOutputsToScope: "failed to resolve {{...}}").
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from infersweep.local.argo import expr as argo_expr
from infersweep.local.argo import pvc as argo_pvc
from infersweep.local.argo.errors import WorkflowError


class LocalArgo(Protocol):
    """What validation reads of the operator (operator.LocalArgo): its merged spec, its global parameters and
    its template resolution. A shape, not an import: the operator calls validation, never the reverse."""

    spec: dict[str, Any]
    params: dict[str, str]

    def resolve(self, holder: dict[str, Any], scope: str) -> tuple[dict[str, Any], str]: ...


_TAG = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
UNSUPPORTED_TEMPLATE_KINDS = ("suspend", "data", "http", "plugin", "containerSet")


def _err(msg: str) -> Exception:
    return WorkflowError(msg)


def validate_workflow(argo: "LocalArgo") -> None:
    spec = argo.spec
    if not spec.get("entrypoint"):
        raise _err("spec.entrypoint is required")
    for feature, why in (
        ("hooks", "workflow lifecycle hooks are"),
        ("podSpecPatch", "pod spec patches are"),
        ("retryStrategy", "a workflow-wide default retryStrategy (operator.go retryStrategy) is"),
        ("templateDefaults", "templateDefaults are"),
    ):
        if spec.get(feature):
            raise _err(f"spec.{feature}: {why} not supported by the local executor")
    _check_sync(spec.get("synchronization"), "spec")
    argo_pvc.check(spec)
    text = json.dumps({k: v for k, v in spec.items() if k != "_scope"})
    if "{{=" in text:
        # util/template/template.go replace: kindExpression tags are expr-lang programs over the whole scope
        raise _err("expression tags {{=...}} are not supported by the local executor (use plain {{...}} tags)")
    mt = _RESULT_TAG.search(text)
    if mt:
        raise _err(
            f"{{{{{mt.group(0)}}}}}: outputs.result (a template's captured stdout) is not supported by the local "
            "executor; write an output parameter file instead"
        )
    seen: set[tuple[str, str]] = set()
    holders = [({"template": spec["entrypoint"]}, spec.get("_scope", ""))]
    if spec.get("onExit"):
        holders.append(({"template": spec["onExit"]}, spec.get("_scope", "")))
    while holders:
        holder, scope = holders.pop()
        tmpl, tscope = argo.resolve(holder, scope)
        key = (tscope, tmpl["name"])
        if key in seen:
            continue
        seen.add(key)
        holders += [(h, tscope) for h in _check_template(argo, tmpl, tscope)]


_RESULT_TAG = re.compile(r"(?:tasks|steps)\.[^{}.]+\.outputs\.result")


def _check_sync(sync: dict[str, Any] | None, where: str) -> None:
    # v4 pkg/apis/workflow/v1alpha1/workflow_types.go Synchronization has only `semaphores` and `mutexes`: the
    # singular fields are gone, so a cluster drops them (no lock at all); here they are refused by name.
    for old, new in (("semaphore", "semaphores"), ("mutex", "mutexes")):
        if sync and old in sync:
            raise _err(
                f"{where}.synchronization.{old}: unknown field (removed in Argo v4; use synchronization.{new}, a list)"
            )


def _check_template(argo: "LocalArgo", tmpl: dict[str, Any], scope: str) -> list[dict[str, Any]]:
    name = tmpl["name"]
    _check_sync(tmpl.get("synchronization"), f"templates.{name}")
    leaf = "dag" not in tmpl and "steps" not in tmpl
    if not leaf:
        kind = "DAG" if "dag" in tmpl else "Steps"
        if tmpl.get("activeDeadlineSeconds") is not None:  # validate.go validateNonLeaf
            raise _err(f"templates.{name}.activeDeadlineSeconds is only valid for leaf templates")
        if tmpl.get("timeout"):  # validate.go validateTemplate (IsLeaf)
            raise _err(f"{kind} template doesn't support timeout field")
    elif tmpl.get("parallelism") is not None:  # validate.go validateLeaf
        raise _err(f"templates.{name}.parallelism is only valid for steps and dag templates")
    if tmpl.get("podSpecPatch"):
        raise _err(f"templates.{name}.podSpecPatch: pod spec patches are not supported by the local executor")
    text = json.dumps(tmpl)
    if "{{=" in text:
        raise _err(
            f"templates.{name}: expression tags {{{{=...}}}} are not supported by the local executor (use plain {{{{...}}}} tags)"
        )
    mt = _RESULT_TAG.search(text)
    if mt:
        raise _err(
            f"templates.{name}: {{{{{mt.group(0)}}}}}: outputs.result (a template's captured stdout) is not supported "
            "by the local executor; write an output parameter file instead"
        )
    for kind in UNSUPPORTED_TEMPLATE_KINDS:
        if kind in tmpl:
            raise _err(
                f"templates.{name}: {kind} templates are not supported by the local executor "
                "(supported: dag, steps, container, script, resource create)"
            )
    for feature in ("memoize", "daemon", "sidecars", "hooks"):
        if tmpl.get(feature):
            raise _err(f"templates.{name}.{feature} is not supported by the local executor")
    if (tmpl.get("inputs") or {}).get("artifacts"):
        raise _err(f"templates.{name}.inputs.artifacts: input artifacts are not supported by the local executor")
    if "steps" in tmpl:
        holders = []
        for i, group in enumerate(tmpl["steps"] or []):
            for st in group.get("steps", []) if isinstance(group, dict) else group:
                for feature in ("hooks", "onExit", "inline"):
                    if st.get(feature):
                        raise _err(
                            f"templates.{name}.steps[{i}].{st['name']}.{feature} is not supported by the local executor"
                        )
                try:
                    argo.resolve(st, scope)
                except Exception as e:
                    raise _err(f"templates.{name}.steps[{i}].{st['name']} {e}") from None
                holders.append({k: v for k, v in st.items() if k in ("template", "templateRef")})
        return holders
    if "resource" in tmpl:
        from infersweep.local.argo.resource import check_template

        check_template(tmpl)
        return []
    if "dag" not in tmpl:
        if "container" not in tmpl and "script" not in tmpl:
            raise _err(f"templates.{name} template type unspecified. choose one of: container, dag, steps, script")
        return []
    return _check_dag(argo, tmpl, scope)


def _check_dag(argo: "LocalArgo", tmpl: dict[str, Any], scope: str) -> list[dict[str, Any]]:
    name = tmpl["name"]
    tasks_list = tmpl["dag"].get("tasks") or []
    if not tasks_list:
        raise _err(f"templates.{name} must have at least one task")
    tasks = {t["name"]: t for t in tasks_list}
    using_depends = any(t.get("depends") for t in tasks_list)
    resolved: dict[str, dict[str, Any]] = {}
    for t in tasks_list:
        tn = t["name"]
        if (using_depends or t.get("dependencies")) and tn[:1].isdigit():
            raise _err(
                f"templates.{name}.tasks.{tn} name cannot begin with a digit when using either 'depends' or 'dependencies'"
            )
        if using_depends and t.get("dependencies"):
            raise _err(f"templates.{name} cannot use both 'depends' and 'dependencies' in the same DAG template")
        if using_depends and t.get("continueOn"):
            raise _err(
                f"templates.{name} cannot use 'continueOn' when using 'depends'. Instead use 'dep-task.Failed'/'dep-task.Errored'"
            )
        for feature in ("hooks", "onExit", "inline"):
            if t.get(feature):
                raise _err(f"templates.{name}.tasks.{tn}.{feature} is not supported by the local executor")
        if (t.get("arguments") or {}).get("artifacts"):
            raise _err(
                f"templates.{name}.tasks.{tn}.arguments.artifacts: artifact passing is not supported by the local executor"
            )
        try:
            resolved[tn] = argo.resolve(t, scope)[0]
        except Exception as e:
            raise _err(f"templates.{name}.tasks.{tn} {e}") from None
        err = argo_expr.validate_task_results(t.get("depends", ""))
        if err:
            raise _err(f"templates.{name}.tasks.{tn} {err}")
        deps, _ = argo_expr.task_dependencies(t, tasks)
        for dep, kind in deps.items():
            if dep not in tasks:
                raise _err(f"templates.{name}.tasks.{tn} dependency '{dep}' not defined")
            d = tasks[dep]
            if kind == "items" and not (d.get("withItems") or d.get("withParam") or d.get("withSequence")):
                raise _err(
                    f"templates.{name}.tasks.{tn} dependency '{dep}' uses an items-based condition such as "
                    ".AnySucceeded or .AllFailed but does not contain any items"
                )
    _no_cycles(name, tasks)
    target = tmpl["dag"].get("target")
    if target:
        for tg in target.split(" "):
            if not tg.startswith("{{") and tg not in tasks:
                raise _err(f"templates.{name}.targets: target '{tg}' is not defined")
    for t in tasks_list:
        tn = t["name"]
        anc = _ancestry(tn, tasks)
        for p in (t.get("arguments") or {}).get("parameters") or []:
            v = p.get("value")
            if isinstance(v, str) and v.startswith("{{tasks."):
                ref = v.split(".")[1]
                if ref not in anc:
                    raise _err(f"templates.{name}.tasks.{tn} missing dependency '{ref}' for parameter '{p['name']}'")
        text = json.dumps(t)
        inputs = {p["name"] for p in (tmpl.get("inputs") or {}).get("parameters") or []}
        has_items = any(t.get(k) for k in ("withItems", "withParam", "withSequence"))
        for mt in _TAG.finditer(text):
            tag = mt.group(1).strip()
            if tag.startswith("inputs.parameters.") and tag[len("inputs.parameters.") :] not in inputs:
                raise _err(f"templates.{name}.tasks.{tn} failed to resolve {{{{{tag}}}}}")
            if tag.startswith("workflow.parameters.") and tag[len("workflow.parameters.") :] not in argo.params:
                raise _err(f"templates.{name}.tasks.{tn} failed to resolve {{{{{tag}}}}}")
            if (tag == "item" or tag.startswith("item.")) and not has_items:
                raise _err(f"templates.{name}.tasks.{tn} failed to resolve {{{{{tag}}}}}")
            if not tag.startswith("tasks."):
                continue
            parts = tag.split(".")
            ref = parts[1] if len(parts) > 1 else ""
            ok = ref in tasks
            if ok and parts[2:3] == ["outputs"]:
                outs = {p["name"] for p in (resolved[ref].get("outputs") or {}).get("parameters") or []}
                items = any(tasks[ref].get(k) for k in ("withItems", "withParam", "withSequence"))
                if parts[3:4] == ["parameters"]:
                    ok = (len(parts) == 5 and parts[4] in outs) or (len(parts) == 4 and items)
                elif parts[3:4] == ["result"]:
                    ok = "script" in resolved[ref]
                else:
                    ok = False
            elif ok and parts[2:3] == ["status"]:
                ok = ref in anc
            elif ok:
                ok = len(parts) == 3 and parts[2] in ("id", "startedAt", "finishedAt", "hostNodeName", "exitCode")
            if not ok:
                raise _err(f"templates.{name}.tasks.{tn} failed to resolve {{{{{tag}}}}}")
    return [{k: v for k, v in t.items() if k in ("template", "templateRef")} for t in tasks_list]


def _ancestry(task: str, tasks: dict[str, dict[str, Any]]) -> set[str]:
    # ancestry.go GetTaskAncestry
    out: set[str] = set()
    stack = list(argo_expr.task_dependencies(tasks[task], tasks)[0])
    while stack:
        d = stack.pop()
        if d in tasks and d not in out:
            out.add(d)
            stack += list(argo_expr.task_dependencies(tasks[d], tasks)[0])
    return out


def _no_cycles(name: str, tasks: dict[str, dict[str, Any]]) -> None:
    # validate.go verifyNoCycles
    visited: set[str] = set()

    def walk(t: str, path: list[str]) -> None:
        for d in argo_expr.task_dependencies(tasks[t], tasks)[0]:
            if d in path:
                raise _err(f"templates.{name}.tasks dependency cycle detected: {'->'.join(path + [d])}")
            if d in tasks and d not in visited:
                walk(d, path + [d])
        visited.add(t)

    for t in tasks:
        walk(t, [t])
