"""Where a result's numbers come from: the `source` of every results row (and of run.json).

- `measured`: a real deployment on GPUs (any platform but local);
- `simulated (built-in timing)`: local mode's mocker with its own timing model: shapes and direction,
  not this GPU's numbers;
- `simulated (calibrated: AIConfigurator 0.12.0 h100_sxm vllm 0.24.0)`: local mode's mocker on a timing
  table from that database (infersweep.predict.local_timing), per worker role.

Local mode runs every step with INFERSWEEP_PLATFORM=local and INFERSWEEP_LOCAL_STATE (local/run.py); the
local platform keeps each deployment under <state>/dgd/<name>/ (steps/platform.py LocalPlatform), where
local_timing records the timing each worker role ran with (timing.json).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping

from infersweep.predict.local_timing import TIMING_FILE

MEASURED = "measured"
BUILTIN = "simulated (built-in timing)"
CALIBRATED_PREFIX = "simulated (calibrated"


def calibrated(database: str) -> str:
    return f"{CALIBRATED_PREFIX}: {database})"


def is_simulated(source: str | None) -> bool:
    return bool(source) and str(source).startswith("simulated")


def timing_entries(state_dir: Path) -> list[dict]:
    """Every role's timing record of every local deployment under a local run's state dir."""
    out = []
    for f in sorted(Path(state_dir).glob(f"dgd/*/{TIMING_FILE}")):
        try:
            out += list(json.loads(f.read_text()).values())
        except (OSError, ValueError):
            continue
    return out


def result_source(env: Mapping[str, str] | None = None) -> str:
    """The source of the results this process summarizes (see the module docstring)."""
    env = os.environ if env is None else env
    if env.get("INFERSWEEP_PLATFORM") != "local":
        return MEASURED
    state = env.get("INFERSWEEP_LOCAL_STATE")
    entries = timing_entries(Path(state)) if state else []
    if entries and all(e.get("timing") == "calibrated" for e in entries):
        return calibrated("; ".join(sorted({e["database"] for e in entries})))
    return BUILTIN


def banner(source: str | None) -> str | None:
    """One line a report shows above a simulated run's numbers; None for measured ones."""
    if not is_simulated(source):
        return None
    if str(source).startswith(CALIBRATED_PREFIX):
        return (f"Simulated run: {source}. Numbers are the mocker's, timed by that database for the recipe's GPU, "
                "engine and parallelism, on local mode's scaled-down workload and worker count.")
    return (f"Simulated run: {source}. The mocker's own timing model: shapes and direction only, not this GPU's "
            "numbers; GPU counts are local mode's.")
