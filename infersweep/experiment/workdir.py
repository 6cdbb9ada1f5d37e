"""What the experiment's small workdir steps do (the pipeline's steps write one run to the fixed /work/run,
so an experiment keeps each treatment's run by moving it aside). The steps themselves are declared in
infersweep/step_declarations.py and run as steps/mark_start.py, record_ready.py, archive.py and
experiment_verdict.py.

`mark-start` runs just before the deploy (or reconfigure) step and `record-ready` just after wait-ready:
time-to-ready.json holds the seconds between them (each includes one pod start, a few seconds in a
cluster; timestamps in files rather than Argo's `tasks.X.startedAt` so local mode measures the same way).
`archive` moves the run folder, keeping an earlier archive of the same treatment (a retried or resumed
workflow) under <name>.attempts/N, so nothing measured is overwritten.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


MARK = "reconfigure-started"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat()


def mark_start(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / MARK).write_text(_now())


def record_ready(out: Path, finished: str | None = None) -> float:
    started = (out / MARK).read_text().strip()
    finished = finished or _now()
    seconds = (_time(finished) - _time(started)).total_seconds()
    (out / "time-to-ready.json").write_text(json.dumps({"started": started, "finished": finished, "seconds": seconds}))
    return seconds


def archive(run_dir: Path, to: Path) -> Path:
    if not run_dir.exists():
        run_dir.mkdir(parents=True)  # a treatment that measured nothing still leaves a (empty) folder
    if to.exists():
        attempts = to.parent / f"{to.name}.attempts"
        attempts.mkdir(exist_ok=True)
        shutil.move(str(to), str(attempts / str(len(list(attempts.iterdir())) + 1)))
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(run_dir), str(to))
    return to


def experiment_verdict(treatments_dir: Path, points: dict[str, list[dict]]) -> tuple[bool, list[str]]:
    """Each treatment judged as a recipe run is (infersweep.results.verdict): the experiment fails when any
    treatment had a failed point or measured nothing, after its report was written and published."""
    from infersweep.results.verdict import verdict

    lines, ok_all = [], True
    for name, pts in points.items():
        ok, message = verdict(treatments_dir / name, pts)
        ok_all &= ok
        lines.append(f"{name}: {message}")
    return ok_all, lines
