"""Argo's small expression languages, as the controller evaluates them (Argo Workflows v4.1.2).

- DAG `depends` / `dependencies`: workflow/common/ancestry.go (GetTaskDependencies, expandDependency,
  ValidateTaskResults) and workflow/controller/dag.go (evaluateDependsLogic, TaskResults).
- `retryStrategy.expression` and `when`: expr-lang booleans (util/expr/argoexpr EvalBool); here a safe
  subset: literals, dotted names, == != < <= > >=, && || !, and/or/not, parentheses, asInt/asFloat/string.
"""

from __future__ import annotations

import ast
import re
from typing import Any, Callable

# ancestry.go: taskNameRegex / taskResultRegex, verbatim.
TASK_NAME_RE = re.compile(r"([a-zA-Z0-9][-a-zA-Z0-9]*?\.[A-Z][a-zA-Z]+)|([a-zA-Z0-9][-a-zA-Z0-9]*)")
TASK_RESULT_RE = re.compile(r"([a-zA-Z0-9][-a-zA-Z0-9]*?\.[A-Z][a-zA-Z]+)")
RESULTS = ("Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed")
ITEMS_RESULTS = ("AnySucceeded", "AllFailed")


class ExprError(ValueError):
    pass


def expand_dependency(dep: str, dep_task: dict[str, Any]) -> str:
    """ancestry.go expandDependency: a bare `A` means A succeeded, was skipped or is daemoned (plus
    Errored/Failed when A has continueOn error/failed)."""
    parts = [f"{dep}.Succeeded", f"{dep}.Skipped", f"{dep}.Daemoned"]
    cont = dep_task.get("continueOn") or {}
    if cont.get("error"):
        parts.append(f"{dep}.Errored")
    if cont.get("failed"):
        parts.append(f"{dep}.Failed")
    return "(" + " || ".join(parts) + ")"


def depends_logic(task: dict[str, Any], tasks: dict[str, dict[str, Any]]) -> str:
    """ancestry.go getTaskDependsLogic: `depends` as written, or `dependencies` joined with &&."""
    if task.get("depends"):
        return task["depends"]
    return " && ".join(expand_dependency(d, tasks.get(d, {})) for d in task.get("dependencies") or [])


def task_dependencies(task: dict[str, Any], tasks: dict[str, dict[str, Any]]) -> tuple[dict[str, str], str]:
    """ancestry.go GetTaskDependencies: ({dep: "task"|"items"}, the depends logic with bare names expanded)."""
    logic = depends_logic(task, tasks)
    deps: dict[str, str] = {}
    expansions = []
    for mt in TASK_NAME_RE.finditer(logic):
        if mt.group(1):
            name, result = mt.group(1).split(".", 1)
            if result in ITEMS_RESULTS:
                deps[name] = "items"
            else:
                deps.setdefault(name, "task")
        else:
            deps[mt.group(2)] = "task"
            expansions.append((mt.start(2), mt.end(2), mt.group(2)))
    for start, end, name in sorted(expansions, reverse=True):
        logic = logic[:start] + expand_dependency(name, tasks.get(name, {})) + logic[end:]
    return deps, logic


def validate_task_results(depends: str) -> str | None:
    """ancestry.go ValidateTaskResults: the error text for an unknown `.Result`, or None."""
    for mt in TASK_RESULT_RE.finditer(depends or ""):
        name, result = mt.group(1).split(".", 1)
        if result not in RESULTS:
            return f"task result '{result}' for task '{name}' is invalid"
    return None


def eval_depends(logic: str, results: dict[str, dict[str, bool]]) -> bool:
    """dag.go evaluateDependsLogic: `-` in task names becomes `_`, then expr-lang evaluates the booleans."""
    scope = {name.replace("-", "_"): r for name, r in results.items()}
    return eval_bool(logic.replace("-", "_"), scope)


