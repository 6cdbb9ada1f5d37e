"""Least privilege per step pod, derived from the steps' own code.

Every Kubernetes API call is found by reading the source (AST): a method of the real `kubernetes` client
classes (CoreV1Api, CustomObjectsApi, ...) called on anything. Its name gives the verb (read -> get, list,
create, patch, delete, replace -> update; list_* passed to watch.Watch().stream -> watch) and the resource
(`read_namespaced_pod_log` -> pods/log; custom objects: the group and plural arguments, resolved through the
module's constants).

Which calls a step makes: a call graph from the step module (`reachable_calls`), over the modules of its
import closure (import-linter's grimp graph, function-level imports included). The import closure alone is
too coarse: nearly every step imports a module that imports infersweep/platform/kube.py.

Then, for every pod of the install set (each template running `python -m steps.X`, its initContainers
included): a pod whose code calls no API holds no token (automountServiceAccountToken false, with the
executor account Argo requires); one that does runs as an account whose Role grants exactly its calls, plus
what Argo's executor needs (workflowtaskresults). A new call without a grant, a grant nobody uses any more,
or a token in a pod that needs none fails here.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import kubernetes.client as kc
import pytest

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
        for key, where in _calls_in(module, ast.parse(f.read_text(), str(f))).items():
            used.setdefault(key, []).extend(where)
    return used


_HTTP_VERBS = {"POST": "create", "PATCH": "patch", "DELETE": "delete", "PUT": "update"}


def _raw_call(module: str, node: ast.Call) -> tuple[str, str, str]:
    """(apiGroup, resource, verb) of an ApiClient.call_api on a custom-object path, from its constant path, method
    and path_params: GET on the collection is list, on `{name}` get (the generated methods' own mapping)."""
    path, method, params = node.args[0], node.args[1], node.args[2]
    assert isinstance(path, ast.Constant) and isinstance(method, ast.Constant) and isinstance(params, ast.Dict), (
        f"{module}:{node.lineno}: call_api with a non-constant path, method or path_params"
    )
    assert str(path.value).startswith("/apis/{group}/"), f"{module}:{node.lineno}: call_api on {path.value}"
    values = {_const(module, k): v for k, v in zip(params.keys, params.values, strict=True) if k is not None}
    verb = _HTTP_VERBS.get(method.value) or ("get" if "{name}" in path.value else "list")
    return _const(module, values["group"]), _const(module, values["plural"]), verb


def _calls_in(module: str, tree: ast.AST) -> dict[tuple[str, str, str], list[str]]:
    """The Kubernetes API calls written in `tree` (a module's AST or one function's)."""
    used: dict[tuple[str, str, str], list[str]] = {}
    f = _source(module)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        name = node.func.attr
        if name == "call_api":  # ApiClient.call_api(path, method, path_params, ...): what the generated methods end in
            key = _raw_call(module, node)
            used.setdefault(key, []).append(f"{f.relative_to(REPO)}:{node.lineno} call_api")
            continue
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


# ---------------------------------------------------------------------------------------------------------------
# Per step: the calls its own code reaches. The import graph above is too coarse for that (nearly every step
# imports a module that imports infersweep/platform/kube.py), so here a call graph, over-approximated where
# Python hides the target: a name resolves through the module's imports (function-level ones too); `x.meth`
# on anything but a module resolves to every method `meth` of every class in the step's import closure (so
# `platform.delete_dgd(...)` on the Platform that get_platform() returns reaches KubernetesPlatform.delete_dgd);
# a reference counts as a call (callbacks: main_of(main, ...), watch.stream(core.list_...)).

_Node = tuple[str, str]  # (module, top-level name or "Class.method" or "<module>")


def _module_index(module: str) -> tuple[dict[str, ast.AST], dict[str, tuple[str, str | None]]]:
    """Top-level names and methods -> their AST, and the import table (local name -> (module, attr|None))."""
    tree = ast.parse(_source(module).read_text())
    defs: dict[str, ast.AST] = {"<module>": ast.Module(body=[], type_ignores=[])}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[node.name] = node
        elif isinstance(node, ast.ClassDef):
            defs[node.name] = node
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    defs[f"{node.name}.{item.name}"] = item
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(t, ast.Name):
                    defs[t.id] = node
            defs["<module>"].body.append(node)
        elif not isinstance(node, (ast.Import, ast.ImportFrom)):
            defs["<module>"].body.append(node)  # if __name__ == "__main__": main_of(main, ...)
    imports: dict[str, tuple[str, str | None]] = {}
    package = module if _source(module).name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                imports[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # from .x import y / from . import y
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for a in node.names:
                imports[a.asname or a.name] = (base, a.name)
    return defs, imports


def reachable_calls(step: str) -> dict[tuple[str, str, str], list[str]]:
    """(apiGroup, resource, verb) -> where, for the calls reachable from the step module `step`."""
    modules = {_module(f) for f in step_code(step)}
    index = {mod: _module_index(mod) for mod in modules}
    methods: dict[str, list[_Node]] = {}
    for mod, (defs, _) in index.items():
        for q in defs:
            if "." in q:
                methods.setdefault(q.split(".", 1)[1], []).append((mod, q))

    def resolve(mod: str, name: str, depth: int = 0) -> list[_Node]:
        if mod not in index or depth > 5:
            return []
        defs, imports = index[mod]
        if name in defs:
            node = defs[name]
            if isinstance(node, ast.ClassDef):  # a call makes an instance: __init__ runs, methods by name
                return [(mod, f"{name}.{m}") for m in ("__init__", "__post_init__") if f"{name}.{m}" in defs]
            return [(mod, name)]
        if name in imports:
            target, attr = imports[name]
            if attr is None or f"{target}.{attr}" in index:
                return []  # a module: its attributes resolve below
            return resolve(target, attr, depth + 1)
        return []

    def module_alias(mod: str, name: str) -> str | None:
        target, attr = index[mod][1].get(name, (None, None))
        if target is None:
            return None
        full = f"{target}.{attr}" if attr else target
        return full if full in index else None

    def edges(node: _Node) -> set[_Node]:
        mod, q = node
        out: set[_Node] = set()
        for n in ast.walk(index[mod][0][q]):
            if isinstance(n, ast.Name):
                out.update(resolve(mod, n.id))
            elif isinstance(n, ast.Attribute):
                alias = module_alias(mod, n.value.id) if isinstance(n.value, ast.Name) else None
                out.update(resolve(alias, n.attr) if alias else methods.get(n.attr, []))
        return out

    seen: set[_Node] = set()
    todo = [(step, "<module>")]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        todo.extend(edges(node) - seen)
    used: dict[tuple[str, str, str], list[str]] = {}
    for mod, q in seen:
        for key, where in _calls_in(mod, index[mod][0][q]).items():
            used.setdefault(key, []).extend(where)
    return used


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


def test_the_call_graph_tells_the_steps_apart():
    """Through the import graph every step reaches kube.py; through the call graph only those that call it."""
    deploy, teardown = reachable_calls("steps.deploy"), reachable_calls("steps.teardown")
    assert ("nvidia.com", "dynamographdeployments", "create") in deploy
    assert ("nvidia.com", "dynamographdeployments", "delete") not in deploy
    assert ("nvidia.com", "dynamographdeployments", "delete") in teardown
    assert ("nvidia.com", "dynamographdeployments", "create") not in teardown
    assert ("", "persistentvolumeclaims", "create") in reachable_calls("steps.ensure_pvc")
    for step in ("aiperf_point", "summarize", "publish", "scrape", "verdict", "archive", "launcher"):
        assert not reachable_calls(f"steps.{step}"), step


# ---------------------------------------------------------------------------------------------------------------
# The pods of the install set: which account each runs as, whether its containers hold a token, and what the
# Role bound to that account grants. Argo's rule (argo-workflows v4.1.2 workflow/controller/workflowpod.go
# setupServiceAccount :1826-1857): the template's serviceAccountName, else the Workflow spec's; the template's
# automountServiceAccountToken, else the spec's; with it false, executor.serviceAccountName (template's, else
# spec's, executorServiceAccountName :1813-1821) is required, and the controller mounts that account's token
# Secret (util/secrets/secret_name.go TokenNameForServiceAccount: `<name>.service-account-token`) into its own
# init and wait containers only (newExecContainer :1314-1320).

_MODULE_ARG = re.compile(r"^steps\.([a-z_]+)$")


@pytest.fixture(scope="module")
def installed():
    from infersweep.cluster_settings import load_cluster_settings
    from workflows.install_set import install_set

    settings = load_cluster_settings()
    argo, kube = install_set(settings)
    return settings, argo, kube


def _pod_templates(argo: list[dict]) -> list[tuple[str, dict, dict]]:
    """(document name, its spec, template) for every template that makes a pod running a step module."""
    out = []
    for doc in argo:
        spec = doc["spec"].get("workflowSpec", doc["spec"])
        for t in spec.get("templates") or []:
            if "container" in t or "script" in t:
                out.append((doc["metadata"]["name"], spec, t))
    return out


def _containers(t: dict) -> list[dict]:
    """The pod's containers from this template: the main one and its initContainers."""
    return [t.get("container") or t.get("script") or {}, *(t.get("initContainers") or [])]


def _step_modules(c: dict) -> list[str]:
    """The step modules a container runs (`python -m steps.X`)."""
    argv = [*(c.get("command") or []), *(c.get("args") or [])]
    return [f"steps.{m.group(1)}" for a in argv if (m := _MODULE_ARG.match(a))]


def _holds_token(c: dict, t: dict, spec: dict) -> bool:
    """Kubernetes puts the automounted token into every container; with automount off, a container holds one
    only if it mounts a projected serviceAccountToken volume (the pod's own account's token)."""
    if t.get("automountServiceAccountToken", spec.get("automountServiceAccountToken", True)) is not False:
        return True
    volumes = {v["name"]: v for v in [*(spec.get("volumes") or []), *(t.get("volumes") or [])]}
    return any(
        any(
            "serviceAccountToken" in src
            for src in (volumes.get(vm["name"], {}).get("projected") or {}).get("sources", [])
        )
        for vm in c.get("volumeMounts") or []
    )


def _role_of(kube: list[dict], account: str) -> set[tuple[str, str, str]]:
    roles = {d["metadata"]["name"]: d for d in kube if d["kind"] == "Role"}
    bound = [
        roles[b["roleRef"]["name"]]
        for b in kube
        if b["kind"] == "RoleBinding" and any(s["name"] == account for s in b["subjects"])
    ]
    assert bound, f"no RoleBinding for the ServiceAccount {account} in the install set"
    return set().union(*(granted_permissions(r) for r in bound))


def test_every_step_pod_holds_a_token_only_for_the_calls_its_code_makes(installed):
    """A container whose code calls no Kubernetes API (AIPerf in aiperf-point, summarize, publish, scrape,
    verdict, archive, the launcher's render pod that parses Git content, ...) holds no token; one that does
    (deploy, aiperf-point's ensure-deployed init container, ...) holds the token of an account whose Role
    grants exactly the calls of the pod's containers (plus the executor's)."""
    _, argo, kube = installed
    pods = _pod_templates(argo)
    assert {t["name"] for _, _, t in pods} >= {"deploy", "aiperf-point", "summarize", "render", "reap"}
    problems = []
    for doc, spec, t in pods:
        account = t.get("serviceAccountName") or spec.get("serviceAccountName") or "default"
        pod_used: dict[tuple[str, str, str], list[str]] = {}
        for c in _containers(t):
            modules = _step_modules(c)
            assert modules, f"{doc}/{t['name']}/{c.get('name', 'main')}: no `python -m steps.X` in its command"
            used: dict[tuple[str, str, str], list[str]] = {}
            for mod in modules:
                for k, v in reachable_calls(mod).items():
                    used.setdefault(k, []).extend(v)
            where = f"{doc}/{t['name']} container {c.get('name', 'main')} ({', '.join(modules)})"
            token = _holds_token(c, t, spec)
            if not used and token:
                problems.append(f"{where}: calls no API but holds the token of {account}")
            if used and not token:
                problems.append(f"{where}: calls the API ({sorted(used)}) but holds no token")
            for k, v in used.items():
                pod_used.setdefault(k, []).extend(v)
        if not pod_used:
            continue
        granted = _role_of(kube, account)
        missing, unused = set(pod_used) - granted, granted - set(pod_used) - EXECUTOR
        if missing:
            problems.append(
                f"{doc}/{t['name']}: {account} lacks {sorted(missing)} (403), used at {[pod_used[k] for k in missing]}"
            )
        if unused:
            problems.append(f"{doc}/{t['name']}: {account} grants {sorted(unused)} that its code never calls")
    assert not problems, "\n".join(problems)


def test_a_pod_without_a_token_names_the_executor_account_argo_requires(installed):
    """automountServiceAccountToken false without executor.serviceAccountName: Argo refuses to create the pod
    ("executor.serviceAccountName must not be empty if automountServiceAccountToken is false"); with it, the
    controller mounts the Secret `<account>.service-account-token`, which must exist (since Kubernetes 1.24
    nobody creates it, argo-workflows docs/service-account-secrets.md), and the account may do only what the
    executor does."""
    settings, argo, kube = installed
    secrets = {d["metadata"]["name"]: d for d in kube if d["kind"] == "Secret"}
    accounts = {d["metadata"]["name"] for d in kube if d["kind"] == "ServiceAccount"}
    tokenless = 0
    for doc, spec, t in _pod_templates(argo):
        if t.get("automountServiceAccountToken", spec.get("automountServiceAccountToken")) is not False:
            continue
        tokenless += 1
        executor = (t.get("executor") or {}).get("serviceAccountName") or (spec.get("executor") or {}).get(
            "serviceAccountName"
        )
        assert executor, f"{doc}/{t['name']}: automountServiceAccountToken false needs executor.serviceAccountName"
        assert executor in accounts, f"{doc}/{t['name']}: executor account {executor} is not in the install set"
        token = secrets.get(f"{executor}.service-account-token")
        assert token and token["type"] == "kubernetes.io/service-account-token", f"no token Secret for {executor}"
        assert token["metadata"]["annotations"]["kubernetes.io/service-account.name"] == executor
        assert _role_of(kube, executor) == EXECUTOR, f"{executor} may do more than the executor needs"
    assert tokenless >= 10


def test_the_workflows_own_account_can_only_report_outputs(installed):
    """The spec-level account of every WorkflowTemplate (`service_account`) is what a template without its
    own runs as; its Role is the executor's alone, so no step inherits DGD or pod rights from it."""
    settings, argo, kube = installed
    assert _role_of(kube, settings.service_account) == EXECUTOR
    from workflows.cluster import steps_role

    assert granted_permissions(steps_role(settings.namespace)) == EXECUTOR


def test_reaper_role_grants_exactly_what_the_reaper_uses():
    from workflows.cluster import reaper_role

    role = reaper_role()
    assert role["kind"] == "Role"
    used = used_permissions(step_code(REAP_STEP))
    assert ("argoproj.io", "workflows", "list") in used and ("nvidia.com", "dynamographdeployments", "delete") in used
    granted = granted_permissions(role)
    assert set(used) <= granted, sorted(set(used) - granted)
    assert not granted - set(used) - EXECUTOR, sorted(granted - set(used) - EXECUTOR)
