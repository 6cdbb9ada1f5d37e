"""Calibrated local mode: the mocker workers of a local deployment get a timing table built from
AIConfigurator for the recipe's own GPU, engine and parallelism (`--planner-profile-data TABLE.npz`),
and the deployment records which timing it ran with (`timing.json` beside deployment.json), which
infersweep.predict.source turns into the `source` of every result row.

The table covers what local mode sends (params/local.yaml: prompts up to max_isl, outputs up to
max_osl, concurrency up to max_concurrency), so it is small (~11 estimates, ~40 s once, then cached).
INFERSWEEP_CALIBRATED=0 keeps the mocker's built-in timing.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from infersweep.params_files import read_yaml_mapping
from infersweep.paths import params_dir

TIMING_FILE = "timing.json"
RECIPE_LABEL = "infersweep.io/recipe"  # infersweep/dgd/render.py labels()


def local_grid(role_replicas: int):
    """The (isl, batch, context) design local mode's requests fall in (params/local.yaml)."""
    from infersweep.predict.mocker_table import Grid

    prof = read_yaml_mapping(params_dir() / "local.yaml")
    reach = int(prof["max_isl"]) + int(prof["max_osl"])
    isl = [64]
    while isl[-1] < reach:  # 64, 256, 1024 ... up to the first length past the longest local request
        isl.append(isl[-1] * 4)
    # Requests per mocker engine: local concurrency spread over the local workers of the role (at least 1).
    workers = max(1, min(role_replicas, int(prof["max_workers_per_component"])))
    top = max(1, -(-int(prof["max_concurrency"]) // workers))
    batch = tuple(b for b in (1, 2, 4, 8, 16, 32) if b < top * 2)
    context = (max(64, reach // 4), reach)
    return Grid(tuple(isl), batch, context)


def _record(state_dir: Path, role: str, entry: dict) -> None:
    f = Path(state_dir) / TIMING_FILE
    data = json.loads(f.read_text()) if f.is_file() else {}
    data[role] = entry
    f.parent.mkdir(parents=True, exist_ok=True)
    f.write_text(json.dumps(data, indent=1))


def timing_table_args(dgd: dict, role: str, state_dir: Path) -> list[str]:
    """`["--planner-profile-data", PATH]` for this worker role of a DGD rendered from a recipe that
    AIConfigurator models, else `[]` (built-in timing). Records the choice and its reason in
    <state_dir>/timing.json. Never raises: a deployment always starts, with or without a table."""
    role = "worker" if role not in ("prefill", "decode") else role
    if os.environ.get("INFERSWEEP_CALIBRATED", "1") == "0":
        _record(state_dir, role, {"timing": "built-in", "reason": "INFERSWEEP_CALIBRATED=0"})
        return []
    name = ((dgd.get("metadata") or {}).get("labels") or {}).get(RECIPE_LABEL)
    if not name:
        _record(state_dir, role, {"timing": "built-in", "reason": "the DGD names no infersweep recipe"})
        return []
    try:
        from infersweep.predict.mocker_table import build_table
        from infersweep.predict.target import Unsupported, map_recipe
        from infersweep.recipe import load_recipe

        t = map_recipe(load_recipe(name))
        if isinstance(t, Unsupported):
            _record(state_dir, role, {"timing": "built-in", "reason": t.reason})
            return []
        if role not in t.workers:
            _record(state_dir, role, {"timing": "built-in", "reason": f"recipe {name} has no {role} role"})
            return []
        print(f"calibrated timing: {name} {role} from {t.database} (cached after the first build)", file=sys.stderr)
        info = build_table(t, role, local_grid(t.workers[role].replicas))
    except Exception as e:  # no .venv-aic, AIConfigurator refused, recipe gone: built-in timing, said why
        _record(state_dir, role, {"timing": "built-in", "reason": f"{type(e).__name__}: {e}"[:500]})
        return []
    _record(
        state_dir,
        role,
        {"timing": "calibrated", "database": t.database, "table": info.path, "itl_ms_batch1": info.itl_ms_batch1},
    )
    return ["--planner-profile-data", info.path]
