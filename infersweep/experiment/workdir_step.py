"""Small steps of the experiment workflow that only touch its workdir (the step templates in steps/ write
one run to the fixed /work/run, so an experiment keeps each treatment's run by moving it aside).

    python -m infersweep.experiment.workdir_step mark-start --out /work/run
    python -m infersweep.experiment.workdir_step record-ready --out /work/run
    python -m infersweep.experiment.workdir_step archive --run-dir /work/run --to /work/treatments/NAME
    python -m infersweep.experiment.workdir_step verdict --treatments-dir /work/treatments --points '{"NAME": [...]}'

`mark-start` runs just before the deploy (or reconfigure) step and `record-ready` just after wait-ready:
time-to-ready.json holds the seconds between them (each includes one pod start, a few seconds in a
cluster; timestamps in files rather than Argo's `tasks.X.startedAt` so local mode measures the same way).
`archive` moves the run folder, keeping an earlier archive of the same treatment (a retried or resumed
workflow) under <name>.attempts/N, so nothing measured is overwritten.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="action", required=True)
    sub.add_parser("mark-start").add_argument("--out", type=Path, required=True)
    sub.add_parser("record-ready").add_argument("--out", type=Path, required=True)
    m = sub.add_parser("archive")
    m.add_argument("--run-dir", type=Path, required=True)
    m.add_argument("--to", type=Path, required=True)
    v = sub.add_parser("verdict")
    v.add_argument("--treatments-dir", type=Path, required=True)
    v.add_argument("--points", required=True, help="JSON: treatment name -> its points")
    a = ap.parse_args(argv)
    if a.action == "verdict":
        ok, lines = experiment_verdict(a.treatments_dir, json.loads(a.points))
        print("verdict: " + "; ".join(lines), file=None if ok else sys.stderr)
        return 0 if ok else 1
    if a.action == "mark-start":
        mark_start(a.out)
    elif a.action == "record-ready":
        print(f"time to ready: {record_ready(a.out):.1f} s")
    else:
        print(f"run kept at {archive(a.run_dir, a.to)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
