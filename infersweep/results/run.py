"""One run's results in memory (`Run`), and reading them from a local run folder.

A run folder is what the pipeline's workdir holds (`points/`, `metrics/`, `summary/`), e.g.
`runs/<run-id>/results` after `infersweep run --local`. Such a folder is the run's own working copy, not
a published run: `source` says so, and RunStore (store.py) is what decides "complete".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.errors import UserError
from infersweep.results.context import RUN_FILE
from infersweep.results.files import METRICS_SKIPPED_FILE, RAW_FILE, RESULTS_FILE, SERVER_METRICS_FILE
from infersweep.results.legacy import upgrade_table

__all__ = ["METRICS_SKIPPED_FILE", "RAW_FILE", "RESULTS_FILE", "SERVER_METRICS_FILE", "Run"]


@dataclass
class Run:
    run_id: str
    table: pd.DataFrame
    context: dict[str, Any]
    source: str  # where it was read from, for the report header
    server_metrics: pd.DataFrame | None = None
    metrics_note: str = ""  # why there are no server metrics, when there are none
    manifest: dict[str, Any] = field(default_factory=dict)
    raw: pd.DataFrame | None = None  # every AIPerf statistic, long format (None: the run has none)

    def __post_init__(self) -> None:
        # Tables written before the evidence rule may say slo_pass True on invalid rows: never read so.
        from infersweep.results.evidence import enforce

        self.table = enforce(self.table)
        # a run summarized before schema v3 states its SLO under the old keys (tok_s_user_min)
        if isinstance(self.context.get("slo"), dict):
            from infersweep.metrics import normalize_slo

            try:
                self.context["slo"] = normalize_slo(self.context["slo"])
            except ValueError:
                pass  # a key this code does not know: kept as written, the report shows it

    @property
    def recipe(self) -> str:
        return self.context.get("recipe") or (self.table["recipe"].iloc[0] if len(self.table) else "")

    @property
    def label(self) -> str:
        return self.recipe or self.run_id


class RunFolderError(UserError, FileNotFoundError):
    """A folder given as a run that holds none, or one never summarized; the message says how to make it one."""


def resolve_run_folder(path: Path) -> Path:
    """Accept `runs/<id>` (a local run) or the results folder itself."""
    path = Path(path)
    for candidate in (path, path / "results"):
        if (candidate / "points").is_dir() or (candidate / "summary").is_dir():
            return candidate
    raise RunFolderError(f"{path}: not a run folder (no points/ or summary/ inside, nor in {path}/results)")


def load_run_folder(path: Path) -> Run:
    """A run from its local folder. Refuses a folder the summarize step never finished."""
    folder = resolve_run_folder(path)
    table_path = folder / RESULTS_FILE
    if not table_path.exists():
        raise RunFolderError(
            f"{folder}: no {RESULTS_FILE}: the run was never summarized (interrupted before "
            f"its summarize step?); `python -m steps.summarize --run-dir {folder} ...` builds it"
        )
    wide = pd.read_parquet(table_path)
    table = upgrade_table(wide, str(table_path))  # a v1/v2 table reads under v3 names
    raw = read_raw(folder / RAW_FILE if (folder / RAW_FILE).exists() else None, wide)
    context = {}
    if (folder / "summary" / RUN_FILE).exists():
        context = json.loads((folder / "summary" / RUN_FILE).read_text()).get("context", {})
    metrics, note = None, ""
    if (folder / SERVER_METRICS_FILE).exists():
        metrics = pd.read_parquet(folder / SERVER_METRICS_FILE)
    elif (folder / METRICS_SKIPPED_FILE).exists():
        note = (folder / METRICS_SKIPPED_FILE).read_text().strip()
    run_id = context.get("run_id") or (table["run_id"].iloc[0] if len(table) and table["run_id"].iloc[0] else "")
    run_id = run_id or (folder.parent.name if folder.name == "results" else folder.name)
    return Run(
        run_id=run_id,
        table=table,
        context=context,
        source=f"local folder {folder} (not published)",
        server_metrics=metrics,
        metrics_note=note,
        raw=raw,
    )


def read_raw(source, wide: pd.DataFrame) -> pd.DataFrame | None:
    """The run's raw table: results_raw.parquet (a path or bytes), else the `<metric>__<stat>` columns of a
    v1/v2 table; None when there is neither."""
    import io

    from infersweep.results.legacy import raw_from_wide

    if source is not None:
        return pd.read_parquet(io.BytesIO(source) if isinstance(source, bytes) else source)
    if any("__" in c for c in wide.columns):
        return raw_from_wide(wide)
    return None