# ---- expr-lang subset ------------------------------------------------------------------------------
_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\')|(?P<num>\d+(?:\.\d+)?)|'
    r"(?P<op>&&|\|\||==|!=|<=|>=|<|>|!|\(|\)|,)|(?P<name>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*))"
)
_FUNCS: dict[str, Callable[[Any], Any]] = {
    "asInt": lambda v: int(float(v)) if isinstance(v, str) and "." in v else int(v),
    "asFloat": float,
    "string": str,
    "int": int,
    "float": float,
}


def eval_bool(expr: str, scope: dict[str, Any]) -> bool:
    """Evaluate an expr-lang boolean over `scope` (nested dicts or dotted keys). Anything outside the
    subset is an error naming the expression, never a Python eval."""
    py: list[str] = []
    pos = 0
    text = expr.strip()
    while pos < len(text):
        mt = _TOKEN.match(text, pos)
        if not mt or mt.end() == pos:
            raise ExprError(f"unable to evaluate expression '{expr}': unexpected {text[pos:]!r}")
        pos = mt.end()
        if mt.group("str") is not None:
            py.append(repr(ast.literal_eval(mt.group("str"))))
        elif mt.group("num") is not None:
            py.append(mt.group("num"))
        elif mt.group("op") is not None:
            py.append({"&&": " and ", "||": " or ", "!": " not "}.get(mt.group("op"), mt.group("op")))
        else:
            name = mt.group("name")
            py.append(
                {"and": " and ", "or": " or ", "not": " not ", "true": "True", "false": "False", "nil": "None"}.get(
                    name, "_v(" + repr(name) + ")" if name not in _FUNCS else name
                )
            )
    src = "".join(py).strip()
    try:
        tree = ast.parse(src, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"unable to evaluate expression '{expr}': {e.msg}") from None

    def lookup(name: str) -> Any:
        if name in scope:
            return scope[name]
        cur: Any = scope
        for part in name.split("."):
            if isinstance(cur, dict) and part in cur:
                cur = cur[part]
            else:
                raise ExprError(f"unable to evaluate expression '{expr}': unknown name {name}")
        return cur

    def ev(n: ast.AST) -> Any:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.BoolOp):
            vals = (ev(v) for v in n.values)
            return all(vals) if isinstance(n.op, ast.And) else any(vals)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            return not ev(n.operand)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Compare):
            left = ev(n.left)
            for op, right_n in zip(n.ops, n.comparators, strict=False):
                right = ev(right_n)
                if isinstance(op, ast.Eq):
                    ok = (
                        type(left) is type(right)
                        and left == right
                        or (isinstance(left, (int, float)) and isinstance(right, (int, float)) and left == right)
                    )
                elif isinstance(op, ast.NotEq):
                    ok = not (
                        left == right
                        and (
                            type(left) is type(right)
                            or (isinstance(left, (int, float)) and isinstance(right, (int, float)))
                        )
                    )
                else:
                    if isinstance(left, str) != isinstance(right, str):
                        raise ExprError(
                            f"unable to evaluate expression '{expr}': cannot compare "
                            f"{type(left).__name__} and {type(right).__name__}"
                        )
                    ok = {ast.Lt: left < right, ast.LtE: left <= right, ast.Gt: left > right, ast.GtE: left >= right}[
                        type(op)
                    ]
                if not ok:
                    return False
                left = right
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
            if n.func.id == "_v":
                return lookup(n.args[0].value)  # type: ignore[attr-defined]
            if n.func.id in _FUNCS and len(n.args) == 1:
                try:
                    return _FUNCS[n.func.id](ev(n.args[0]))
                except (TypeError, ValueError) as e:
                    raise ExprError(f"unable to evaluate expression '{expr}': {e}") from None
        raise ExprError(f"unable to evaluate expression '{expr}': unsupported syntax")

    out = ev(tree)
    if not isinstance(out, bool):
        raise ExprError(f"unable to evaluate expression '{expr}': expected bool, got {out!r}")
    return out
