"""Progress of the steps that run, printed while a local run goes on (what `submit --watch` shows on a cluster).

A step reports its own progress as Argo's do: `N/M` in $ARGO_PROGRESS_FILE (the local executor points it
into the node's folder, infersweep/local/argo/pod.py _run_pod) and, for a benchmark point, a `progress:` line in
its log with elapsed time and ETA (infersweep/aiperf/point_run.py PointProgress). This thread reads both for
every running pod and prints each change once, in the event printer's style.
"""

from __future__ import annotations

import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

PREFIX = "progress: "


def short_step(name: str) -> str:
    """`gpu-span.point(0:concurrency:1,cpu:3,...)` -> `gpu-span.point(0)`: a loop item by its index."""
    return re.sub(r"\((\d+):[^()]*\)", r"(\1)", name)


def step_label(name: str) -> str:
    """A loop item by its index and the load it measures, for the console: `point(1:concurrency:8,cpu:6,
    memory:4096Mi,repetition:1,request_rate:0,requests:64,warmup:8)` (Argo's item name, 100+ characters) ->
    `point(1: c8 r1)`; a rate point `point(2: c8 @2.5/s)`. Other items: by their index only. The node's
    name stays Argo's (status.json, `infersweep logs`)."""

    def item(m: re.Match) -> str:
        fields = dict(kv.split(":", 1) for kv in m[2].split(",") if ":" in kv)
        if "concurrency" not in fields:
            return f"({m[1]})"
        load = f"c{fields['concurrency']}"
        if fields.get("request_rate") not in (None, "0", "0.0"):
            load += f" @{fields['request_rate']}/s"
        if fields.get("repetition") not in (None, "0"):
            load += f" r{fields['repetition']}"
        return f"({m[1]}: {load})"

    return re.sub(r"\((\d+):([^()]*)\)", item, name)


def last_progress_line(log: Path, window: int = 8192) -> str:
    """The text of the last `progress:` line of a step's log ('' when there is none yet)."""
    try:
        with open(log, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - window))
            text = f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    for line in reversed(text.splitlines()):
        if line.startswith(PREFIX):
            return line[len(PREFIX) :].strip()
    return ""


def read_progress_file(path: Path) -> str:
    """The last line of an ARGO_PROGRESS_FILE when it reads N/M (Argo's ParseProgress), else ''."""
    try:
        lines = path.read_text().strip().splitlines()
    except OSError:
        return ""
    last = lines[-1].strip() if lines else ""
    n, _, m = last.partition("/")
    return last if n.isdigit() and m.isdigit() else ""


def node_progress(node: Any) -> str:
    """What to show for a running pod: its log's progress line, else its progress file's N/M."""
    if node.log is None:
        return ""
    return last_progress_line(node.log) or read_progress_file(Path(node.log).parent / "progress")


class ProgressWatcher:
    """Polls the running pods of `argo` (a LocalArgo) every `every_s` and calls `out(text)` on each change."""

    def __init__(self, argo: Any, out: Callable[[str], None] | None = None, every_s: float = 1.0) -> None:
        self.argo, self.every_s = argo, every_s
        self.out = out or (lambda s: print(s, file=sys.stdout, flush=True))
        self.t0 = time.monotonic()
        self._seen: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress-watch", daemon=True)

    def __enter__(self) -> "ProgressWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def poll(self) -> None:
        stamp = f"[{time.monotonic() - self.t0:6.1f}s]"
        # A run whose GPU span (or the whole workflow) waits for a lock another run holds says so, once per
        # change: otherwise it sat silent while another run's GPUs were busy (issue 38). The text is Argo's own
        # (workflow/sync/semaphore.go checkAcquire "Waiting for <key> lock. Lock status: <free>/<limit>").
        waits = [
            (n.id, n.name, n.waiting_lock) for n in list(self.argo.nodes.values()) if getattr(n, "waiting_lock", "")
        ]
        if getattr(self.argo, "phase", "") in ("", "Pending") and "lock" in str(getattr(self.argo, "message", "")):
            waits.append(("workflow", "the workflow", str(self.argo.message)))
        for key, name, message in waits:
            if self._seen.get(f"wait:{key}") != message:
                self._seen[f"wait:{key}"] = message
                short = short_step(name.split(".", 1)[1] if "." in name else name)
                self.out(f"{stamp}  waiting {short}: {message} (another run holds it; this run starts when it is free)")
        for node in list(self.argo.nodes.values()):
            if node.type != "Pod" or node.phase != "Running":
                continue
            text = node_progress(node)
            if text and self._seen.get(node.id) != text:
                self._seen[node.id] = text
                short = short_step(node.name.split(".", 1)[1] if "." in node.name else node.name)
                self.out(f"[{time.monotonic() - self.t0:6.1f}s]  progress {short}: {text}")

    def _loop(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.poll()
            except Exception:  # a courtesy display: never disturbs the run
                pass
