"""Run a rendered Argo Workflow on this machine, as the YAML declares it.

This is not a second, hand-written pipeline: it reads the same Workflow + WorkflowTemplates that a cluster
gets and executes their DAGs (`depends` expressions, `withParam` fan-out, template `parallelism` order,
`templateRef`, parameters, output parameters, output artifacts, `onExit`). A container template runs its
own `command`/`args` as a local process: the image is mapped to a local Python environment, volumes to
folders, and every path under a mount is rewritten to the folder that stands for it. Tasks run one at a
time in DAG order (a cluster may run independent ones side by side; results are the same).

Supported: dag and container templates; `{{inputs.parameters.*}}`, `{{workflow.parameters.*}}`,
`{{workflow.name|namespace|uid|status}}`, `{{tasks.T.outputs.parameters.*}}`, `{{item}}`, `{{item.key}}`.
Anything else is an error here, as it would be for the controller.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

VAR_RE = re.compile(r"\{\{\s*([^{}]+?)\s*\}\}")
DONE = {"Succeeded", "Failed", "Errored", "Skipped", "Omitted"}


class WorkflowError(RuntimeError):
    """The workflow cannot run as written (unknown template, missing parameter, bad expression)."""


class Stopped(Exception):
    """The run was stopped (Ctrl-C, SIGTERM or the workflow deadline)."""


@dataclass
class Node:
    name: str  # display name, e.g. "sweep.point(1:c=4)"
    template: str
    phase: str = "Pending"
    message: str = ""
    outputs: dict[str, str] = field(default_factory=dict)
    children: list["Node"] = field(default_factory=list)
    started: float = 0.0
    finished: float = 0.0
    log: Path | None = None

    @property
    def seconds(self) -> float:
        return (self.finished or time.time()) - self.started if self.started else 0.0


@dataclass
class LocalCluster:
    """How cluster things map onto this machine."""

    pythons: dict[str, str]  # image -> python interpreter
    pvc_dirs: Callable[[str], Path]  # PVC claim name -> folder
    run_dir: Path  # this run's folder: volume claim templates, node outputs, logs
    cwd: Path  # where step modules are importable from
    env: dict[str, str]  # environment for every step (the local stand-in for Secrets)
    upload_artifact: Callable[[str, Path], str] | None = None  # (key, file) -> URL
    on_event: Callable[[str, Node], None] = lambda kind, node: None


def _substitute(value: Any, scope: dict[str, str]) -> Any:
    if isinstance(value, str):
        def repl(mt: re.Match) -> str:
            key = mt.group(1)
            if key not in scope:
                raise WorkflowError(f"unresolved variable {{{{{key}}}}}")
            return scope[key]
        return VAR_RE.sub(repl, value)
    if isinstance(value, list):
        return [_substitute(v, scope) for v in value]
    if isinstance(value, dict):
        return {k: _substitute(v, scope) for k, v in value.items()}
    return value


_DEPENDS_TOKEN = re.compile(r"\s*(\(|\)|&&|\|\||!|[A-Za-z0-9_-]+(?:\.[A-Za-z]+)?)")
_RESULT_MEMBERS = {"Succeeded", "Failed", "Errored", "Skipped", "Omitted", "Daemoned", "AnySucceeded", "AllFailed"}


def depends_tasks(expr: str) -> set[str]:
    return {t.split(".")[0] for t in _tokens(expr) if t not in ("(", ")", "&&", "||", "!")}


def _tokens(expr: str) -> list[str]:
    pos, out = 0, []
    expr = expr.strip()
    while pos < len(expr):
        mt = _DEPENDS_TOKEN.match(expr, pos)
        if not mt:
            raise WorkflowError(f"depends: cannot parse {expr!r} at {expr[pos:]!r}")
        out.append(mt.group(1))
        pos = mt.end()
    return out


def eval_depends(expr: str, nodes: dict[str, Node]) -> bool:
    """Argo's enhanced depends logic: `A` means A succeeded (or was skipped); `A.Failed` etc. as named."""
    py = []
    for t in _tokens(expr):
        if t in ("(", ")"):
            py.append(t)
        elif t == "&&":
            py.append(" and ")
        elif t == "||":
            py.append(" or ")
        elif t == "!":
            py.append(" not ")
        else:
            task, _, member = t.partition(".")
            if task not in nodes:
                raise WorkflowError(f"depends names unknown task {task!r}")
            n = nodes[task]
            if not member:
                val = n.phase in ("Succeeded", "Skipped")
            elif member not in _RESULT_MEMBERS:
                raise WorkflowError(f"depends: unknown result {member!r} of task {task!r}")
            elif member == "AnySucceeded":
                val = any(c.phase == "Succeeded" for c in n.children)
            elif member == "AllFailed":
                val = bool(n.children) and all(c.phase == "Failed" for c in n.children)
            elif member == "Daemoned":
                val = False
            else:
                val = n.phase == member
            py.append(str(val))
    return bool(eval("".join(py), {"__builtins__": {}}, {}))  # only True/False/and/or/not/() reach here


