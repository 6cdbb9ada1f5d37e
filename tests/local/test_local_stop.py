"""Ctrl-C on a local run stops every process it started, AIPerf's own included, and a point says how far it is.

AIPerf starts itself in its own session (infersweep/aiperf/point_run.py run_aiperf) and its services are its
children (aiperf/controller/multiprocess_service_manager.py). Before this, a stopped local run SIGKILLed the
point step's process group after 10 s, which cannot reach AIPerf's session: `aiperf system_controller` and
its services ran on. The stand-in AIPerf below behaves as the real one does where it matters: it forks
service processes, ignores the SIGINT it is sent (a slow shutdown), and appends records to
profile_export.jsonl while it runs (a real AIPerf 0.13.0 run's records, one by one).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from hera.workflows import Container, Steps, Workflow

from infersweep.local.argo import pod as local_argo_pod
from infersweep.local.executor import StepServices, execute
from tests.support.paths import FIXTURES, REPO

pytestmark = pytest.mark.slow  # real servers or subprocesses, seconds each: outside the inner loop

FIXTURE = FIXTURES / "aiperf" / "0.13.0" / "dynamo-mocker-c4"

FAKE_AIPERF = """\
#!{python}
import os, signal, subprocess, sys, time
from pathlib import Path

signal.signal(signal.SIGINT, signal.SIG_IGN)    # a shutdown slower than anyone waits for
signal.signal(signal.SIGTERM, signal.SIG_IGN)
argv = sys.argv[1:]
out = Path(argv[argv.index("--artifact-dir") + 1]); out.mkdir(parents=True, exist_ok=True)
service = [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)", {token!r}]
kids = [subprocess.Popen(service) for _ in range(2)]                         # its services: same group
kids.append(subprocess.Popen(service, start_new_session=True))               # and one that left it
lines = Path({records!r}).read_bytes().splitlines(keepends=True)
with open(out / "profile_export.jsonl", "ab") as f:
    for line in lines:
        f.write(line); f.flush(); time.sleep(0.25)
time.sleep(600)
"""


def _with_token(token: str) -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmd = Path(f"/proc/{entry.name}/cmdline").read_bytes()
                state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if token.encode() in cmd and state != "Z":
                pids.append(int(entry.name))
    return pids


def _point_workflow(fake: Path, out: Path) -> dict:
    with Workflow(name="stop", entrypoint="main") as wf:
        point = Container(
            name="point",
            image="local/step",
            command=["python", "-m", "steps.aiperf_point"],
            args=[
                "--url",
                "http://127.0.0.1:9",
                "--model",
                "m",
                "--tokenizer",
                str(out.parent),
                "--concurrency",
                "4",
                "--requests",
                "40",
                "--isl",
                "128",
                "--osl",
                "32",
                "--out",
                str(out),
                "--aiperf",
                str(fake),
                "--grace-s",
                "60",
            ],
        )
        with Steps(name="main"):
            point(name="point")
    return wf.to_dict()


def test_ctrl_c_stops_aiperf_and_its_children_and_the_point_reports_progress(tmp_path, monkeypatch):
    token = f"infersweep-stop-test-{uuid.uuid4().hex}"
    fake = tmp_path / "aiperf"
    fake.write_text(
        FAKE_AIPERF.format(python=sys.executable, token=token, records=str(FIXTURE / "profile_export.jsonl"))
    )
    fake.chmod(0o755)
    # The kubelet's grace (30 s) shortened so the test does not wait for it; the point's own (--grace-s 60)
    # is then longer than it, as when AIPerf is slow to stop: the step is SIGKILLed with AIPerf still there.
    monkeypatch.setattr(local_argo_pod, "TERMINATION_GRACE_S", 1)
    lines: list[str] = []

    def ctrl_c_when_measuring():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(_with_token(token)) < 3:
            time.sleep(0.1)
        time.sleep(6.5)  # past the point's first progress interval (PROGRESS_EVERY_S), records half written
        signal.raise_signal(signal.SIGINT)

    threading.Thread(target=ctrl_c_when_measuring, daemon=True).start()
    from infersweep.local.progress_watch import ProgressWatcher

    monkeypatch.setattr(
        "infersweep.local.executor.ProgressWatcher", lambda argo: ProgressWatcher(argo, out=lines.append, every_s=0.2)
    )
    try:
        argo, _ = execute(
            _point_workflow(fake, tmp_path / "points" / "c4"),
            [],
            StepServices(
                cache_root=tmp_path / "cache",
                pythons={"local/step": sys.executable},
                env={"PATH": os.environ["PATH"]},
                s3_client=None,
                configmaps={},
            ),
            run_id="stop",
            run_dir=tmp_path / "run",
            status_file=tmp_path / "status.json",
        )
    finally:
        left = _with_token(token)
        for pid in left:  # never leave them to the next test
            os.kill(pid, signal.SIGKILL)
    assert argo.stop_reason == "stopped by SIGINT"
    assert left == [], f"{len(left)} of AIPerf's processes outlived the stopped run"
    log = next((tmp_path / "run" / "nodes").glob("*point*")) / "main.log"
    progress = [ln for ln in log.read_text().splitlines() if ln.startswith("progress: ")]
    assert progress and progress[0].startswith("progress: 0/40 requests (0%)"), log.read_text()[-2000:]
    assert any(" ETA " in ln for ln in progress[1:]), progress
    n, m = (log.parent / "progress").read_text().strip().split("/")  # Argo's N/M, for the node's `progress`
    assert m == "40" and 0 < int(n) < 40
    assert any("/40 requests" in ln and "progress point: " in ln for ln in lines), lines


def _stat(pid: int) -> tuple[int, int, int, str] | None:
    """(ppid, session id, start time, state) of a pid, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    f = raw[raw.rindex(")") + 2 :].split()
    return int(f[1]), int(f[3]), int(f[19]), f[0]


