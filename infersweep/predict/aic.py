"""Calls AIConfigurator in its own environment (.venv-aic) and caches every estimate on disk.

AIConfigurator pins its own numpy/pandas/pydantic, so it lives in `.venv-aic` (built by scripts/setup.sh
from images/aic.requirements.txt) and is reached through `aic_worker.py` as a subprocess, JSON in and out.
Importing it costs ~6 s and each estimate ~3 s on this machine, so one subprocess answers a whole batch,
and every answer is kept under the cache directory keyed by everything that decides it: AIConfigurator's
version, model, system, backend + version, parallelism, precision (the checkpoint named by the model
path), mode, isl, osl and batch size. A cached answer is never recomputed.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

from infersweep.errors import UserError
from infersweep.paths import venv_python

WORKER = Path(__file__).with_name("aic_worker.py")


class AicError(UserError, RuntimeError):
    """AIConfigurator could not be reached or did not answer (its side environment: scripts/setup.sh builds
    it): exit 1, the command could not give an answer."""

    exit_code = 1


class NotCached(AicError):
    """A cache-only lookup found no stored answer (`infersweep predict RECIPE` computes and stores them)."""


AIC_VERSION = "0.12.0"  # = the pin in images/aic.requirements.txt (tests/predict/test_predict.py keeps them equal)


def aic_version() -> str:
    """The AIConfigurator version estimates come from: part of every cache key and every source label."""
    return AIC_VERSION


def aic_python() -> str:
    """$INFERSWEEP_AIC_PYTHON, else <repo>/.venv-aic/bin/python."""
    return venv_python("aic")


def cache_dir() -> Path:
    return Path(os.environ.get("INFERSWEEP_PREDICT_CACHE", Path.home() / ".cache" / "infersweep" / "aic"))


def run_worker(request: dict, timeout_s: float = 1800) -> dict:
    python = aic_python()
    if not Path(python).exists():
        raise AicError(
            f"no AIConfigurator environment at {python}: run scripts/setup.sh "
            "(builds .venv-aic) or set INFERSWEEP_AIC_PYTHON"
        )
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    try:
        proc = subprocess.run(
            [python, str(WORKER)], input=json.dumps(request), capture_output=True, text=True, timeout=timeout_s, env=env
        )
    except subprocess.TimeoutExpired:
        raise AicError(f"AIConfigurator did not answer within {timeout_s:.0f} s") from None
    if proc.returncode != 0:
        tail = " ".join(proc.stderr.strip().splitlines()[-3:])[:600]
        raise AicError(f"AIConfigurator worker failed (exit {proc.returncode}): {tail}")
    try:
        out = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AicError(f"AIConfigurator worker printed no JSON: {proc.stdout[-300:]!r}") from None
    if out.get("aic_version") != AIC_VERSION:  # a stale env would file its answers under the wrong version
        raise AicError(
            f"{python} has aiconfigurator {out.get('aic_version')}, infersweep expects {AIC_VERSION}: "
            "run scripts/setup.sh"
        )
    return out


def point_key(point: dict[str, Any]) -> str:
    blob = json.dumps({"aiconfigurator": aic_version(), **point}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _cache_file(key: str) -> Path:
    return cache_dir() / key[:2] / f"{key}.json"


def estimate_points(points: list[dict[str, Any]], *, cache_only: bool = False) -> tuple[list[dict], dict]:
    """Estimates for `points` (cli_estimate keyword dicts + model_path, system_name), cached.

    Returns (answers in the order asked, stats {"cached": n, "computed": n}). A point AIConfigurator
    refuses comes back as {"ok": False, "error": ...} and is cached too (the refusal is deterministic).
    """
    answers: list[dict | None] = []
    missing: list[int] = []
    for i, p in enumerate(points):
        f = _cache_file(point_key(p))
        if f.is_file():
            answers.append(json.loads(f.read_text()))
        else:
            answers.append(None)
            missing.append(i)
    if missing and cache_only:
        raise NotCached(f"{len(missing)} of {len(points)} estimates are not in the cache {cache_dir()}")
    if missing:
        out = run_worker({"points": [points[i] for i in missing]})
        for i, ans in zip(missing, out["points"], strict=True):
            answers[i] = ans
            f = _cache_file(point_key(points[i]))
            f.parent.mkdir(parents=True, exist_ok=True)
            tmp = f.with_suffix(".tmp")
            tmp.write_text(json.dumps(ans))
            tmp.replace(f)  # atomic: a reader never sees half an answer
    return [a for a in answers if a is not None], {"cached": len(points) - len(missing), "computed": len(missing)}


def support_rows(queries: list[dict[str, str]], *, cache_only: bool = False) -> list[dict]:
    """AIConfigurator's support-matrix rows for each {"model", "system", "backend"}: {"rows", "similar"}
    (aic_worker.support_rows), cached per query."""
    answers: list[dict | None] = []
    missing = []
    for i, q in enumerate(queries):
        f = _cache_file(point_key({"support": q}))
        answers.append(json.loads(f.read_text()) if f.is_file() else None)
        if answers[-1] is None:
            missing.append(i)
    if missing and cache_only:
        raise NotCached(f"the support-matrix rows of {queries[missing[0]]} are not in the cache {cache_dir()}")
    if missing:
        out = run_worker({"support": [queries[i] for i in missing]}, timeout_s=120)
        for i, rows in zip(missing, out["support"], strict=True):
            answers[i] = rows
            f = _cache_file(point_key({"support": queries[i]}))
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(json.dumps(rows))
    return [a or {"rows": [], "similar": []} for a in answers]
