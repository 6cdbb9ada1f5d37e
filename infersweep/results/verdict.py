"""A run's verdict from its points: failed when any point failed or nothing was measured (the last task of a
recipe's pipeline, steps/verdict.py, and of an experiment, steps/experiment_verdict.py).

Why a step at all: Argo judges a DAG by its leaf tasks (argo-workflows v4.1.2 workflow/controller/dag.go
assessDAGPhase), and the tasks after the points (summarize, publish, compare) run whatever happened and
succeed, so without a failing leaf a sweep where every point failed ends Succeeded.
"""

from __future__ import annotations

from pathlib import Path

from infersweep.aiperf import point_folder
from infersweep.results.table import OK_STATUSES, read_result


def verdict(run_dir: Path, points: list[dict]) -> tuple[bool, str]:
    failed, measured = [], 0
    for p in points:
        c = p["concurrency"]
        rep = int(p.get("repetition") or 0)
        label = f"c{c}" + (f" r{rep}" if rep else "")
        # where aiperf-point put it: c<N>, c<N>-rate<R>, c<N>[...]-r<K> (infersweep.aiperf.point_folder)
        d = point_folder(str(run_dir / "points" / f"c{c}"), float(p.get("request_rate") or 0), rep)
        if not (d / "result.json").exists():
            failed.append(f"{label}: not run")
            continue
        r = read_result(d)
        if r.get("status") in OK_STATUSES:
            measured += 1
        else:
            failed.append(f"{label}: {r.get('status', 'failed')}: {str(r.get('reason') or '')[:160]}")
    if not measured:
        # A deployment that never served is the usual cause: wait-ready wrote why (steps/wait_ready.py --failure).
        not_serving = run_dir / "deploy" / "not-serving.txt"
        why = f"; {not_serving.read_text().strip()}" if not_serving.exists() else ""
        return False, f"nothing measured: 0 of {len(points)} points ({'; '.join(failed) or 'no points'}){why}"
    if failed:
        return (
            False,
            f"{len(failed)} of {len(points)} points failed ({'; '.join(failed)}); {measured} measured and published",
        )
    return True, f"all {measured} points measured"


def exit_step_failures(phases: dict[str, str]) -> list[str]:
    """`task: phase` for each earlier exit-handler step that did not succeed (steps/verdict.py --exit-steps).

    Why: Argo judges the exit handler's DAG by its leaves (dag.go assessDAGPhase: a failed task whose
    dependent ran, through `depends: "X.Succeeded || X.Failed"`, hands its branch the dependent's phase), so
    a failed scrape or regression-check before this step would otherwise leave the run Succeeded."""
    return [f"{task}: {phase}" for task, phase in sorted(phases.items()) if phase != "Succeeded"]