def _descendants(root: int) -> dict[int, tuple[int, int, str]]:
    """{pid: (session id, start time, command line)} of root's live descendants (through /proc's parent links)."""
    stats = {int(e.name): _stat(int(e.name)) for e in os.scandir("/proc") if e.name.isdigit()}
    kids: dict[int, list[int]] = {}
    for pid, st in stats.items():
        if st:
            kids.setdefault(st[0], []).append(pid)
    out, todo = {}, [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            if stats[k] and stats[k][3] != "Z":
                out[k] = (stats[k][1], stats[k][2], _cmdline(k))
                todo.append(k)
    return out


def _survivors(seen: dict[int, tuple[int, int, str]]) -> list[int]:
    """Pids seen during the run that still live (same start time), and any process of a session they had
    (AIPerf's services are in its session; retitled by setproctitle, their environ and argv say nothing)."""
    sessions = {sid for sid, _, _ in seen.values()} - {os.getsid(0)}
    left = []
    for e in os.scandir("/proc"):
        if e.name.isdigit():
            st = _stat(int(e.name))
            if st and st[3] != "Z" and ((int(e.name) in seen and seen[int(e.name)][1] == st[2]) or st[1] in sessions):
                left.append(int(e.name))
    return left


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.e2e
def test_ctrl_c_on_a_real_local_run_leaves_no_process(tmp_path):
    """`infersweep run --local` with the real AIPerf (its system_controller and services), Dynamo and S3:
    SIGINT while a point measures, and nothing the run started is left once it has exited."""
    log = tmp_path / "run.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "infersweep",
                "run",
                "--local",
                "nemotron-3-nano-fp8-vllm-agg-kv",
                "--out",
                str(tmp_path / "runs"),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    seen: dict[int, tuple[int, int, str]] = {}
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not any(c.startswith("aiperf worker") for *_, c in seen.values()):
            assert proc.poll() is None, log.read_text()[-3000:]
            seen |= _descendants(proc.pid)
            time.sleep(0.3)
        time.sleep(2)  # AIPerf's services (retitled `aiperf <service>`, aiperf/common/base_service.py) are up
        seen |= _descendants(proc.pid)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        left = _survivors(seen)
        described = [f"{p} {_cmdline(p)[:60]}" for p in left]
        for pid in left:
            os.kill(pid, signal.SIGKILL)
    text = log.read_text()
    assert "stopped by SIGINT" in text, text[-3000:]
    assert sum(c.startswith("aiperf ") for *_, c in seen.values()) >= 2  # the controller and its services were seen
    assert left == [], f"{len(left)} processes outlived the stopped run: {described}"
