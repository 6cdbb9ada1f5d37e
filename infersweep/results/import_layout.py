"""Which folders under an import root are AIPerf *runs*, and how they group into points and repetitions.

A run is a folder holding AIPerf's summary (`profile_export_aiperf.json`) or, for a run that failed before
writing one, its per-request records (`profile_export.jsonl`) or its `phase_manifest.json` (0.13). Two kinds of folder hold those files too and
are never runs:

- `<run>/phases/<phase>/`: AIPerf 0.13 writes each phase's own summary below its run (warm-up and profiling
  phases of one run: aiperf 0.13.0 aiperf/exporters/exporter_manager.py:309 `artifacts.dir / "phases" /
  phase_name`, listed in the run's `phase_manifest.json`, :236-260). The run's own summary is the profiling
  phase's measurement; the warm-up is never a measurement.
- infersweep's own point folders' `attempts/` (earlier tries of a point, kept by steps/aiperf_point.py).

How AIPerf 0.13 lays out a multi-run or sweep artifact dir (aiperf 0.13.0
aiperf/orchestrator/orchestrator.py:35-100 `_resolve_artifact_dir`):

    | sweep | trials | order       | layout                                          |
    | no    | 1      | -           | <base>/                                         |
    | no    | >1     | -           | <base>/profile_runs/run_NNNN/                   |
    | yes   | 1      | -           | <base>/<dir_name>/                              |
    | yes   | >1     | REPEATED    | <base>/profile_runs/trial_NNNN/<dir_name>/      |
    | yes   | >1     | INDEPENDENT | <base>/<dir_name>/profile_runs/trial_NNNN/      |
    | adaptive | any | -           | <base>/search_iter_NNNN/profile_runs/run_NNNN/  |

and its per-variation confidence aggregate `profile_export_aiperf_aggregate.json` in `<base>/aggregate/`
(one configuration; aiperf/orchestrator/strategies.py:268-287 `get_aggregate_path`) or
`<base>/aggregate/<dir_name>/` (a sweep), beside a cross-variation `<base>/sweep_aggregate/`.

So: the trials of one variation (`trial_NNNN`, `run_NNNN`) are repetitions of one point; the variations of a
sweep (`concurrency_2`, `concurrency_4`, ...) are points; any other folder holding a run (AIPerf 0.10-0.12
artifact dirs kept one per concurrency, as teams keep them) is a point, and two at one load are
repetitions of that load in the order they ran.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from infersweep.aiperf import RECORDS_FILE, SUMMARY_FILE
from infersweep.errors import UserError

# phase_manifest.json marks a 0.13 run folder too (aiperf/exporters/exporter_manager.py:236-260 writes it beside
# the run's phases/): a folder holding only it and its phases is a run that wrote no summary (read as failed),
# and its warm-up is still never a point of its own.
PHASE_MANIFEST = "phase_manifest.json"
RUN_MARKERS = (SUMMARY_FILE, RECORDS_FILE, PHASE_MANIFEST)
AGGREGATE_FILE = "profile_export_aiperf_aggregate.json"  # aiperf/orchestrator/strategies.py:276-278
PHASES_DIR = "phases"  # a 0.13 run's per-phase summaries
NOT_RUNS = ("attempts", "aggregate", "sweep_aggregate")  # folders whose contents are never a run of their own
PROFILE_RUNS = "profile_runs"
TRIAL = re.compile(r"^(?:trial|run)_(\d+)$")  # trial_NNNN / run_NNNN, 1-based (orchestrator.py:86-100)


class LayoutError(UserError, ValueError):
    """Nothing importable under the folder: the message names the folder and what was looked for."""


@dataclass(frozen=True)
class FoundRun:
    """One AIPerf run: its folder, the variation it measured (repetitions share one) and its trial."""

    folder: Path
    variation: str  # folder path (relative to the root) naming what this run varied; "" for the root itself
    trial: int | None  # AIPerf's 1-based trial of a multi-run tree; None outside one
    kind: str  # "multi-run" (a trial of --num-profile-runs) or "folder" (a run folder of its own)


@dataclass
class Layout:
    root: Path
    runs: list[FoundRun]
    aggregates: dict[str, Path] = field(default_factory=dict)  # variation -> its AIPerf aggregate JSON
    sweep_aggregate: Path | None = None
    phases_skipped: int = 0  # per-phase summaries under a run (0.13), not runs

    def describe(self, points: list[tuple[int, int]]) -> str:
        """The one line `import` prints: what was found and how it was grouped. `points`: (concurrency,
        repetition) of each point made."""
        trials = [r for r in self.runs if r.kind == "multi-run"]
        variations = sorted({r.variation for r in trials})
        parts = [f"found {len(self.runs)} AIPerf run(s) under {self.root}"]
        if trials:
            per = sorted({sum(1 for r in trials if r.variation == v) for v in variations})
            parts.append(
                f"{len(variations)} multi-run variation(s) ({', '.join(_short(v) for v in variations)}) "
                f"x {'/'.join(map(str, per))} trial(s), each trial a repetition"
            )
        folders = len(self.runs) - len(trials)
        if folders:
            parts.append(f"{folders} run folder(s), one point each")
        if self.phases_skipped:
            parts.append(f"{self.phases_skipped} per-phase summaries under phases/ read as part of their run")
        if self.aggregates:
            parts.append(f"AIPerf aggregate(s) for {len(self.aggregates)} variation(s)")
        reps: dict[int, int] = {}
        for conc, _ in points:
            reps[conc] = reps.get(conc, 0) + 1
        grouped = ", ".join(f"c{c} x{n}" if n > 1 else f"c{c}" for c, n in sorted(reps.items()))
        return "; ".join(parts) + f" -> {len(reps)} concurrency(ies), {len(points)} point(s): {grouped}"


def _short(variation: str) -> str:
    return variation.rsplit("/", 1)[-1] if variation else "(root)"


def _is_run(folder: Path) -> bool:
    return any((folder / m).is_file() for m in RUN_MARKERS)


def _under_phases_of_a_run(rel: tuple[str, ...], root: Path) -> bool:
    """rel (parts below root) passes through `<run>/phases/`: a phase summary of that run, not a run."""
    for i, part in enumerate(rel):
        if part == PHASES_DIR and _is_run(root.joinpath(*rel[:i])):
            return True
    return False


def _place(rel: tuple[str, ...]) -> tuple[str, int | None]:
    """(variation, trial) of a run folder from its path below the root (orchestrator.py:35-100)."""
    for i in range(len(rel) - 1):
        trial_dir = TRIAL.match(rel[i + 1])
        if rel[i] != PROFILE_RUNS or not trial_dir:
            continue
        trial = int(trial_dir.group(1))
        tail = rel[i + 2 :]
        if tail:  # REPEATED: <base>/profile_runs/trial_NNNN/<dir_name>/
            return "/".join(rel[:i] + tail), trial
        return "/".join(rel[:i]), trial  # <base>/[<dir_name>/]profile_runs/(trial|run)_NNNN/
    return "/".join(rel), None


def _aggregate_of(root: Path, variation: str, multi: bool) -> Path | None:
    """AIPerf's confidence aggregate of one variation, where 0.13 writes it (strategies.py:268-287)."""
    base, _, name = variation.rpartition("/")
    candidates = [
        root / variation / "aggregate" / AGGREGATE_FILE,  # one configuration / INDEPENDENT sweep cell
        root / base / "aggregate" / name / AGGREGATE_FILE if name else None,  # REPEATED sweep
    ]
    for c in candidates:
        if multi and c is not None and c.is_file():
            return c
    return None