class LocalArgo:
    def __init__(self, workflow: dict[str, Any], templates: list[dict[str, Any]], cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.wts = {t["metadata"]["name"]: t for t in templates if t.get("kind") == "WorkflowTemplate"}
        self.spec = self._merged_spec(workflow)
        self.name = workflow["metadata"].get("name") or (workflow["metadata"].get("generateName", "wf-") + uuid.uuid4().hex[:5])
        self.namespace = workflow["metadata"].get("namespace", "default")
        self.uid = str(uuid.uuid4())
        self.params = self._global_params()
        self.deadline = (time.monotonic() + self.spec["activeDeadlineSeconds"]) if self.spec.get("activeDeadlineSeconds") else None
        self.current: subprocess.Popen | None = None
        self.stop_reason: str | None = None
        self.root: Node | None = None
        self.exit_node: Node | None = None

    # ---- spec ------------------------------------------------------------------------------------
    def _merged_spec(self, wf: dict[str, Any]) -> dict[str, Any]:
        spec = dict(wf["spec"])
        ref = spec.pop("workflowTemplateRef", None)
        if not ref:
            spec["_scope"] = None
            return spec
        base = self.wts.get(ref["name"])
        if base is None:
            raise WorkflowError(f"workflowTemplateRef {ref['name']!r} is not installed")
        merged = {**base["spec"], **{k: v for k, v in spec.items() if k != "arguments"}}
        # Workflow arguments override the template's defaults, parameter by parameter.
        given = {p["name"]: p for p in spec.get("arguments", {}).get("parameters", [])}
        params = [given.pop(p["name"], p) for p in base["spec"].get("arguments", {}).get("parameters", [])]
        merged["arguments"] = {"parameters": params + list(given.values())}
        merged["_scope"] = ref["name"]
        return merged

    def _global_params(self) -> dict[str, str]:
        out = {}
        for p in self.spec.get("arguments", {}).get("parameters", []):
            if "value" not in p:
                raise WorkflowError(f"workflow parameter {p['name']!r} has no value; pass it with --set {p['name']}=...")
            if p.get("enum") and str(p["value"]) not in [str(e) for e in p["enum"]]:
                raise WorkflowError(f"workflow parameter {p['name']!r}={p['value']!r} is not one of {p['enum']}")
            out[p["name"]] = str(p["value"])
        return out

    def _scope_vars(self, status: str = "Running") -> dict[str, str]:
        s = {f"workflow.parameters.{k}": v for k, v in self.params.items()}
        s.update({"workflow.name": self.name, "workflow.namespace": self.namespace, "workflow.uid": self.uid,
                  "workflow.status": status})
        return s

    def _template(self, name: str | None, ref: dict[str, str] | None, scope: str | None) -> tuple[dict, str | None]:
        if ref:
            wt = self.wts.get(ref["name"])
            if wt is None:
                raise WorkflowError(f"templateRef: WorkflowTemplate {ref['name']!r} is not installed")
            holder, tname, scope = wt["spec"], ref["template"], ref["name"]
        else:
            holder = self.wts[scope]["spec"] if scope else self.spec
            tname = name
        for t in holder.get("templates", []):
            if t["name"] == tname:
                return t, scope
        raise WorkflowError(f"template {tname!r} not found in {scope or 'the workflow'}")

    # ---- run -------------------------------------------------------------------------------------
    def run(self) -> Node:
        self.root = Node(self.name, self.spec["entrypoint"])
        status = "Failed"
        try:
            self._run_template(self.root, *self._template(self.spec["entrypoint"], None, self.spec["_scope"]), {})
            status = self.root.phase
        except Stopped:
            status = "Failed"
            self.root.phase, self.root.message = "Failed", self.stop_reason or "stopped"
        finally:
            if self.spec.get("onExit"):
                # The exit handler runs whatever happened, even after a stop: it is what releases GPUs.
                self.stop_reason = None
                self.deadline = None
                self.exit_node = Node(f"{self.name}.onExit", self.spec["onExit"])
                try:
                    tmpl, scope = self._template(self.spec["onExit"], None, self.spec["_scope"])
                    self._run_template(self.exit_node, tmpl, scope, {}, status=status)
                except Stopped:
                    self.exit_node.phase = "Failed"
        return self.root

    def stop(self, reason: str) -> None:
        """Called from a signal handler: stop the running step the way a pod is stopped (SIGTERM)."""
        self.stop_reason = reason
        if self.current and self.current.poll() is None:
            try:
                os.killpg(self.current.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass

    def _check_stop(self) -> None:
        if self.deadline and time.monotonic() > self.deadline:
            self.stop_reason = f"activeDeadlineSeconds ({self.spec['activeDeadlineSeconds']}) exceeded"
        if self.stop_reason:
            raise Stopped(self.stop_reason)

    def _run_template(self, node: Node, tmpl: dict, scope: str | None, inputs: dict[str, str], status: str = "Running") -> None:
        self._check_stop()
        declared = {p["name"]: p for p in tmpl.get("inputs", {}).get("parameters", [])}
        values = {}
        for name, p in declared.items():
            if name in inputs:
                values[name] = inputs[name]
            elif "value" in p:
                values[name] = str(p["value"])
            else:
                raise WorkflowError(f"template {tmpl['name']!r}: input parameter {name!r} was not given")
        node.started = time.time()
        node.phase = "Running"
        self.cluster.on_event("start", node)
        try:
            if "dag" in tmpl:
                self._run_dag(node, tmpl, scope, values, status)
            elif "container" in tmpl:
                self._run_container(node, tmpl, values, status)
            else:
                raise WorkflowError(f"template {tmpl['name']!r}: only dag and container templates run locally")
        finally:
            node.finished = time.time()
            if node.phase == "Running":
                node.phase = "Failed"
            self.cluster.on_event("end", node)

    def _run_dag(self, node: Node, tmpl: dict, scope: str | None, inputs: dict[str, str], status: str) -> None:
        dag = tmpl["dag"]
        tasks = {t["name"]: t for t in dag["tasks"]}
        fail_fast = dag.get("failFast", tmpl.get("failFast", True))
        nodes: dict[str, Node] = {}
        base = self._scope_vars(status) | {f"inputs.parameters.{k}": v for k, v in inputs.items()}
        deps = {n: (depends_tasks(t["depends"]) if t.get("depends") else set(t.get("dependencies", []))) for n, t in tasks.items()}
        for n, d in deps.items():
            unknown = d - tasks.keys()
            if unknown:
                raise WorkflowError(f"dag {tmpl['name']!r}: task {n!r} depends on unknown {sorted(unknown)}")
        failed = False
        while len(nodes) < len(tasks):
            ready = [n for n in tasks if n not in nodes and all(d in nodes and nodes[d].phase in DONE for d in deps[n])]
            if not ready:
                raise WorkflowError(f"dag {tmpl['name']!r}: dependency cycle among {sorted(set(tasks) - set(nodes))}")
            for name in ready:  # declaration order among ready tasks, like the controller's
                t = tasks[name]
                tnode = Node(f"{node.name}.{name}", t.get("template") or t["templateRef"]["template"])
                nodes[name] = tnode
                node.children.append(tnode)
                expr = t.get("depends") or " && ".join(t.get("dependencies", []))
                if expr and not eval_depends(expr, nodes):
                    tnode.phase = "Omitted"
                    continue
                # The controller (dag.go, executeDAGTask) schedules every task whose depends/dependencies
                # hold, failFast or not: failFast only decides the DAG's phase. So a task downstream of a
                # failure runs when its own condition allows it (`sweep.Failed`, or `scrape` that ran after
                # it): this is what lets a failed sweep still be summarised and published. Only tasks with
                # no dependencies, which this one-at-a-time runner reaches late, are held back here.
                if failed and fail_fast and not expr:
                    tnode.phase = "Omitted"
                    tnode.message = "not started: an earlier task failed (failFast)"
                    continue
                scope_vars = base | self._task_outputs(nodes)
                self._run_task(tnode, t, scope, scope_vars, status)
                failed = failed or tnode.phase in ("Failed", "Errored")
        bad = [n for n in node.children if n.phase in ("Failed", "Errored")]
        node.phase = "Failed" if bad else "Succeeded"
        node.message = "; ".join(f"{n.name.rsplit('.', 1)[-1]}: {n.message}" for n in bad)[:500]

    @staticmethod
    def _task_outputs(nodes: dict[str, Node]) -> dict[str, str]:
        out = {}
        for tname, n in nodes.items():
            for k, v in n.outputs.items():
                out[f"tasks.{tname}.outputs.parameters.{k}"] = v
            if n.children and any(c.outputs for c in n.children):
                # A fanned-out task's output parameters aggregate into a JSON list, as in Argo.
                out[f"tasks.{tname}.outputs.parameters"] = json.dumps([c.outputs for c in n.children])
        return out

    def _run_task(self, tnode: Node, t: dict, scope: str | None, scope_vars: dict[str, str], status: str) -> None:
        tmpl, tscope = self._template(t.get("template"), t.get("templateRef"), scope)
        raw_args = {p["name"]: p.get("value", "") for p in t.get("arguments", {}).get("parameters", [])}
        if "withParam" in t or "withItems" in t:
            items = t.get("withItems")
            if items is None:
                text = _substitute(t["withParam"], scope_vars)
                try:
                    items = json.loads(text)
                except json.JSONDecodeError as e:
                    raise WorkflowError(f"task {t['name']!r}: withParam is not a JSON list: {e}") from None
            if not isinstance(items, list):
                raise WorkflowError(f"task {t['name']!r}: withParam must be a JSON list")
            tnode.started = time.time()
            tnode.phase = "Running"
            for i, item in enumerate(items):
                item_vars = {"item": json.dumps(item) if isinstance(item, (dict, list)) else str(item)}
                if isinstance(item, dict):
                    item_vars |= {f"item.{k}": str(v) for k, v in item.items()}
                label = ",".join(f"{k}={v}" for k, v in item.items()) if isinstance(item, dict) else str(item)
                child = Node(f"{tnode.name}({i}:{label})", tmpl["name"])
                tnode.children.append(child)
                try:
                    self._run_template(child, tmpl, tscope, _substitute(raw_args, scope_vars | item_vars), status)
                except Stopped:
                    tnode.phase, tnode.finished = "Failed", time.time()
                    raise
            tnode.finished = time.time()
            tnode.phase = "Failed" if any(c.phase in ("Failed", "Errored") for c in tnode.children) else "Succeeded"
            return
        self._run_template(tnode, tmpl, tscope, _substitute(raw_args, scope_vars), status)

    # ---- containers ------------------------------------------------------------------------------
    def _volume_dirs(self) -> dict[str, Path]:
        dirs: dict[str, Path] = {}
        for v in self.spec.get("volumes", []):
            if "persistentVolumeClaim" in v:
                claim = _substitute(v["persistentVolumeClaim"]["claimName"], self._scope_vars())
                dirs[v["name"]] = self.cluster.pvc_dirs(claim)
            elif "emptyDir" in v:
                dirs[v["name"]] = self.cluster.run_dir / "volumes" / v["name"]
        for c in self.spec.get("volumeClaimTemplates", []):
            dirs[c["metadata"]["name"]] = self.cluster.run_dir / "volumes" / c["metadata"]["name"]
        return dirs

    def _run_container(self, node: Node, tmpl: dict, inputs: dict[str, str], status: str) -> None:
        c = tmpl["container"]
        scope = self._scope_vars(status) | {f"inputs.parameters.{k}": v for k, v in inputs.items()}
        raw_argv = list(c.get("command", [])) + list(c.get("args", []))
        python = self.cluster.pythons.get(c["image"])
        if python is None:
            raise WorkflowError(f"template {tmpl['name']!r}: no local environment for image {c['image']!r}")
        if not raw_argv or raw_argv[0] not in ("python", "python3"):
            raise WorkflowError(f"template {tmpl['name']!r}: local mode runs `python -m ...` step containers only")

        safe = re.sub(r"[^A-Za-z0-9_.=-]+", "_", node.name)[-120:]
        root = self.cluster.run_dir / "nodes" / safe
        root.mkdir(parents=True, exist_ok=True)
        vols = self._volume_dirs()
        mounts: dict[str, Path] = {}
        for vm in c.get("volumeMounts", []):
            if vm["name"] not in vols:
                raise WorkflowError(f"template {tmpl['name']!r}: volume {vm['name']!r} is not defined by the workflow")
            vols[vm["name"]].mkdir(parents=True, exist_ok=True)
            mounts[vm["mountPath"]] = vols[vm["name"]]
        outputs = tmpl.get("outputs", {})
        for p in outputs.get("parameters", []) + outputs.get("artifacts", []):
            path = p.get("valueFrom", {}).get("path") or p.get("path")
            if path and not _under(path, mounts):
                # Not on a volume: the container's own filesystem, a folder of this node here.
                mounts.setdefault(str(Path(path).parent), root / Path(path).parent.relative_to("/"))
        for host in mounts.values():
            host.mkdir(parents=True, exist_ok=True)
        # Map the template's own paths first, then fill in parameters: a parameter value (say a folder
        # an earlier step reported) is already a path of this machine and must not be mapped again.
        argv = [python] + _substitute([_map_path(a, mounts) for a in raw_argv[1:]], scope)

        env = dict(self.cluster.env)
        for e in c.get("env", []):
            env[e["name"]] = _substitute(_map_path(e.get("value", ""), mounts), scope)
        env["PATH"] = f"{Path(python).parent}:{env.get('PATH', os.environ.get('PATH', ''))}"
        env["PYTHONPATH"] = str(self.cluster.cwd)

        retry = tmpl.get("retryStrategy") or {}
        # OnError retries infrastructure errors (pod evicted, node lost); a step's own non-zero exit is
        # a Failure and is not retried. Locally there is no infrastructure to fail, so only
        # OnFailure/Always policies retry here.
        retries = int(retry.get("limit", 0)) if retry.get("retryPolicy") in ("OnFailure", "Always") else 0
        node.log = root / "main.log"
        for attempt in range(retries + 1):
            self._check_stop()
            # Unbuffered and best effort: on a full disk the step must still run (and report its own
            # failure), and the exit handler after it must still release the deployment.
            try:
                log = open(node.log, "ab", buffering=0)
            except OSError:
                log = open(os.devnull, "ab", buffering=0)
            with log:
                try:
                    log.write(f"$ {' '.join(argv)}\n".encode())
                except OSError:
                    pass
                self.current = subprocess.Popen(argv, cwd=self.cluster.cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True)
                rc = self._wait(self.current, tmpl.get("activeDeadlineSeconds"))
                self.current = None
            if rc == 0 or self.stop_reason:
                break
        if self.stop_reason:
            node.phase, node.message = "Failed", self.stop_reason
            raise Stopped(self.stop_reason)
        for p in outputs.get("parameters", []):
            f = _map_path(p["valueFrom"]["path"], mounts)
            if Path(f).exists():
                node.outputs[p["name"]] = Path(f).read_text()
            elif rc == 0:
                node.phase, node.message = "Failed", f"output parameter {p['name']!r}: {p['valueFrom']['path']} was not written"
                return
        if rc != 0:
            node.phase, node.message = "Failed", f"exit code {rc}: {_last_line(node.log)}"
            return
        for a in outputs.get("artifacts", []):
            f = Path(_map_path(a["path"], mounts))
            if not f.exists():
                if a.get("optional"):
                    continue
                node.phase, node.message = "Failed", f"output artifact {a['name']!r}: {a['path']} was not written"
                return
            if self.cluster.upload_artifact:
                node.outputs[f"artifact:{a['name']}"] = self.cluster.upload_artifact(f"{self.name}/{safe}/{f.name}", f)
        node.phase = "Succeeded"

    def _wait(self, proc: subprocess.Popen, deadline_s: Any) -> int:
        limit = time.monotonic() + float(deadline_s) if deadline_s else None
        while True:
            try:
                return proc.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                pass
            if (limit and time.monotonic() > limit) or (self.deadline and time.monotonic() > self.deadline):
                self.stop_reason = self.stop_reason or "deadline exceeded"
                self.stop(self.stop_reason)
                try:
                    return proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    return proc.wait()


def _under(path: str, mounts: dict[str, Path]) -> bool:
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts)


def _map_path(value: str, mounts: dict[str, Path]) -> str:
    # Longest mount first, so /work/run maps through /work/run before /work.
    for m in sorted(mounts, key=len, reverse=True):
        if value == m or value.startswith(m.rstrip("/") + "/"):
            return str(mounts[m]) + value[len(m.rstrip("/")):]
    return value


def _last_line(log: Path | None) -> str:
    if not log or not log.exists():
        return ""
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
