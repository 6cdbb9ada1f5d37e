"""Issue 40: no function of workflows/ over 120 lines or 8 parameters (pipeline_template was 208 lines,
experiment_template 294, before the spec and the point task were written once, workflows/template_spec.py)."""

from __future__ import annotations

import ast

from tests.support.paths import REPO

MAX_LINES, MAX_PARAMS = 120, 8


def test_every_workflows_function_is_small():
    too_big = []
    for f in sorted((REPO / "workflows").glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                params = len(a.posonlyargs + a.args + a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES or params > MAX_PARAMS:
                    too_big.append(f"{f.name}:{node.lineno} {node.name}: {lines} lines, {params} parameters")
    assert too_big == [], "split these into named helpers:\n" + "\n".join(too_big)