def find_runs(root: Path) -> Layout:
    """Every AIPerf run under root (root included), placed as a variation and trial."""
    root = Path(root)
    if not root.is_dir():
        raise LayoutError(f"{root}: not a folder")
    runs, skipped, seen = [], 0, set()
    for marker in sorted(p for m in RUN_MARKERS for p in root.rglob(m)):
        folder = marker.parent
        rel = folder.relative_to(root).parts
        if folder in seen or any(p in NOT_RUNS for p in rel):
            continue
        seen.add(folder)
        if _under_phases_of_a_run(rel, root):
            skipped += 1
            continue
        variation, trial = _place(rel)
        runs.append(FoundRun(folder, variation, trial, "multi-run" if trial is not None else "folder"))
    if not runs:
        raise LayoutError(
            f"{root}: no AIPerf run under it (no folder holds {SUMMARY_FILE}, {RECORDS_FILE} or {PHASE_MANIFEST}); "
            "give the folder AIPerf's --artifact-dir wrote into"
        )
    layout = Layout(root, runs, phases_skipped=skipped)
    for v in sorted({r.variation for r in runs if r.kind == "multi-run"}):
        agg = _aggregate_of(root, v, multi=True)
        if agg is not None:
            layout.aggregates[v] = agg
    sweep = sorted(root.rglob("sweep_aggregate"))
    layout.sweep_aggregate = sweep[0] if sweep else None
    return layout
