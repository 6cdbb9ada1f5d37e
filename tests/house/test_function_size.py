"""Small functions and small modules (issue 40, "Done when"): no function in infersweep/, workflows/ or steps/
over 120 lines or 8 parameters (self and cls not counted; *args and **kwargs count one each), no module over
600 lines. A function past either limit does several things or takes values that travel together: split it
into phases, or pass one value object (e.g. infersweep.platform.operations.DeployRequest).

PENDING lists the offenders being split on another branch when this test was written: the lead empties it at
merge. An entry that is back within the limits fails too, so the list only shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import REPO

CHECKED = ("infersweep", "workflows", "steps")
MAX_LINES = 120
MAX_PARAMS = 8
MAX_MODULE_LINES = 600

# Being split on another branch (issue 40 items 1 and 2): "path:function", or "path" for a module.
PENDING: set[str] = set()  # every offender of issue 40 was split (tiers, errors, limits, rooms)


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    a = fn.args
    names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]
    names += [p.arg for p in (a.vararg, a.kwarg) if p is not None]
    return len([n for n in names if n not in ("self", "cls")])


def oversized(source: str, rel: str) -> dict[str, str]:
    """What in one module is past the limits: key ("path:function" or "path") -> how far."""
    found: dict[str, str] = {}
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        found[rel] = f"{lines} lines (at most {MAX_MODULE_LINES})"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            params = _params(node)
            over = [f"{length} lines"] * (length > MAX_LINES) + [f"{params} parameters"] * (params > MAX_PARAMS)
            if over:
                found[f"{rel}:{node.name}"] = f"line {node.lineno}: {', '.join(over)}"
    return found


def _tree() -> dict[str, str]:
    found: dict[str, str] = {}
    for top in CHECKED:
        for path in sorted((REPO / top).rglob("*.py")):
            found |= oversized(path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix())
    return found


@pytest.fixture(scope="module")
def tree() -> dict[str, str]:
    return _tree()


def test_no_function_or_module_past_the_limits(tree):
    new = {k: v for k, v in tree.items() if k not in PENDING}
    assert not new, (
        f"past the limits ({MAX_LINES} lines or {MAX_PARAMS} parameters a function, {MAX_MODULE_LINES} lines a "
        "module): split the function into phases or pass the values that travel together as one object:\n"
        + "\n".join(f"  {k}: {v}" for k, v in sorted(new.items()))
    )


def test_the_pending_list_only_names_real_offenders(tree):
    back = sorted(PENDING - set(tree))
    assert not back, f"within the limits now (or gone): remove from PENDING in {Path(__file__).name}: {back}"


def test_the_check_finds_a_long_function_and_a_long_parameter_list():
    wide = "def f(self, a, b, c, d, e, f, g, h, *rest):\n    return a\n"
    long = "def g():\n" + "    x = 1\n" * MAX_LINES
    small = "class C:\n    def ok(self, a, b, c, d, e, f, g, h):\n        return a\n"
    assert oversized(wide, "m.py") == {"m.py:f": "line 1: 9 parameters"}
    assert oversized(long, "m.py") == {"m.py:g": f"line 1: {MAX_LINES + 1} lines"}
    assert oversized(small, "m.py") == {}
    assert "m.py" in oversized("x = 1\n" * (MAX_MODULE_LINES + 1), "m.py")
