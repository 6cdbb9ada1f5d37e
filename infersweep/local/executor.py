"""The local Argo executor for one rendered workflow, as `run --local` and `experiment run --local` both use it.

The caller starts the stand-in services (S3, Prometheus) and builds the steps' environment; this runs the
workflow on them: artifacts into the local artifact bucket, Ctrl-C and SIGTERM as `argo stop` (running steps
are terminated and the exit handler still runs, so the local deployment is torn down: infersweep/local/argo/
LocalArgo.stop), and the run's `argo get` status written whatever happens (`--retry` starts from it).
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, TextIO

from infersweep.local.argo import LocalArgo, LocalCluster, Node
from infersweep.local.progress_watch import ProgressWatcher, step_label
from infersweep.paths import REPO_ROOT

ARTIFACT_BUCKET = "infersweep-artifacts"


def write_status(path: Path, status: dict[str, Any]) -> None:
    """The run's `argo get` status, for --retry. A full disk must not turn a finished run into a crash that
    hides its verdict (the results already measured are on disk and published): say so and go on."""
    try:
        path.write_text(json.dumps(status, indent=1))
    except OSError as e:
        print(f"infersweep: could not write {path} ({e}); --retry of this run needs it", file=sys.stderr)


def _last_log_line(log: Path | None) -> str:
    try:
        with open(log, "rb") as f:  # type: ignore[arg-type]
            f.seek(0, 2)
            f.seek(max(0, f.tell() - 4096))
            lines = [t.strip() for t in f.read().decode("utf-8", "replace").splitlines() if t.strip()]
    except (OSError, TypeError):
        return ""
    return lines[-1][:300] if lines else ""


def failed_step_lines(argo: Any) -> list[str]:
    """The pods that ended Failed or Error, in the order they finished: "<step>: <message>: <the log's last
    line> (log: <file>)". A pod's node message is its exit code (operator.go), what the step said is the last
    line of its log (steps/runner.py ends every failure with one line naming the step)."""
    pods = [n for n in argo.nodes.values() if n.type == "Pod" and n.failed_or_error]
    lines = []
    for n in sorted(pods, key=lambda n: n.finished):
        said = _last_log_line(n.log)
        text = ": ".join(t for t in (n.message or n.phase, said) if t)
        lines.append(f"{step_label(n.display_name or n.name)}: {text}" + (f" (log: {n.log})" if n.log else ""))
    return lines


def event_printer(stream: TextIO | None = None) -> Callable[[str, Node], None]:
    """Prints each step's start and end; to `stream`, else to sys.stdout as it is when a line is printed (a
    default bound at import time kept whatever sys.stdout was then: in the suite, a test's closed capture)."""
    t0 = time.monotonic()

    def on_event(kind: str, node: Node) -> None:
        short = step_label(node.name.split(".", 1)[1] if "." in node.name else node.name)
        if (
            node.template in ("pipeline", "sweep", "exit-handler") or node.type in ("DAG", "TaskGroup", "Retry")
        ) and kind == "start":
            return
        stamp = f"[{time.monotonic() - t0:6.1f}s]"
        if kind == "start":
            print(f"{stamp} > {short}", file=stream or sys.stdout, flush=True)
            return
        detail = ""
        if "result" in node.outputs:
            try:
                res = json.loads(node.outputs["result"])
                detail = f"  {res.get('status')}: {res.get('reason', '')}"[:160]
            except json.JSONDecodeError:
                pass
        elif node.message:
            detail = f"  {node.message}"[:300]
        mark = {"Succeeded": "ok", "Omitted": "skipped"}.get(node.phase, node.phase.upper())
        print(f"{stamp} {mark:>9} {short} ({node.seconds:.1f}s){detail}", file=stream or sys.stdout, flush=True)

    return on_event


@dataclass
class StepServices:
    """What every workflow of a local run executes on: where the PVCs and the Argo state live (cache_root, shared
    by every local run of that cache, so a lock holds across runs), the interpreter of each step image, the
    steps' environment, the artifact bucket's client, the ConfigMaps a cluster would hold, the event callbacks,
    the checkout steps run `python -m` from (code_root: this one's steps/), and the local Kubernetes API that
    resource templates create into (infersweep/local/argo/resource.py LocalObjects)."""

    cache_root: Path
    pythons: dict[str, str]
    env: dict[str, str]
    s3_client: Any
    configmaps: dict[str, dict[str, str]]
    on_event: Callable[[str, Node], None] | None = None
    on_started: Callable[[LocalArgo], None] | None = None
    code_root: Path = REPO_ROOT
    objects: Any = None


def execute(
    workflow: dict[str, Any],
    templates: list[dict[str, Any]],
    services: StepServices,
    *,
    run_id: str,
    run_dir: Path,
    status_file: Path,
    status: dict[str, Any] | None = None,
) -> tuple[LocalArgo, Node]:
    """Run the workflow to its end on `services`; return the executor (phase, message, stop reason) and the
    root node.

    `status` is an earlier run's status to retry from. The signal handlers are this function's own: the
    caller's are back when it returns or raises."""
    s = services

    def upload_artifact(key: str, f: Path) -> str:
        s.s3_client.upload_file(str(f), ARTIFACT_BUCKET, key)
        return f"s3://{ARTIFACT_BUCKET}/{key}"

    cluster = LocalCluster(
        pythons=s.pythons,
        pvc_dirs=lambda claim: s.cache_root / "pvc" / claim,
        run_dir=run_dir,
        cwd=s.code_root,
        env=s.env,
        upload_artifact=upload_artifact,
        on_event=s.on_event or event_printer(),
        configmaps=s.configmaps,
        state_dir=s.cache_root / "argo-state",
        objects=s.objects,
    )
    argo = LocalArgo(workflow, templates, cluster, status=status)
    argo.name = run_id

    def handle(signum, _frame):
        argo.stop(f"stopped by {signal.Signals(signum).name}")

    prev: dict[int, Any] = {}
    try:
        for sig in (signal.SIGINT, signal.SIGTERM):
            prev[sig] = signal.signal(sig, handle)
        if s.on_started is not None:
            s.on_started(argo)
        # The steps' own progress (a point's requests done, ETA) between the event lines, when the events are
        # printed here; a caller with its own on_event has its own display.
        watcher = ProgressWatcher(argo) if s.on_event is None else contextlib.nullcontext()
        try:
            with watcher:
                root = argo.run()
        finally:
            write_status(status_file, argo.status())
    finally:
        for sig, h in prev.items():
            signal.signal(sig, h)
    return argo, root
