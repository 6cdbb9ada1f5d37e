"""Supervision of the processes local mode starts (Dynamo frontend, mockers, ...).

Each child runs in its own session, so its process group holds it and everything it forks, and
one `killpg` stops the lot. Every child is recorded in `<state_dir>/processes.json`, so another
process — a later workflow step — can list and stop them without having started them.

Records carry the leader's kernel start time: a pid that died and was reused by an unrelated
process is then recognised and never signalled.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

STATE_FILE = "processes.json"
LOCK_FILE = ".processes.lock"
# Set in the environment of every process a local "pod" starts (infersweep/local/argo/pod.py _run_pod). A child
# that leaves the pod's process group (AIPerf starts itself in its own session, steps/aiperf_point.py) still
# inherits it, so the pod's processes can be found and stopped together, as a container's are.
POD_MARKER = "INFERSWEEP_LOCAL_POD"
# Every process a local run starts inherits RUN_MARKER=<run token> (infersweep.local.run gives it to the steps,
# and the Dynamo processes a deploy step spawns keep it): the run finds what is left of it by this alone, even
# when its folder, and the process records in it, were deleted mid-run (issue 38).
RUN_MARKER = "INFERSWEEP_LOCAL_RUN"

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


# ---------------------------------------------------------------- /proc helpers (Linux)


def _proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, pgid, start_time_ticks) of `pid`, or None if it does not exist or no /proc."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError, OSError):
        return None
    # The command name is in parentheses and may contain spaces: split after the last ')'.
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[2]), int(fields[19])


def _start_time(pid: int) -> int | None:
    stat = _proc_stat(pid)
    return stat[2] if stat else None


# Children started by this process, until their exit is collected. Reaping through Popen keeps
# its returncode in sync (no "subprocess still running" ResourceWarning).
_children: dict[int, subprocess.Popen] = {}
# Exit codes of children this process has collected, by pid.
_exit_codes: dict[int, int] = {}


def _reap(pid: int) -> int | None:
    """Collect `pid` if it is our own exited child (else it lingers as a zombie).

    Returns its exit code (negative = killed by that signal), or None if not ours / not exited.
    """
    if pid in _exit_codes:
        return _exit_codes[pid]
    popen = _children.get(pid)
    if popen is not None:
        code = popen.poll()
    else:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        code = os.waitstatus_to_exitcode(status) if done else None
    if code is not None:
        _exit_codes[pid] = code
        _children.pop(pid, None)
    return code


def _group_members(pgid: int) -> list[int]:
    """Live (non-zombie) pids whose process group is `pgid`."""
    if not Path("/proc/self/stat").exists():  # not Linux: ask the kernel about the group
        try:
            os.killpg(pgid, 0)
            return [pgid]
        except (ProcessLookupError, PermissionError):
            return []
    members = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            stat = _proc_stat(int(entry.name))
            if stat and stat[1] == pgid and stat[0] != "Z":
                members.append(int(entry.name))
    return members


def record_alive(record: Mapping[str, Any]) -> bool:
    """True if the recorded leader still runs (same start time), or its group has members left."""
    pid, pgid = int(record["pid"]), int(record["pgid"])
    _reap(pid)
    stat = _proc_stat(pid)
    if stat is not None:
        if record.get("start_time") not in (None, stat[2]):
            # pid reused by an unrelated process. The kernel does not reuse a pid while a
            # process group of that id has members, so none of ours can be left.
            return False
        if stat[0] != "Z":
            return True
    # Leader gone (or a zombie): what is left of its group is ours (e.g. orphaned children).
    return bool(_group_members(pgid))


def exit_code(record: Mapping[str, Any]) -> int | None:
    """Exit code of a recorded process if this process is its parent and it has exited."""
    return _reap(int(record["pid"]))


# ---------------------------------------------------------------- state file


def _state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


@contextlib.contextmanager
def _locked(state_dir: Path) -> Iterator[None]:
    """Serialise read-modify-write of the state file between processes."""
    Path(state_dir).mkdir(parents=True, exist_ok=True)
    with open(Path(state_dir) / LOCK_FILE, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def read_records(state_dir: Path) -> list[dict]:
    path = _state_path(state_dir)
    if not path.exists():
        return []
    return json.loads(path.read_text() or "[]")


def _write_records(state_dir: Path, records: list[dict]) -> None:
    path = _state_path(state_dir)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(records, indent=1) + "\n")
    os.replace(tmp, path)  # readers never see a half-written file


# ---------------------------------------------------------------- public API


class ProcessGroup:
    """Starts children and records them under `state_dir` (see module docstring)."""

    def __init__(self, state_dir: Path):
        self.state_dir = Path(state_dir)

    def spawn(
        self,
        name: str,
        argv: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        cwd: Path | None = None,
    ) -> subprocess.Popen:
        """Start `argv` in a new session, stdout+stderr appended to `log_path`, and record it."""
        log_path = Path(log_path)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        # What this starts is the deployment's (Dynamo frontend, workers), not the pod's that asked for it:
        # it outlives the deploy step, as a DGD's pods do, and stop_all ends it, not the pod's end.
        env = {k: v for k, v in env.items() if k != POD_MARKER}
        with open(log_path, "ab") as log:
            popen = subprocess.Popen(
                list(argv),
                env=dict(env),
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: killpg reaches its children too
            )
        record = {
            "name": name,
            "pid": popen.pid,
            "pgid": popen.pid,  # session leader => pgid == pid
            "start_time": _start_time(popen.pid),
            "argv": list(argv),
            "log_path": str(log_path),
            "started_at": time.time(),
        }
        with _locked(self.state_dir):
            records = [r for r in read_records(self.state_dir) if r["name"] != name]
            _write_records(self.state_dir, records + [record])
        _children[popen.pid] = popen
        _exit_codes.pop(popen.pid, None)  # a reused pid: forget the old child's exit
        return popen

    def records(self) -> list[dict]:
        return read_records(self.state_dir)


def alive(state_dir: Path) -> list[dict]:
    """Records of the processes under `state_dir` that are still running."""
    return [r for r in read_records(state_dir) if record_alive(r)]


def _signal_group(record: Mapping[str, Any], sig: int) -> None:
    if not record_alive(record):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(int(record["pgid"]), sig)


def _terminate(records: list[dict], grace_s: float) -> None:
    """SIGTERM every record's process group, SIGKILL what is left after `grace_s`, then wait for them to exit."""
    for record in records:
        _signal_group(record, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while any(record_alive(r) for r in records) and time.monotonic() < deadline:
        time.sleep(0.05)
    for record in records:
        _signal_group(record, signal.SIGKILL)
    deadline = time.monotonic() + 5  # SIGKILL cannot be ignored; this only waits for exit
    while any(record_alive(r) for r in records) and time.monotonic() < deadline:
        time.sleep(0.05)


def stop_all(state_dir: Path, grace_s: float = 5) -> list[dict]:
    """SIGTERM every recorded process group, SIGKILL what is left after `grace_s`, forget them.

    Idempotent: already-dead or already-stopped processes are fine. Returns the records handled.
    """
    if not _state_path(state_dir).exists():
        return []
    with _locked(state_dir):
        records = read_records(state_dir)
        _terminate(records, grace_s)
        left = [r for r in records if record_alive(r)]
        try:
            _write_records(state_dir, left)
        except OSError:
            pass  # disk full: the processes are stopped, which is what matters; stale records are harmless
    if left:
        raise RuntimeError(f"processes survived SIGKILL: {[(r['name'], r['pid']) for r in left]}")
    return records


def stop_named(state_dir: Path, names: set[str], grace_s: float = 5) -> None:
    """Stop the named processes of a deployment and forget their records (the others keep running)."""
    with _locked(state_dir):
        records = read_records(state_dir)
        _terminate([r for r in records if r["name"] in names], grace_s)
        _write_records(state_dir, [r for r in records if r["name"] not in names])


def strip_ansi(text: str) -> str:
    """`text` without ANSI colour codes (engine logs colour their levels)."""
    return _ANSI.sub("", text)


def pod_processes(marker: str, variable: str = POD_MARKER) -> list[int]:
    """Live pids whose environment holds `variable`=marker (whatever session or group they moved to)."""
    needle = f"{variable}={marker}".encode()
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry.name}/environ").read_bytes()
        except OSError:  # gone, or not ours to read (then it is not ours to stop either)
            continue
        if needle in environ.split(b"\0"):
            stat = _proc_stat(int(entry.name))
            if stat and stat[0] != "Z":
                pids.append(int(entry.name))
    return pids


