"""The step pods' Role grants exactly what the steps' own code calls, derived from that code.

Every Kubernetes API call the steps make (steps/*.py and every module they import, directly or not: the DGD
adapters of infersweep/platform, the work moved down into infersweep/, found through the import graph that
import-linter's grimp builds, function-level imports included) is found by reading the source (AST): a method
of the real
`kubernetes` client classes (CoreV1Api, CustomObjectsApi, ...) called on anything. Its name gives the verb
(read -> get, list, create, patch, delete, replace -> update; list_* passed to watch.Watch().stream -> watch)
and the resource (`read_namespaced_pod_log` -> pods/log; custom objects: the group and plural arguments,
resolved through the module's constants). The Role from workflows.cluster.steps_role() must grant
every (group, resource, verb) used, and nothing else, except what Argo's executor itself needs
(workflowtaskresults). A new call without a grant, or a grant nobody uses any more, fails here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import kubernetes.client as kc

from tests.support.paths import REPO

STEPS = REPO / "steps"
# steps/reap.py (infersweep/platform/reaper.py) runs in the reaper CronWorkflow under its own ServiceAccount
# and Role (reaper_role).
REAP_STEP = "steps.reap"
API_CLASSES = [getattr(kc, n) for n in dir(kc) if n.endswith("Api") and isinstance(getattr(kc, n), type)]
VERBS = {
    "read": "get",
    "get": "get",
    "list": "list",
    "create": "create",
    "patch": "patch",
    "delete": "delete",
    "replace": "update",
}
EXECUTOR = {("argoproj.io", "workflowtaskresults", "create"), ("argoproj.io", "workflowtaskresults", "patch")}
_METHOD = re.compile(r"^(read|get|list|create|patch|delete|replace)_(namespaced_)?([a-z_]+?)(_for_all_namespaces)?$")


def _is_k8s_method(name: str) -> bool:
    return bool(_METHOD.match(name)) and any(hasattr(c, name) for c in API_CLASSES)


def _plural(kind: str) -> str:
    for sub in ("log", "status", "exec", "scale", "eviction", "binding"):
        if kind.endswith("_" + sub):
            return f"{_plural(kind[: -len(sub) - 1])}/{sub}"
    word = kind.replace("_", "")
    return word + ("es" if word.endswith("s") else "s")


def _const(module: str, node: ast.AST) -> str:
    if isinstance(node, ast.Constant):
        return str(node.value)
    if isinstance(node, ast.Name):
        return str(getattr(importlib.import_module(module), node.id))
    raise AssertionError(f"{module}: custom-object call with a non-constant group/plural: {ast.dump(node)}")


def _module(f: Path) -> str:
    return ".".join(f.relative_to(REPO).with_suffix("").parts)


def _source(module: str) -> Path:
    path = REPO.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def step_code(*steps: str) -> list[Path]:
    """The source files of the step modules `steps` and of every project module they import, directly or not."""
    import grimp  # import-linter's import graph (function-level imports count)

    graph = grimp.build_graph("infersweep", "steps", "workflows", cache_dir=None)
    modules = set(steps)
    for step in steps:
        modules |= graph.find_upstream_modules(step)
    return sorted(_source(m) for m in modules)


def pipeline_step_code() -> list[Path]:
    """What the pipeline's step pods run (every steps/ module but the reaper's, and what they import)."""
    return step_code(
        *(
            f"steps.{f.stem}"
            for f in sorted(STEPS.glob("*.py"))
            if f.stem != "__init__" and f"steps.{f.stem}" != REAP_STEP
        )
    )


def used_permissions(files: list[Path] | None = None) -> dict[tuple[str, str, str], list[str]]:
    """(apiGroup, resource, verb) -> where it is used (the pipeline steps and what they import unless `files`)."""
    used: dict[tuple[str, str, str], list[str]] = {}
    if files is None:
        files = pipeline_step_code()
    for f in files:
        module = _module(f)
        tree = ast.parse(f.read_text(), str(f))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            name = node.func.attr
            watched = None
            if name == "stream" and node.args and isinstance(node.args[0], ast.Attribute):
                watched = node.args[0].attr  # watch.Watch().stream(core.list_namespaced_pod, ...)
            for meth, verb_override in ((name, None), (watched, "watch")):
                if not meth or not _is_k8s_method(meth):
                    continue
                op, _, kind, _ = _METHOD.match(meth).groups()
                if kind in ("custom_object", "cluster_custom_object"):
                    group, plural = (
                        _const(module, node.args[0]),
                        _const(module, node.args[3 if "namespaced" in meth else 2]),
                    )
                    key = (group, plural, verb_override or VERBS[op])
                else:
                    key = ("", _plural(kind), verb_override or VERBS[op])
                used.setdefault(key, []).append(f"{f.relative_to(REPO)}:{node.lineno} {meth}")
    return used


def granted_permissions(role: dict) -> set[tuple[str, str, str]]:
    out = set()
    for rule in role["rules"]:
        assert "*" not in rule["verbs"] and "*" not in rule["resources"], f"wildcard in {rule}"
        for g in rule["apiGroups"]:
            for r in rule["resources"]:
                for v in rule["verbs"]:
                    out.add((g, r, v))
    return out


def test_the_scan_finds_the_calls_the_steps_make():
    used = used_permissions()
    # The deploy/teardown calls of infersweep/platform/kube.py: if these are not found, the scan is broken.
    assert ("nvidia.com", "dynamographdeployments", "create") in used
    assert ("nvidia.com", "dynamographdeployments", "delete") in used
    assert ("", "persistentvolumeclaims", "get") in used


def test_the_scan_covers_the_code_the_steps_call():
    """A step is its parsing plus one call into infersweep/: the scan must read that code too, wherever it moves."""
    scanned = {f.relative_to(REPO).as_posix() for f in pipeline_step_code()}
    assert {
        "steps/deploy.py",
        "infersweep/platform/kube.py",
        "infersweep/platform/operations.py",
        "infersweep/platform/readiness.py",
        "infersweep/model_cache.py",
        "infersweep/results/server_metrics.py",
        "infersweep/results/baseline.py",
        "infersweep/results/s3.py",
        "infersweep/results/publish.py",
    } <= scanned
    assert "infersweep/platform/reaper.py" not in scanned and not any(
        f.startswith("infersweep/local/") for f in scanned
    )
    assert {f.relative_to(REPO).as_posix() for f in step_code(REAP_STEP)} >= {
        "steps/reap.py",
        "infersweep/platform/reaper.py",
    }


def test_role_grants_exactly_what_the_steps_use():
    from workflows.cluster import steps_role

    role = steps_role()
    assert role["kind"] == "Role", "namespaced Role, never a ClusterRole"
    used = used_permissions()
    granted = granted_permissions(role)
    missing = sorted(set(used) - granted)
    assert not missing, "used by the steps but not granted (the step would get 403):\n" + "\n".join(
        f"  {k}: {used[k]}" for k in missing
    )
    unused = sorted(granted - set(used) - EXECUTOR)
    assert not unused, f"granted but no step uses it (remove from workflows/cluster.py steps_role()): {unused}"
    assert not any(r == "secrets" for _, r, _ in granted), "Secrets reach steps as env, never through the API"


def test_reaper_role_grants_exactly_what_the_reaper_uses():
    from workflows.cluster import reaper_role

    role = reaper_role()
    assert role["kind"] == "Role"
    used = used_permissions(step_code(REAP_STEP))
    assert ("argoproj.io", "workflows", "list") in used and ("nvidia.com", "dynamographdeployments", "delete") in used
    granted = granted_permissions(role)
    assert set(used) <= granted, sorted(set(used) - granted)
    assert not granted - set(used) - EXECUTOR, sorted(granted - set(used) - EXECUTOR)
