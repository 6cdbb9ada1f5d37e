"""params/validity.yaml read, with the overrides of a validity profile merged in: the thresholds every validity
check judges by (infersweep.results.validity) and the steadiness thresholds a point step is given in its
workload (workflows/pipeline.py, local mode; infersweep.aiperf.steadiness). Below both results/ and rendering,
which may not import results/ (pyproject.toml's layer contracts).
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Mapping

from infersweep.aiperf.steadiness import thresholds_as_workload
from infersweep.platform.select import LOCAL_WORKERS_ENV, PLATFORM_ENV

# Set by local mode for its steps (infersweep/local/gpu/fake_gpu.py FAKE_GPU_ENV); named here because results/
# imports no local mode (pyproject.toml's layer contracts).
FAKE_GPU_ENV = "INFERSWEEP_FAKE_GPU"

THRESHOLDS_FILE = "validity.yaml"


def load_thresholds(
    profile: str | None = None, path: Path | None = None, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """params/validity.yaml, with the overrides of `profile` merged in (default: the profile named like the
    platform the steps run on, when there is one: 'local' in local mode; else none; read from `env`, the
    process's environment unless given). The result says which profile it is."""
    from infersweep.params_files import read_yaml_mapping
    from infersweep.paths import params_dir

    env = os.environ if env is None else env
    path = path or params_dir() / THRESHOLDS_FILE
    data = read_yaml_mapping(Path(path))
    profiles = data.pop("profiles", {}) or {}
    if profile is None and env.get(PLATFORM_ENV) in profiles:
        profile = env[PLATFORM_ENV]
        # Local mode with real engine workers measures a real server: the mocker's allowances (second-long
        # points, the toy tokenizer's identical prompts) do not apply (local/adapter.py step_env sets the
        # workers kind; local/fake_gpu.py the fake GPU count, whose engines are the mocker again).
        if (
            profile == "local"
            and env.get(LOCAL_WORKERS_ENV) == "gpu"
            and not env.get(FAKE_GPU_ENV)
            and "local-gpu" in profiles
        ):
            profile = "local-gpu"
    if profile:
        if profile not in profiles:
            raise ValueError(f"{path}: no validity profile {profile!r}; profiles: {sorted(profiles)}")
        data = _merge(data, profiles[profile])
    data["profile"] = profile or "default"
    return data


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def step_steadiness(length: Mapping[str, Any], env: Mapping[str, str]) -> dict[str, float]:
    """The steadiness thresholds a point step is given in its workload (infersweep.aiperf.steadiness STEADY_KEYS),
    of the profile the steps' environment `env` selects, as summarize will (load_thresholds): only for a point
    that may be extended (`length`: the workload's length keys, Workload.length()), so a point without a budget
    renders as before."""
    return thresholds_as_workload(load_thresholds(env=env)) if length else {}