def stop_pod_processes(marker: str, timeout_s: float = 5) -> list[int]:
    """SIGKILL every process left of a local pod once its main process has ended; return their pids.

    Kubernetes runs each container in its own PID namespace: when the container's main process ends, the
    kernel SIGKILLs everything else in that namespace (pid_namespaces(7): "If the init process of a PID
    namespace terminates, the kernel terminates all of the processes in the namespace via a SIGKILL
    signal"). Local pods have no namespace; the inherited POD_MARKER finds the same set of processes,
    including a child that started its own session (AIPerf's `aiperf system_controller` did, and outlived
    a stopped local run)."""
    if not Path("/proc/self/environ").exists():
        return []
    pids = pod_processes(marker)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while pids and time.monotonic() < deadline:
        for pid in pids:
            _reap(pid)
        if not pod_processes(marker):
            break
        time.sleep(0.05)
    return pids


def stop_run_processes(token: str, grace_s: float = 5) -> list[int]:
    """SIGTERM every live process that carries RUN_MARKER=token, SIGKILL what is left after `grace_s`; their
    pids. The run's last act: nothing it started outlives it, recorded or not."""
    if not token or not Path("/proc/self/environ").exists():
        return []
    pids = pod_processes(token, RUN_MARKER)
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        for pid in pod_processes(token, RUN_MARKER):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            for pid in pids:
                _reap(pid)
            if not pod_processes(token, RUN_MARKER):
                return pids
            time.sleep(0.05)
    return pids


