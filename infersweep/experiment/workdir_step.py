"""Small steps of the experiment workflow that only touch its workdir (the step templates in steps/ write
one run to the fixed /work/run, so an experiment keeps each treatment's run by moving it aside).

    python -m infersweep.experiment.workdir_step record-ready --started T0 --finished T1 --out /work/run
    python -m infersweep.experiment.workdir_step archive --run-dir /work/run --to /work/treatments/NAME

`record-ready` writes time-to-ready.json (Argo's RFC 3339 `startedAt` of the reconfigure task and
`finishedAt` of wait-ready); `archive` moves the run folder, keeping an earlier archive of the same
treatment (a retried or resumed workflow) under attempts/N, so nothing measured is overwritten.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from datetime import datetime
from pathlib import Path


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def record_ready(started: str, finished: str, out: Path) -> float:
    seconds = (_time(finished) - _time(started)).total_seconds()
    out.mkdir(parents=True, exist_ok=True)
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="action", required=True)
    r = sub.add_parser("record-ready")
    r.add_argument("--started", required=True)
    r.add_argument("--finished", required=True)
    r.add_argument("--out", type=Path, required=True)
    m = sub.add_parser("archive")
    m.add_argument("--run-dir", type=Path, required=True)
    m.add_argument("--to", type=Path, required=True)
    a = ap.parse_args(argv)
    if a.action == "record-ready":
        print(f"time to ready: {record_ready(a.started, a.finished, a.out):.1f} s")
    else:
        print(f"run kept at {archive(a.run_dir, a.to)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
