"""A failed sweep ends Failed, after what was measured is summarised and published.

Argo judges a DAG by its leaf tasks (argo-workflows v4.1.2 workflow/controller/dag.go assessDAGPhase) and
a failed exit handler turns a Succeeded workflow Failed (operator.go operate()). The points are the leaves
of the GPU span, and steps/verdict.py is the exit handler's last step, after publish: the run fails when
any point failed or nothing was measured, with a message naming the points. The workflow-level verdict
for the rendered pipeline is checked with the encoded rules in tests/workflows/test_ui_retry.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

POINTS = [{"concurrency": c} for c in (1, 4, 16)]


def _point(run: Path, c: int, status: str, reason: str = "") -> None:
    d = run / "points" / f"c{c}"
    d.mkdir(parents=True)
    (d / "result.json").write_text(json.dumps({"status": status, "reason": reason, "concurrency": c}))


def _verdict(run: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "steps.verdict", "--run-dir", str(run), "--points", json.dumps(POINTS)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_all_measured_passes(tmp_path):
    for c in (1, 4, 16):
        _point(tmp_path, c, "ok")
    p = _verdict(tmp_path)
    assert p.returncode == 0 and "all 3 points measured" in p.stdout


def test_one_failed_point_fails_the_run_naming_it(tmp_path):
    _point(tmp_path, 1, "ok")
    _point(tmp_path, 4, "partial")
    _point(tmp_path, 16, "failed", "error rate 0.4 > 0.0")
    p = _verdict(tmp_path)
    assert p.returncode == 1
    assert "1 of 3 points failed (c16: failed: error rate 0.4 > 0.0); 2 measured" in p.stderr


def test_nothing_measured_fails_and_says_why(tmp_path):
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "not-serving.txt").write_text("bench/x is not serving: pod x-0 is unschedulable\n")
    p = _verdict(tmp_path)
    assert p.returncode == 1 and "nothing measured: 0 of 3 points" in p.stderr and "c1: not run" in p.stderr
    assert "unschedulable" in p.stderr
