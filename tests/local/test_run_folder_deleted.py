"""Deleting a local run's folder mid-run must not orphan its Dynamo processes (issue 38 item 9: dynamo.mocker
and dynamo.frontend were left running with PPID 1, because the run found its processes only through the
records in that folder)."""

from __future__ import annotations

import shutil
import time

from infersweep.local.dynamo import procs


def test_a_runs_processes_are_stopped_when_its_folder_and_records_are_gone(tmp_path):
    state_dir = tmp_path / "runs" / "r1" / "state" / "dgd" / "demo"
    token = "r1-0123abcd"
    env = {"PATH": "/usr/bin:/bin", procs.RUN_MARKER: token}
    group = procs.ProcessGroup(state_dir)
    # a frontend-like child and one that ignores SIGTERM and forks (the worker's engine processes)
    group.spawn("frontend", ["sleep", "60"], env, state_dir / "logs" / "frontend.log")
    group.spawn("worker", ["sh", "-c", "trap '' TERM; sleep 60 & sleep 60"], env, state_dir / "logs" / "worker.log")
    other = procs.ProcessGroup(tmp_path / "other")  # another run's process: never touched
    other.spawn("frontend", ["sleep", "60"], {"PATH": "/usr/bin:/bin", procs.RUN_MARKER: "r2"}, tmp_path / "o.log")
    time.sleep(0.3)
    pids = [r["pid"] for r in group.records()]
    try:
        shutil.rmtree(tmp_path / "runs")  # the user deletes the run folder
        assert procs.stop_all(state_dir) == []  # the records went with it: this alone stops nothing
        assert len(procs.pod_processes(token, procs.RUN_MARKER)) >= 3
        stopped = procs.stop_run_processes(token, grace_s=0.5)
        assert set(pids) <= set(stopped)
        assert procs.pod_processes(token, procs.RUN_MARKER) == []
        assert len(procs.pod_processes("r2", procs.RUN_MARKER)) == 1
    finally:
        procs.stop_all(tmp_path / "other", grace_s=0.5)
        procs.stop_run_processes(token, grace_s=0.5)
