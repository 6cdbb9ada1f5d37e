"""`experiment render` prints submit commands that give the run the GPU guard's queue priority (issue 34
item 7): a bare `argo submit` creates a run of priority 0, ahead of every queued run, and two such runs in
one second have no order on the locks they share (workflows/gpu_guard.py). argo-workflows v4.1.2
cmd/argo/commands/submit.go `--priority` sets spec.priority (workflow/util/util.go :264-265)."""

from __future__ import annotations

import re
import subprocess
import time

from infersweep.cli import main
from workflows.gpu_guard import PRIORITY_BAND


def test_render_prints_submits_with_the_queue_priority(tmp_path, capsys):
    assert main(["experiment", "render", "nemotron-rr-vs-kv", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "infersweep experiment submit nemotron-rr-vs-kv" in out
    argo = next(ln for ln in out.splitlines() if "argo submit" in ln)
    m = re.search(r"--priority (\"[^\"]+\")", argo)
    assert m, argo
    # the expression, run by a shell, is what `infersweep submit` would stamp at that moment
    before = -1 - int(time.time() * 1000) % PRIORITY_BAND
    got = int(subprocess.run(["bash", "-c", f"echo {m.group(1)}"], capture_output=True, text=True).stdout)
    assert -PRIORITY_BAND <= got <= -1
    assert abs(got - before) < 60_000 or got > before  # within a minute, or past a wrap of the band
