"""The runs of a store as `infersweep runs` lists them: complete ones from the index (one LIST), and with
`incomplete=True` also the run folders that have no manifest (a publish cut short, a run still going)."""

from __future__ import annotations

import pandas as pd

from infersweep.results.store import RunStore

STATUSES = ("complete", "partial", "incomplete")


def run_status(measured, points) -> str:
    """complete: every point measured; partial: some were not (failed or cut); the index has only runs with a
    manifest, so neither is incomplete."""
    try:
        return "complete" if int(measured) >= int(points) else "partial"
    except (TypeError, ValueError):
        return "complete"


def list_runs(store: RunStore, *, recipe: str | None = None, incomplete: bool = False) -> pd.DataFrame:
    df = store.runs(recipe=recipe).copy()
    df["status"] = [run_status(m, p) for m, p in zip(df["measured_points"], df["points"], strict=True)]
    df["date"] = df["manifest_created_at"]
    if incomplete:
        listed = set(zip(df["recipe"], df["run_id"], strict=True))
        rows = []
        # experiments/ is no recipe: its treatments are listed as runs of their recipes, through pointers
        for rec in [recipe] if recipe else store.recipes():
            for run_id in store.backend.children(store._prefix(rec)):
                if (rec, run_id) in listed:
                    continue
                if not store.has_manifest(rec, run_id):
                    rows.append({"run_id": run_id, "recipe": rec, "status": "incomplete", "date": None})
        if rows:
            df = pd.concat([df, pd.DataFrame(rows)], ignore_index=True)
    return df
