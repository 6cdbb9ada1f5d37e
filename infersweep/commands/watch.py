"""`infersweep watch NAME`: what `infersweep submit --watch` prints while a cluster run goes on, read from the Argo Server.

Each poll reads the Workflow (its status as the controller writes it) and prints what changed:
- the run's phase and its `progress` (the controller's sum of its pods' progress);
- each step as it starts and ends, and a benchmark point's requests done of its total with elapsed time
  and ETA: the point step writes `N/M` to $ARGO_PROGRESS_FILE (infersweep/aiperf/point_run.py PointProgress),
  Argo's executor reads it into the node's `progress` (workflow/executor/executor.go monitorProgress; the
  pod is patched at most every ARGO_PROGRESS_PATCH_TICK_DURATION, 1 m by default, controller.go);
- "waiting for GPUs (lane, position)" while the GPU span waits for its semaphore: the node is Pending with
  the message Argo's semaphore gives (workflow/sync/semaphore.go checkAcquire: "Waiting for <key> lock.
  Lock status: <free>/<limit>") and `synchronizationStatus.waiting` naming the lock
  (workflow/controller/operator.go markNodeWaitingForLock). Argo does not say the position: it is
  derived here as the semaphore's queue orders it (higher spec.priority first, then the older workflow:
  sync_manager.go prepAcquire / semaphore.go), among the workflows of the namespace waiting on that lock;
- at the end, where the results are and the `infersweep report` and `infersweep logs` commands.
"""

from __future__ import annotations

import argparse
import re
import time
from datetime import datetime, timezone
from typing import Any, Callable

from infersweep.aiperf.point_run import progress_text

DONE = ("Succeeded", "Failed", "Error")
WAITING = re.compile(r"Waiting for (?P<key>\S+) lock\. Lock status: (?P<free>\d+)/(?P<limit>\d+)")
POINT_TEMPLATES = ("aiperf-point",)


def _seconds_since(stamp: str | None, now: float) -> float:
    if not stamp:
        return 0.0
    t = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    return max(0.0, now - t)


def _step(node: dict) -> str:
    """A step as the UI names it, a loop item by its index: `point(0:{json})` -> `point(0)`."""
    return re.sub(r"\((\d+):[^()]*\)", r"(\1)", node.get("displayName") or node.get("name", ""))


def _is_point(node: dict) -> bool:
    ref = (node.get("templateRef") or {}).get("template") or node.get("templateName") or ""
    return any(t in ref for t in POINT_TEMPLATES) or ref.endswith("point")


def _lock_of(node: dict) -> str:
    return (node.get("synchronizationStatus") or {}).get("waiting") or ""


def queue_position(workflows: list[dict], name: str, lock: str) -> tuple[int, int] | None:
    """(position, waiting) of workflow `name` in the queue of semaphore `lock`, or None when not waiting."""
    waiting = []
    for wf in workflows:
        nodes = ((wf.get("status") or {}).get("nodes") or {}).values()
        if any(n.get("phase") == "Pending" and _lock_of(n) == lock for n in nodes):
            meta = wf["metadata"]
            waiting.append(
                (-int((wf.get("spec") or {}).get("priority") or 0), meta.get("creationTimestamp") or "", meta["name"])
            )
    order = [w[2] for w in sorted(waiting)]
    return (order.index(name) + 1, len(order)) if name in order else None


def waiting_line(node: dict, position: tuple[int, int] | None) -> str | None:
    m = WAITING.search(node.get("message") or "")
    if not m:
        return None
    lane = m["key"].rsplit("/", 1)[-1]
    where = f", position {position[0]} of {position[1]}" if position else ""
    return f"waiting for GPUs (lane {lane}{where}; {m['free']}/{m['limit']} free)"


def node_lines(node: dict, now: float) -> str | None:
    """One line for a pod node's current state, or None when there is nothing to say."""
    phase = node.get("phase") or "Pending"
    if phase == "Running":
        progress = node.get("progress") or ""
        n, _, m = progress.partition("/")
        if _is_point(node) and n.isdigit() and m.isdigit() and int(m) > 1:
            return f"  {_step(node)}: {progress_text(int(n), int(m), _seconds_since(node.get('startedAt'), now))}"
        return f"  {_step(node)}: running"
    if phase in ("Succeeded", "Failed", "Error", "Omitted", "Skipped"):
        mark = {"Succeeded": "ok"}.get(phase, phase.lower())
        msg = f" ({node['message'][:160]})" if node.get("message") and phase != "Succeeded" else ""
        return f"  {_step(node)}: {mark}{msg}"
    return None


def results_lines(wf: dict) -> list[str]:
    """Where a finished run's results are, and the commands that read them."""
    params = {
        p["name"]: p.get("value") for p in ((wf.get("spec") or {}).get("arguments") or {}).get("parameters") or []
    }
    name = wf["metadata"]["name"]
    recipe = (wf["metadata"].get("labels") or {}).get("infersweep.io/recipe") or params.get("recipe") or "RECIPE"
    lines = []
    bucket, prefix = params.get("s3-bucket"), params.get("s3-prefix")
    if bucket:
        store = f"s3://{bucket}/{prefix}" if prefix else f"s3://{bucket}"
        lines += [f"results: {store}/{recipe}/{name}/", f"report:  infersweep report {name} --store {store}"]
    lines.append(f"logs:    infersweep logs {name} [STEP]")
    return lines


def watch(
    server, name: str, poll_s: float = 5.0, out: Callable[[str], None] = print, now: Callable[[], float] = time.time
) -> str:
    """Print each change until the workflow ends; return its final phase."""
    seen: dict[str, Any] = {}
    while True:
        wf = server.get_workflow(name)
        st = wf.get("status") or {}
        head = (st.get("phase") or "Pending", st.get("progress"), st.get("message"))
        if head != seen.get("_wf"):
            out(f"{name}: {head[0]}" + (f" {head[1]}" if head[1] else "") + (f" ({head[2]})" if head[2] else ""))
            seen["_wf"] = head
        t = now()
        for nid, node in sorted((st.get("nodes") or {}).items(), key=lambda kv: kv[1].get("startedAt") or ""):
            line = None
            if node.get("phase") == "Pending" and _lock_of(node):
                position = None
                try:
                    position = queue_position(server.list_workflows(), name, _lock_of(node))
                except Exception:  # the position is a courtesy: the waiting line stands without it
                    pass
                line = waiting_line(node, position)
                line = line and f"  {_step(node)}: {line}"
            elif node.get("type") == "Pod":
                line = node_lines(node, t)
            key = (line or "").split(", ", 1)[0] if line and "elapsed" in line else line
            # a point's line changes every poll (elapsed time): print it again when its progress moves
            if line and seen.get(nid) != (key, node.get("progress")):
                out(line)
                seen[nid] = (key, node.get("progress"))
        if head[0] in DONE:
            for line in results_lines(wf):
                out(line)
            return head[0]
        time.sleep(poll_s)


def run(a: argparse.Namespace) -> int:
    from infersweep.argo_server import server_from_args

    return 0 if watch(server_from_args(a), a.name, a.poll_s) == "Succeeded" else 1


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.argo_server import add_server_flags

    p = sub.add_parser("watch", help="follow a cluster run until it ends: steps, point progress, GPU queue, results")
    p.add_argument("name", help="workflow name (as printed by submit)")
    p.add_argument("--poll-s", type=float, default=5.0, help="seconds between reads of the run (default 5)")
    add_server_flags(p)
    p.set_defaults(fn=run)
