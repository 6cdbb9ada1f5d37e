"""A container template as a pod: a host process in its own thread (workflow/controller/workflowpod.go
createWorkflowPod, operator.go executeContainer/podReconciliation, exec_control.go, and the executor's
SaveParameters/SaveArtifacts in workflow/executor/executor.go). Where the controller depends on the
Kubernetes API the local equivalent is stated beside it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infersweep.local.argo import pod_deadline
from infersweep.local.argo import pvc as argo_pvc
from infersweep.local.argo.errors import WorkflowError
from infersweep.local.argo.nodes import Node, TemplateCall
from infersweep.local.argo.templates import _CHECKED_PREFIXES, VAR_RE, _str, _substitute, parse_duration
from infersweep.local.dynamo import procs

TERMINATION_GRACE_S = 30  # Kubernetes' default terminationGracePeriodSeconds
# Images whose ENTRYPOINT is known here, as a local program (a container without `command` runs it).
KNOWN_ENTRYPOINTS = {"argoproj/argosay:v2": Path(__file__).with_name("argosay.py")}


def _image_name(image: str) -> str:
    """`docker.io/argoproj/argosay:v2` and `argoproj/argosay:v2` are one image."""
    return image.removeprefix("docker.io/").removeprefix("library/")


@dataclass
class _Pod:
    node_id: str
    proc: subprocess.Popen | None = None
    thread: threading.Thread | None = None
    killed: str = ""
    killed_at: float = 0.0  # time.monotonic() of the first SIGTERM (the grace period counts from it)
    result: tuple[str, str, dict[str, str], str | None] | None = None  # phase, message, outputs, exit code
    deadline: float | None = None
    # ARGO_DEADLINE (workflowpod.go getDeadline :993-1001): a retry attempt's executionDeadline, the first
    # attempt's start + backoff.maxDuration (operator.go processNodeRetries :1146-1147); argoexec kills the
    # main container then (executor.go monitorDeadline :1473-1496, "Step exceeded its deadline").
    exec_deadline: float | None = None
    on_exit: bool = False
    rwo_claims: frozenset[str] = frozenset()  # the ReadWriteOnce claims it mounts (_check_rwo)


def _sigkill_after_grace(pod: _Pod) -> None:
    """The kubelet's SIGKILL to the pod's process group, terminationGracePeriodSeconds after its SIGTERM
    (default 30 s, k8s.io/api core/v1 DefaultTerminationGracePeriodSeconds), unless it has exited by then.
    The AIPerf point's own grace (aiperf/point_run.py DEFAULT_GRACE_S, 20 s) fits inside it, so its partial
    summary is kept."""
    proc = pod.proc
    try:
        proc.wait(timeout=max(0.0, TERMINATION_GRACE_S - (time.monotonic() - pod.killed_at)))
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


# A mount key ending in "\0file" maps exactly that file path (no prefix).
def _under(path: str, mounts: dict[str, Path]) -> bool:
    return any(path == m or path.startswith(m.rstrip("/") + "/") for m in mounts if not m.endswith("\0file"))


def _map_path(value: str, mounts: dict[str, Path]) -> str:
    # Longest mount first, so /work/run maps through /work/run before /work.
    for m in sorted(mounts, key=len, reverse=True):
        if m.endswith("\0file"):
            if value == m[:-5]:
                return str(mounts[m])
        elif value == m or value.startswith(m.rstrip("/") + "/"):
            return str(mounts[m]) + value[len(m.rstrip("/")) :]
    return value


def _map_text(text: str, mounts: dict[str, Path]) -> str:
    """Every occurrence of a mount path (as a whole path prefix) in free text, longest mount first."""
    if not mounts:
        return text
    keys = {(m[:-5] if m.endswith("\0file") else m.rstrip("/")): m for m in mounts}
    pat = re.compile(
        r"(?<![\w./-])(" + "|".join(re.escape(k) for k in sorted(keys, key=len, reverse=True)) + r")(?=/|$|[^\w.-])"
    )

    def repl(mt: re.Match) -> str:
        m = keys[mt.group(1)]
        if m.endswith("\0file") and text[mt.end() : mt.end() + 1] == "/":
            return mt.group(1)
        return str(mounts[m])

    return pat.sub(repl, text)


class PodExecution:
    """Pods: create, reconcile, kill and collect outputs (operator.go, workflowpod.go); mixed into LocalArgo."""

    def _reconcile_pods(self) -> None:
        """operator.go podReconciliation + exec_control.go applyExecutionControl."""
        now = time.time()
        for nid, pod in list(self._pods.items()):
            n = self.nodes.get(nid)
            if n is None:
                continue
            if pod.result is not None:
                if not n.fulfilled:
                    phase, msg, outs, code = pod.result
                    n.outputs.update(outs)
                    n.exit_code = code
                    self._mark(n, phase, msg)
                del self._pods[nid]
                continue
            if n.fulfilled:
                continue
            if self.shutdown and not self._should_execute(pod.on_exit):
                # exec_control.go: "workflow shutdown with strategy:  %s" (two spaces, as in the source)
                self._kill(pod)
                self._mark(n, "Failed", f"workflow shutdown with strategy:  {self.shutdown}")
            elif self._deadline_passed() and not pod.on_exit:
                self._kill(pod)
                self._mark(n, "Failed", "Step exceeded its deadline")
            elif pod.exec_deadline is not None and now > pod.exec_deadline:
                self._kill(pod)
                self._mark(n, "Failed", "Step exceeded its deadline")
            elif pod.deadline is not None and now > pod.deadline:
                # the pod's own activeDeadlineSeconds: the kubelet kills it and the pod fails with this message
                self._kill(pod)
                self._mark(n, "Failed", "Pod was active on the node longer than the specified deadline")
            else:
                for d in (pod.deadline, pod.exec_deadline):
                    if d is not None:
                        self._requeue(d - now)

    def _fail_unstarted_after_deadline_or_shutdown(self) -> None:
        # operator.go failNodesWithoutCreatedPodsAfterDeadlineOrShutdown
        for n in list(self.nodes.values()):
            if n.fulfilled:
                continue
            exitish = self._part_of_exit_handler(n)
            if self.shutdown and not self._should_execute(exitish):
                if n.phase == "Pending" and n.waiting_lock:
                    self._mark(n, "Failed", f"Stopped with strategy '{self.shutdown}'")
                    continue
                if n.type == "Retry" and all(k.fulfilled for k in self._kids(n)):
                    self._mark(n, "Failed", f"Stopped with strategy '{self.shutdown}'")
                    continue
            if self._deadline_passed() and not exitish and n.phase == "Pending":
                self._mark(n, "Failed", "Step exceeded its deadline")

    def _kill(self, pod: _Pod) -> None:
        pod.killed = "killed"
        p = pod.proc
        if p is not None and p.poll() is None:
            pod.killed_at = pod.killed_at or time.monotonic()
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            threading.Thread(target=_sigkill_after_grace, args=(pod,), daemon=True).start()

    def _kill_all(self, why: str) -> None:
        pods = list(self._pods.values())
        for pod in pods:
            self._kill(pod)
        for pod in pods:
            if pod.thread is not None:
                pod.thread.join(timeout=15)
        # Nothing outlives the workflow: the hard-kill threads are daemons and would die with this process,
        # leaving a step still inside its grace period (and its children, AIPerf's system_controller) running.
        # Measured: a run stopped by SIGINT on a loaded 2-core machine left both behind
        # (tests/local/test_local_stop.py). So the grace is waited out here, then the kill comes.
        for pod in pods:
            if pod.proc is not None and pod.proc.poll() is None:
                _sigkill_after_grace(pod)

    def _execute_container(self, node: Node | None, call: TemplateCall) -> Node:
        """operator.go executeContainer + workflowpod.go createWorkflowPod."""
        if node is not None and node.id in self._pods:
            return node
        if node is not None and node.phase not in ("Pending",):
            return node
        tmpl, on_exit = call.tmpl, call.on_exit
        n = node or self._init_call_node(call, "Pod", "Pending")
        if not self._should_execute(on_exit):
            # workflowpod.go: do not create pods while shutting down
            return self._mark(n, "Failed", f"workflow shutdown with strategy: {self.shutdown}")
        if self._deadline_passed() and not on_exit:
            return self._mark(n, "Failed", "Step exceeded its deadline")
        if not pod_deadline.creates_pod(self.deadline(), time.time(), on_exit):
            self._requeue((self.deadline() or 0) - time.time())  # Pending until the deadline fails it
            return n
        _check_service_account(tmpl, self.spec)  # a WorkflowError here errors the node, as createWorkflowPod's
        argv, env, mounts, root = self._pod_command(n, tmpl)  # a WorkflowError here errors the node
        rwo = self._check_rwo(n, tmpl)  # likewise
        # A pod's initContainers run one after another before its main container, each to completion
        # (Kubernetes init-container semantics; workflowpod.go createWorkflowPod keeps the template's
        # initContainers after Argo's own `init`). Each gets its own command/env/mounts, mapped like the main one.
        inits = []
        for ic in tmpl.get("initContainers") or []:
            ic_tmpl = {k: v for k, v in tmpl.items() if k not in ("script", "initContainers", "outputs")}
            inits.append((ic.get("name", "init"), *self._pod_command(n, {**ic_tmpl, "container": ic})[:2]))
        n.phase = "Running"
        pod = _Pod(n.id, on_exit=on_exit, rwo_claims=rwo)
        tdl = tmpl.get("activeDeadlineSeconds", tmpl.get("timeout"))
        own = time.time() + parse_duration(tdl) if tdl is not None and str(tdl) != "" else None
        pod.deadline = pod_deadline.clamped_pod_deadline(own, self.deadline(), time.time(), on_exit)
        if pod.deadline is not None:
            self._requeue(pod.deadline - time.time())
        if tmpl.get("_execution_deadline"):
            pod.exec_deadline = tmpl["_execution_deadline"]
            self._requeue(pod.exec_deadline - time.time())
        self._pods[n.id] = pod
        pod.thread = threading.Thread(
            target=self._run_pod, args=(pod, n, tmpl, argv, env, mounts, root, inits), daemon=True
        )
        pod.thread.start()
        return n

    def _check_rwo(self, n: Node, tmpl: dict[str, Any]) -> frozenset[str]:
        """The ReadWriteOnce claims the pod mounts; a WorkflowError when a pod still running mounts one of them.

        Why a local check: here every pod's claim is one folder, so two pods mounting it at once always work.
        On a cluster a ReadWriteOnce volume attaches to one node: a second pod scheduled on another node waits
        in ContainerCreating ("Multi-Attach error for volume ... Volume is already used by pod(s)", kubernetes
        pkg/controller/volume/attachdetach/reconciler reportMultiAttachError) while its activeDeadlineSeconds
        runs, and on the same node both run. A design that only sometimes survives is refused here, naming
        both pods, so a DAG that lets two workdir tasks overlap (issue 34 item 5) fails on this machine first."""
        rwo = getattr(self, "_rwo", set())
        if not rwo:
            return frozenset()
        containers = [tmpl.get("container") or tmpl.get("script") or {}, *(tmpl.get("initContainers") or [])]
        mine = frozenset(vm["name"] for c in containers for vm in c.get("volumeMounts") or [] if vm["name"] in rwo)
        for other_id, pod in self._pods.items():
            both = mine & pod.rwo_claims
            if both and pod.result is None and other_id != n.id:
                other = self.nodes.get(other_id)
                raise WorkflowError(
                    f"Multi-Attach: pod {n.name} would mount ReadWriteOnce claim {sorted(both)[0]} while pod "
                    f"{other.name if other else other_id} still runs with it; on two nodes the second waits in "
                    "ContainerCreating until the first ends (make the second task depend on the first)"
                )
        return mine

    def _prepare_volumes(self) -> None:
        self._vols: dict[str, Path] = {}
        # volumeClaimTemplates whose every access mode is single-node (core/v1 PersistentVolumeAccessMode)
        self._rwo = {
            c["metadata"]["name"]
            for c in self.spec.get("volumeClaimTemplates", []) or []
            if set((c.get("spec") or {}).get("accessModes") or []) <= {"ReadWriteOnce", "ReadWriteOncePod"}
            and (c.get("spec") or {}).get("accessModes")
        }
        for v in self.spec.get("volumes", []) or []:
            if "persistentVolumeClaim" in v:
                claim = _substitute(v["persistentVolumeClaim"]["claimName"], self.globals(), strict=False)
                self._vols[v["name"]] = self.cluster.pvc_dirs(claim)
            elif "emptyDir" in v:
                self._vols[v["name"]] = self.cluster.run_dir / "volumes" / v["name"]
            else:
                kind = next(iter(k for k in v if k != "name"), "?")
                raise WorkflowError(
                    f"volume {v['name']!r}: {kind} volumes are not supported locally "
                    "(persistentVolumeClaim and emptyDir are)"
                )
        for c in self.spec.get("volumeClaimTemplates", []) or []:
            # operator.go createPVCs: on a retry, a claim the completion deleted (volumeClaimGC) comes back empty
            # (a local --resume is a new workflow that reuses the folder on purpose: not a retry)
            d = self.cluster.run_dir / "volumes" / c["metadata"]["name"]
            self._vols[c["metadata"]["name"]] = argo_pvc.claim_dir(d) if self._retrying else d

    def _pod_command(self, n: Node, tmpl: dict[str, Any]) -> tuple[list[str], dict[str, str], dict[str, Path], Path]:
        c = tmpl.get("container") or tmpl.get("script")
        from infersweep.local.argo.node_folder import node_folder

        root = self.cluster.run_dir / "nodes" / node_folder(n.name)
        root.mkdir(parents=True, exist_ok=True)
        vols = dict(getattr(self, "_vols", {}))
        for v in tmpl.get("volumes") or []:
            # a template's own volumes (workflowpod.go createWorkflowPod appends tmpl.Volumes): a projected
            # ServiceAccount token (workflows/steps_library.py token_volume) is an empty folder here, where the
            # platform adapter is local and reads no token
            if "projected" not in v:
                kind = next(iter(k for k in v if k != "name"), "?")
                raise WorkflowError(
                    f"templates.{tmpl['name']}.volumes {v['name']!r}: {kind} volumes are not supported locally"
                )
            vols[v["name"]] = root / "volumes" / v["name"]
        mounts: dict[str, Path] = {}
        for vm in c.get("volumeMounts", []) or []:
            if vm["name"] not in vols:
                raise WorkflowError(f"volume '{vm['name']}' not found in workflow spec")
            vols[vm["name"]].mkdir(parents=True, exist_ok=True)
            mounts[vm["mountPath"]] = vols[vm["name"]]
        scope = tmpl.get("_scope", {})
        host_shell = (
            self.cluster.pythons.get(_substitute(c.get("image", ""), scope, strict=False)) is None
            and self.cluster.unmapped_on_host
        )
        outputs = tmpl.get("outputs", {}) or {}
        for p in (outputs.get("parameters") or []) + (outputs.get("artifacts") or []):
            path = (p.get("valueFrom") or {}).get("path") or p.get("path")
            if path and not _under(path, mounts):
                # The container's own filesystem: a folder of this node here. A host-shell container maps
                # the output file itself (its /tmp is otherwise the host's /tmp); a step maps the folder.
                if host_shell:
                    mounts.setdefault(path + "\0file", root / path.lstrip("/"))
                    (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
                else:
                    mounts.setdefault(str(Path(path).parent), root / Path(path).parent.relative_to("/"))
        for m, host in mounts.items():
            if not m.endswith("\0file"):
                host.mkdir(parents=True, exist_ok=True)

        def fill(v: str) -> str:
            v = _substitute(_substitute(v, scope, strict=False), tmpl.get("_local", {}), strict=False)
            left = [
                m.group(1).strip()
                for m in VAR_RE.finditer(v)
                if m.group(1).strip().startswith(_CHECKED_PREFIXES) or m.group(1).strip() in ("item", "retries")
            ]
            if left:
                raise WorkflowError(f"failed to resolve {{{{{left[0]}}}}}")
            return v

        image = fill(c.get("image", ""))
        python = self.cluster.pythons.get(image)
        if host_shell:
            # A host-shell container (`sh -c ...`): its paths, also those inside parameter values, stand for
            # the container's filesystem, so they are mapped after substitution, anywhere in the text.
            def fill_map(v: str) -> str:
                return _map_text(fill(v), mounts)
        else:
            # An environment-mapped step: map the template's own paths, then fill in parameters (a parameter
            # value, say a folder an earlier step reported, is already a path of this machine).
            def fill_map(v: str) -> str:
                return fill(_map_path(v, mounts))

        argv = [fill_map(a) for a in list(c.get("command") or []) + list(c.get("args") or [])]
        if not c.get("command") and host_shell and _image_name(image) in KNOWN_ENTRYPOINTS:
            # No command: the image's ENTRYPOINT runs with the args (core/v1 Container.command)
            argv = [sys.executable, str(KNOWN_ENTRYPOINTS[_image_name(image)]), *argv]
        if "script" in tmpl:
            src = root / "script"
            src.write_text(_map_text(fill(c.get("source", "")), mounts))
            argv = argv + [str(src)]
        env = dict(self.cluster.env)
        for e in c.get("env", []) or []:
            if "valueFrom" in e:
                # The local environment stands for the Secrets/ConfigMaps a pod would read the value from.
                ref = e["valueFrom"].get("secretKeyRef") or e["valueFrom"].get("configMapKeyRef")
                if ref is None:
                    raise WorkflowError(f"env {e['name']}: only secretKeyRef/configMapKeyRef values run locally")
                if e["name"] not in env and not ref.get("optional"):
                    raise WorkflowError(
                        f"env {e['name']}: {ref.get('name')}/{ref.get('key')} is not in the local "
                        f"environment (export {e['name']} to stand for it)"
                    )
                continue
            env[e["name"]] = fill_map(str(e.get("value", "")))
        if python is not None:
            if argv and argv[0] in ("python", "python3"):
                argv[0] = python
            env["PATH"] = f"{Path(python).parent}:{env.get('PATH', os.environ.get('PATH', ''))}"
            env["PYTHONPATH"] = str(self.cluster.cwd)
        elif not self.cluster.unmapped_on_host:
            raise WorkflowError(f"template {tmpl['name']!r}: no local environment for image {image!r}")
        env.setdefault("PATH", os.environ.get("PATH", "/usr/bin:/bin"))
        if not argv:
            raise WorkflowError(f"template {tmpl['name']!r}: no command (the image's entrypoint is unknown locally)")
        return argv, env, mounts, root

    def _run_pod(
        self,
        pod: _Pod,
        n: Node,
        tmpl: dict[str, Any],
        argv: list[str],
        env: dict[str, str],
        mounts: dict[str, Path],
        root: Path,
        inits: list | None = None,
    ) -> None:
        log_path = root / "main.log"
        n.log = log_path
        # Every process of this pod carries the marker, so none outlives it (procs.stop_pod_processes). The
        # progress file is where Argo's executor reads a step's self-reported "N/M" (workflowpod.go sets
        # ARGO_PROGRESS_FILE; executor.go monitorProgress reads its last line); here it is the node's folder.
        marker = f"{self.uid}/{n.id}"
        env = {**env, procs.POD_MARKER: marker, "ARGO_PROGRESS_FILE": str(root / "progress")}
        env["ARGO_DEADLINE"] = pod_deadline.argo_deadline_env(self.deadline(), pod.exec_deadline, pod.on_exit)
        inits = [(ic_name, ic_argv, {**ic_env, procs.POD_MARKER: marker}) for ic_name, ic_argv, ic_env in inits or []]
        try:
            try:
                log = open(log_path, "ab", buffering=0)
            except OSError:
                log = open(os.devnull, "ab", buffering=0)
            with log:
                try:
                    log.write(f"$ {' '.join(argv)}\n".encode())
                except OSError:
                    pass
                for ic_name, ic_argv, ic_env in inits or []:
                    log.write(f"$ [{ic_name}] {' '.join(ic_argv)}\n".encode())
                    if (e := self._start_container(pod, ic_argv, ic_env, log)) is not None:
                        pod.result = ("Error", f"failed to start container {ic_name}: {e}", {}, None)
                        return
                    ic_rc = pod.proc.wait()
                    procs.stop_pod_processes(marker)
                    if ic_rc != 0 or pod.killed:
                        # operator.go inferFailedReason: a failed init container names itself in the message;
                        # the main container never starts, so no outputs are saved.
                        code = str(ic_rc if ic_rc >= 0 else 128 - ic_rc)
                        pod.result = ("Failed", f"{ic_name}: Error (exit code {code})", {}, code)
                        return
                if (e := self._start_container(pod, argv, env, log)) is not None:
                    # the container could not start: inferFailedReason "Pod failed before main container starts"
                    pod.result = ("Error", f"failed to start container: {e}", {}, None)
                    return
                rc = pod.proc.wait()
                procs.stop_pod_processes(marker)  # the container's end: nothing it started is left
            pod.result = self._pod_result(n, tmpl, rc, mounts, root)
        except Exception as e:  # never leave the controller waiting on a dead thread
            pod.result = ("Error", f"local executor: {e}", {}, None)
        finally:
            self._wake.set()

    def _start_container(self, pod, argv, env, log) -> OSError | None:
        """Start one container of `pod` in its own session, its output to the pod's log; the OSError if it
        cannot start. A pod stopped meanwhile is killed at once."""
        try:
            pod.proc = subprocess.Popen(
                argv,
                cwd=self.cluster.cwd,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            return e
        if pod.killed:
            self._kill(pod)
        return None

    def _pod_result(self, n: Node, tmpl: dict[str, Any], rc: int, mounts: dict[str, Path], root: Path):
        outs: dict[str, str] = {}
        outputs = tmpl.get("outputs", {}) or {}
        code = str(rc if rc >= 0 else 128 - rc)
        # executor.go SaveParameters runs whatever the main container's exit code
        for p in outputs.get("parameters") or []:
            vf = p.get("valueFrom") or {}
            if "path" not in vf:
                continue
            f = Path(_map_path(vf["path"], mounts))
            try:
                value = f.read_text()
            except OSError:
                if "default" not in vf:
                    if rc == 0:
                        return (
                            "Error",
                            f"wait: Error (exit code 1): open {vf['path']}: no such file or directory",
                            outs,
                            code,
                        )
                    continue
                value = _str(vf["default"])
            outs[p["name"]] = value[:-1] if value.endswith("\n") else value  # "Trims off a single newline"
        if rc != 0:
            return ("Failed", f"main: Error (exit code {code})", outs, code)
        for a in outputs.get("artifacts") or []:
            f = Path(_map_path(a["path"], mounts))
            if not f.exists():
                if a.get("optional"):
                    continue
                return ("Error", f"wait: Error (exit code 1): open {a['path']}: no such file or directory", outs, code)
            if self.cluster.upload_artifact:
                safe = root.name
                outs[f"artifact:{a['name']}"] = self.cluster.upload_artifact(f"{self.name}/{safe}/{f.name}", f)
        return ("Succeeded", "", outs, code)


def _check_service_account(tmpl: dict[str, Any], spec: dict[str, Any]) -> None:
    """workflowpod.go setupServiceAccount (argo-workflows v4.1.2 :1826-1857): automountServiceAccountToken
    (the template's, else the spec's) false without an executor.serviceAccountName (the template's, else the
    spec's, executorServiceAccountName :1813-1821) is refused, and the pod is never created. Here no token is
    mounted either way; the rule is what a cluster would refuse."""
    automount = tmpl.get("automountServiceAccountToken", spec.get("automountServiceAccountToken"))
    executor = (tmpl.get("executor") or {}).get("serviceAccountName") or (spec.get("executor") or {}).get(
        "serviceAccountName"
    )
    if automount is False and not executor:
        raise WorkflowError("executor.serviceAccountName must not be empty if automountServiceAccountToken is false")