def tail(path: Path | str, lines: int = 30) -> str:
    """Last `lines` lines of a log file, without ANSI colour codes ('' if missing)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 64 * 1024))
            text = f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return ""
    return "\n".join(_ANSI.sub("", text).splitlines()[-lines:])


def format_tails(log_paths: Sequence[Path | str], lines: int = 30) -> str:
    return "\n".join(f"--- {p} (last {lines} lines) ---\n{tail(p, lines)}" for p in log_paths)


def http_json(url: str, body: Any = None, timeout_s: float = 10) -> Any:
    """GET (or POST `body` as JSON) and return the decoded JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"} if data else {})
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read() or b"null")


def wait_http(
    url: str,
    timeout_s: float,
    predicate: Callable[[Any], bool] | None = None,
    *,
    body: Any = None,
    log_paths: Sequence[Path | str] = (),
    check: Callable[[], None] | None = None,
    interval_s: float = 0.25,
) -> Any:
    """Poll `url` until it answers JSON (and `predicate(json)` holds); return that JSON.

    `check` runs before every attempt and may raise to stop waiting early (e.g. a process died).
    On timeout raises TimeoutError with the last error and the tail of `log_paths`.
    """
    deadline = time.monotonic() + timeout_s
    last_error = "no attempt made"
    while True:
        if check is not None:
            check()
        try:
            answer = http_json(url, body, timeout_s=max(1.0, min(10.0, timeout_s)))
            if predicate is None or predicate(answer):
                return answer
            last_error = f"predicate false for answer {json.dumps(answer)[:500]}"
        except urllib.error.HTTPError as e:
            detail = e.read()[:500].decode("utf-8", errors="replace")
            last_error = f"HTTP {e.code}: {detail}"
        except (urllib.error.URLError, OSError, ValueError) as e:
            last_error = f"{type(e).__name__}: {e}"
        if time.monotonic() >= deadline:
            raise TimeoutError(
                f"{url} not ready after {timeout_s:.0f}s; last error: {last_error}\n" + format_tails(log_paths)
            )
        time.sleep(interval_s)
