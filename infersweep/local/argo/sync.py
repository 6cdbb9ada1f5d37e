"""Argo synchronization (semaphores and mutexes) across local runs on this machine.

Semantics (Argo Workflows v4.1.2): a semaphore's limit is read from a ConfigMap key when a holder tries
to acquire it (workflow/controller/controller.go createSynchronizationManager.getSyncLimit): a missing
ConfigMap is the Kubernetes NotFound error `configmaps "NAME" not found`, a missing key is
`Sync configuration key 'KEY' not found in ConfigMap`. Either is not retryable (workflow/sync/
sync_manager.go IsRetryableSyncError), so a workflow-level lock fails the workflow at start
(operator.go operate: "Failed to acquire the synchronization lock. ...") and a template-level lock errors
the node (operator.go executeTemplate -> initializeNodeOrMarkError). A holder that cannot acquire waits
(workflow Pending / node Pending) and is retried. A mutex is a semaphore of limit 1 keyed by its name.

Locally the holders live as files under a state directory shared by every local run, guarded by an
flock, so two `infersweep argo run` processes honour one limit. A holder whose process died is freed.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


class SyncError(RuntimeError):
    """Not retryable: the ConfigMap or key the lock names does not exist."""


def lock_specs(sync: dict[str, Any] | None, namespace: str) -> list[tuple[str, str, int | None]]:
    """[(kind, lock key, fixed limit or None)] of a `synchronization` block."""
    if not sync:
        return []
    # v4: only the plural lists (the singular fields are refused by validate._check_sync)
    sems = list(sync.get("semaphores") or [])
    mutexes = list(sync.get("mutexes") or [])
    out: list[tuple[str, str, int | None]] = []
    for s in sems:
        ref = s.get("configMapKeyRef")
        if not ref:
            raise SyncError(
                "semaphore: only configMapKeyRef semaphores run locally (database semaphores need the controller's database)"
            )
        ns = s.get("namespace") or namespace
        out.append(("semaphore", f"{ns}/ConfigMap/{ref['name']}/{ref['key']}", None))
    for m in mutexes:
        ns = m.get("namespace") or namespace
        out.append(("mutex", f"{ns}/Mutex/{m['name']}", 1))
    return out


class LocalLocks:
    def __init__(self, state_dir: Path, configmaps: dict[str, dict[str, str]]) -> None:
        self.dir = Path(state_dir) / "sync"
        self.dir.mkdir(parents=True, exist_ok=True)
        self.configmaps = configmaps  # "ns/name" -> data

    def limit(self, key: str) -> int:
        ns, kind, name, *rest = key.split("/")
        if kind == "Mutex":
            return 1
        cm = self.configmaps.get(f"{ns}/{name}")
        if cm is None:
            raise SyncError(f'configmaps "{name}" not found')
        if rest[0] not in cm:
            raise SyncError(f"Sync configuration key '{rest[0]}' not found in ConfigMap")
        try:
            return int(str(cm[rest[0]]))
        except ValueError:
            raise SyncError(f'strconv.Atoi: parsing "{cm[rest[0]]}": invalid syntax') from None

    @contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.dir / ".lock", "a+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    def _holders(self, key: str) -> Path:
        d = self.dir / re.sub(r"[^A-Za-z0-9_.-]", "_", key)
        d.mkdir(parents=True, exist_ok=True)
        return d

    # ---- the pending queue of a lock: workflow/sync/multi_throttler.go priorityQueue, a Go container/heap ----
    # Items are [holder, priority, creation second, pid]. Less: higher priority first, then earlier creation
    # (Kubernetes creationTimestamp, 1 s resolution); ties are left where the heap operations put them, so two
    # locks' queues can disagree about which of two same-second runs is first, exactly as on a cluster.
    @staticmethod
    def _less(q: list, i: int, j: int) -> bool:
        if q[i][1] == q[j][1]:
            return q[i][2] < q[j][2]
        return q[i][1] > q[j][1]

    def _up(self, q: list, j: int) -> None:  # container/heap up
        while True:
            i = (j - 1) // 2
            if i == j or j <= 0 or not self._less(q, j, i):
                break
            q[i], q[j] = q[j], q[i]
            j = i

    def _down(self, q: list, i0: int, n: int) -> bool:  # container/heap down
        i = i0
        while True:
            j1 = 2 * i + 1
            if j1 >= n or j1 < 0:
                break
            j = j1
            j2 = j1 + 1
            if j2 < n and self._less(q, j2, j1):
                j = j2
            if not self._less(q, j, i):
                break
            q[i], q[j] = q[j], q[i]
            i = j
        return i > i0

    def _q_remove(self, q: list, i: int) -> None:  # container/heap Remove
        n = len(q) - 1
        if n != i:
            q[i], q[n] = q[n], q[i]
            if not self._down(q, i, n):
                self._up(q, i)
        q.pop()

    def _q_add(self, q: list, holder: str, priority: int, created: int) -> None:  # priorityQueue.add
        for i, it in enumerate(q):
            if it[0] == holder:
                if it[1] != priority:
                    it[1] = priority
                    if not self._down(q, i, len(q)):  # heap.Fix
                        self._up(q, i)
                return
        q.append([holder, priority, created, os.getpid()])
        self._up(q, len(q) - 1)

    def _queue(self, key: str) -> list:
        f = self._holders(key) / ".queue.json"
        try:
            q = json.loads(f.read_text())
        except (OSError, ValueError):
            q = []
        for i in reversed(range(len(q))):  # a run that died while waiting leaves the queue
            if not _pid_alive(q[i][3]):
                self._q_remove(q, i)
        return q

    def _save_queue(self, key: str, q: list) -> None:
        (self._holders(key) / ".queue.json").write_text(json.dumps(q))

    def try_acquire(
        self, holder: str, sync: dict[str, Any] | None, namespace: str, priority: int = 0, created: int = 0
    ) -> tuple[bool, str]:
        """sync_manager.go TryAcquire: prepAcquire queues `holder` on every lock of `sync` (priority,
        creation second); tryAcquireImpl takes them all or none, each only when the front of its queue is
        this workflow (semaphore.go checkAcquire, isSameWorkflowNodeKeys) and a slot is free."""
        specs = lock_specs(sync, namespace)
        if not specs:
            return True, ""
        limits = {key: (fixed if fixed is not None else self.limit(key)) for _, key, fixed in specs}
        safe = _safe(holder)
        with self._locked():
            queues = {}
            for _, key, _ in specs:
                q = self._queue(key)
                if not (self._holders(key) / safe).exists():  # addToQueue skips a holder
                    self._q_add(q, holder, priority, created)
                queues[key] = q
            msg = ""
            for _, key, _ in specs:
                d = self._holders(key)
                if (d / safe).exists():
                    continue  # already holding
                live = [h for h in d.iterdir() if not h.name.startswith(".") and _alive(h)]
                q = queues[key]
                front_ok = not q or _same_workflow(holder, q[0][0])
                if not front_ok or len(live) >= limits[key]:
                    msg = msg or f"Waiting for {key} lock. Lock status: {limits[key] - len(live)}/{limits[key]}"
            if not msg:
                for _, key, _ in specs:
                    (self._holders(key) / safe).write_text(str(os.getpid()))
                    q = queues[key]
                    for i, it in enumerate(q):
                        if it[0] == holder:
                            self._q_remove(q, i)  # tryAcquire: pending.remove
                            break
            for key, q in queues.items():
                self._save_queue(key, q)
        return not msg, msg

    def release(self, holder: str, sync: dict[str, Any] | None, namespace: str) -> None:
        safe = _safe(holder)
        try:
            specs = lock_specs(sync, namespace)
        except SyncError:
            return
        with self._locked():
            for _, key, _ in specs:
                (self._holders(key) / safe).unlink(missing_ok=True)
                q = self._queue(key)
                for i, it in enumerate(q):
                    if it[0] == holder:
                        self._q_remove(q, i)
                        break
                self._save_queue(key, q)

    def leave_queues(self, prefix: str) -> None:
        """A finished run leaves every queue it still waits in (sync_manager.go ReleaseAll)."""
        with self._locked():
            for d in self.dir.iterdir():
                if not d.is_dir():
                    continue
                f = d / ".queue.json"
                try:
                    q = json.loads(f.read_text())
                except (OSError, ValueError):
                    continue
                for i in reversed(range(len(q))):
                    if q[i][0] == prefix or q[i][0].startswith(prefix + "/"):
                        self._q_remove(q, i)
                f.write_text(json.dumps(q))


def _safe(holder: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", holder)


def _same_workflow(a: str, b: str) -> bool:
    # semaphore.go isSameWorkflowNodeKeys: same number of parts and the same workflow (here namespace/name/uid,
    # since two local runs of one file share a name)
    pa, pb = a.split("/"), b.split("/")
    return len(pa) == len(pb) and pa[:3] == pb[:3]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True


def _alive(holder_file: Path) -> bool:
    try:
        pid = int(holder_file.read_text() or 0)
        os.kill(pid, 0)
        return True
    except (ValueError, ProcessLookupError, FileNotFoundError):
        holder_file.unlink(missing_ok=True)  # its run died without releasing: free the slot
        return False
    except PermissionError:
        return True
