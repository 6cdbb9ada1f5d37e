"""params/local.yaml, typed: how local mode scales a cluster recipe down to this machine.

Every field is required but the think-time cap; a missing, unknown or mistyped field is one error naming
params/local.yaml, the field and the fix (infersweep.params_files.load_model_file), before anything starts.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import PositiveInt

from infersweep.params_files import Strict, load_model_file
from infersweep.paths import params_dir


class LocalProfile(Strict):
    max_workers_per_component: PositiveInt  # mocker workers per DGD component (replicas x nodes, capped)
    max_concurrency: PositiveInt  # the sweep's highest concurrency here (a rate sweep's in-flight cap)
    max_points: PositiveInt  # the sweep's lowest levels, at most this many
    requests_per_concurrency: PositiveInt  # requests per point: this many per concurrency level ...
    min_requests: PositiveInt  # ... and at least this many
    max_warmup: int  # warm-up requests per point, at least warmup_rounds x the point's concurrency (round_warmup)
    warmup_rounds: PositiveInt  # rounds of warm-up at least (the recipe's warmup_rounds: aiperf/point.py WARMUP_ROUNDS)
    max_isl: PositiveInt  # prompt length cap (the ISL:OSL ratio is kept: infersweep.local.scale.scaled_lengths)
    max_osl: PositiveInt  # output length cap
    max_turn_delay_ms: int | None = None  # multi-turn think time cap (None: the recipe's own)


def load_local_profile(path: Path | None = None) -> LocalProfile:
    """params/local.yaml (or `path`) as a LocalProfile."""
    return load_model_file(path or params_dir() / "local.yaml", LocalProfile)
