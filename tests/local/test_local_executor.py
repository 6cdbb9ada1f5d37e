"""infersweep/local/executor.py execute(), the executor set-up `run --local` and `experiment run --local` share:
SIGTERM while a workflow runs is `argo stop` (the exit handler still runs), the run's status is written, and the
caller's signal handlers are back afterwards. Steps are real `python -m` processes (tests/local/test_local_argo.py)."""

from __future__ import annotations

import json
import signal
import sys
import threading

from infersweep.local.executor import StepServices, execute
from tests.local.test_local_argo import STEP, build, trace_of


def test_sigterm_is_argo_stop_status_is_written_and_handlers_are_restored(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "fakestep.py").write_text(STEP)
    started = []

    def mine(signum, frame):  # the caller's own handler: must be back after the run
        raise AssertionError("the caller's handler ran during the workflow")

    before = signal.signal(signal.SIGTERM, mine)
    try:
        threading.Timer(2.0, signal.raise_signal, args=(signal.SIGTERM,)).start()
        argo, root = execute(
            build(tmp_path, sleep="30"),
            [],
            StepServices(
                cache_root=tmp_path / "cache",
                pythons={"local/step": sys.executable},
                env={"PATH": "/usr/bin:/bin"},
                code_root=tmp_path / "code",
                s3_client=None,  # the workflow has no artifacts: nothing is uploaded
                configmaps={},
                on_event=lambda kind, node: None,
                on_started=started.append,
            ),
            run_id="t",
            run_dir=tmp_path / "run",
            status_file=tmp_path / "status.json",
        )
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)
    assert started == [argo] and argo.name == "t"
    assert argo.phase == "Failed" and argo.stop_reason == "stopped by SIGTERM"
    assert "exit-Failed" in trace_of(tmp_path), "stop runs the exit handler"
    assert json.loads((tmp_path / "status.json").read_text())["phase"] == "Failed"
    assert root.phase == "Failed"
