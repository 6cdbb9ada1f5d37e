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
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator


class SyncError(RuntimeError):
    """Not retryable: the ConfigMap or key the lock names does not exist."""


def lock_specs(sync: dict[str, Any] | None, namespace: str) -> list[tuple[str, str, int | None]]:
    """[(kind, lock key, fixed limit or None)] of a `synchronization` block (plural and legacy singular)."""
    if not sync:
        return []
    sems = list(sync.get("semaphores") or []) + ([sync["semaphore"]] if sync.get("semaphore") else [])
    mutexes = list(sync.get("mutexes") or []) + ([sync["mutex"]] if sync.get("mutex") else [])
    out: list[tuple[str, str, int | None]] = []
    for s in sems:
        ref = s.get("configMapKeyRef")
        if not ref:
            raise SyncError("semaphore: only configMapKeyRef semaphores run locally (database semaphores need the controller's database)")
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

    def try_acquire(self, holder: str, sync: dict[str, Any] | None, namespace: str) -> tuple[bool, str]:
        """Acquire every lock of `sync` for `holder`, all or none. (acquired, message when waiting)."""
        specs = lock_specs(sync, namespace)
        if not specs:
            return True, ""
        limits = {key: (fixed if fixed is not None else self.limit(key)) for _, key, fixed in specs}
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", holder)
        with self._locked():
            for kind, key, _ in specs:
                d = self._holders(key)
                if (d / safe).exists():
                    continue
                live = [h for h in d.iterdir() if _alive(h)]
                if len(live) >= limits[key]:
                    return False, f"Waiting for {key} lock. Lock status: 0/{limits[key]}"
            for _, key, _ in specs:
                (self._holders(key) / safe).write_text(str(os.getpid()))
        return True, ""

    def release(self, holder: str, sync: dict[str, Any] | None, namespace: str) -> None:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", holder)
        try:
            specs = lock_specs(sync, namespace)
        except SyncError:
            return
        with self._locked():
            for _, key, _ in specs:
                (self._holders(key) / safe).unlink(missing_ok=True)


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
