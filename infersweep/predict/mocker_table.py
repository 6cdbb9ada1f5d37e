"""The Dynamo 1.6.1 mocker's timing table (`--planner-profile-data FILE.npz`) from AIConfigurator estimates.

The format is the mocker's own (dynamo/mocker/utils/planner_profiler_perf_data_converter.py in
.venv-dynamo, convert_profile_results_to_npz + is_mocker_format_npz; dynamo/mocker/args.py
resolve_planner_profile_data takes such a file as is):

- `prefill_isl` (1-D) and `prefill_ttft_ms` (1-D): a prefill of ISL tokens takes TTFT ms;
- `decode_active_kv_tokens` (1-D), `decode_context_length` (1-D) and `decode_itl[kv, ctx]` (2-D): one
  decode step with `kv` active KV tokens in the batch, at average context `ctx` (so batch = kv / ctx),
  takes ITL ms. The mocker looks both up by binary search (the converter's module docstring).

The converter fills the decode grid as `itl[i, j] = f(batch=max(1, kv_i / ctx_j), kv_i)` over
`kv = linspace(0, max_kv, R)`, `ctx = linspace(1, max_ctx, R)`; we build the same grid. Where the converter
evaluates a regression fitted to a profiler's measurements, we interpolate AIConfigurator's estimates
(prefill: mode static_ctx at batch 1; decode: mode static_gen, one step at batch b and context c) over
a small (batch, context) design, linearly in log2(batch) and in context, clamped at the design's edges.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from infersweep.errors import UserError
from infersweep.predict import aic
from infersweep.predict.target import Target

REQUIRED_KEYS = ("prefill_isl", "prefill_ttft_ms", "decode_active_kv_tokens", "decode_context_length", "decode_itl")
RESOLUTION = 100  # the converter's default grid resolution


class TableError(UserError, RuntimeError):
    """AIConfigurator could not give the estimates a table needs (a model or GPU its database lacks, a table
    file of another shape): exit 1."""

    exit_code = 1


@dataclass(frozen=True)
class Grid:
    """Where AIConfigurator is asked: prefill lengths, decode batch sizes and decode contexts."""

    isl: tuple[int, ...]
    batch: tuple[int, ...]
    context: tuple[int, ...]


def _base(t: Target, role: str) -> dict:
    return {
        "model_path": t.model_path,
        "system_name": t.system,
        "backend_name": t.backend,
        "backend_version": t.version,
        **t.quant,
        **t.workers[role].kwargs(),
    }


def design_points(t: Target, role: str, grid: Grid) -> tuple[list[dict], list[dict]]:
    """(prefill points per isl, decode points per (batch, context), batch-major)."""
    prefill = [{**_base(t, role), "mode": "static_ctx", "isl": n, "osl": 1, "batch_size": 1} for n in grid.isl]
    decode = [
        {**_base(t, role), "mode": "static_gen", "isl": c, "osl": 2, "batch_size": b}
        for b in grid.batch
        for c in grid.context
    ]
    return prefill, decode


def _interp_itl(itl: np.ndarray, batch: np.ndarray, context: np.ndarray, b: float, c: float) -> float:
    """Bilinear in (log2 batch, context), clamped to the design (np.interp clamps at the ends)."""
    lb = math.log2(min(max(b, batch[0]), batch[-1]))
    per_ctx = np.array([np.interp(lb, np.log2(batch), itl[:, j]) for j in range(len(context))])
    return float(np.interp(c, context, per_ctx))


def assemble(grid: Grid, prefill_ms: list[float], decode_ms: list[float], resolution: int = RESOLUTION) -> dict:
    """The mocker's five arrays from the design's answers (decode_ms batch-major, as design_points)."""
    itl = np.array(decode_ms, dtype=float).reshape(len(grid.batch), len(grid.context))
    batch, context = np.array(grid.batch, dtype=float), np.array(grid.context, dtype=float)
    max_ctx, max_kv = float(context[-1]), float(batch[-1] * context[-1])
    kv_axis = np.linspace(0, max_kv, resolution)
    ctx_axis = np.linspace(1, max_ctx, resolution)
    table = np.zeros((resolution, resolution))
    for i, kv in enumerate(kv_axis):
        for j, ctx in enumerate(ctx_axis):
            table[i, j] = _interp_itl(
                itl, batch, context, max(1.0, kv / ctx), ctx
            )  # as the converter: bs = max(1, kv/ctx)
    return {
        "prefill_isl": np.array(grid.isl, dtype=float),
        "prefill_ttft_ms": np.array(prefill_ms, dtype=float),
        "decode_active_kv_tokens": kv_axis,
        "decode_context_length": ctx_axis,
        "decode_itl": table,
    }


@dataclass
class TableInfo:
    path: str
    database: str
    role: str
    grid: dict
    estimates: int
    computed: int
    itl_ms_batch1: float  # the decode ITL at batch 1 and the smallest context: what a lone request sees

    def to_dict(self) -> dict:
        return asdict(self)


def table_key(t: Target, role: str, grid: Grid) -> str:
    return aic.point_key(
        {
            "mocker_table": 1,
            "model": t.model_path,
            "system": t.system,
            "backend": t.backend,
            "version": t.version,
            "precision": t.precision,
            **t.quant,
            **t.workers[role].kwargs(),
            "grid": asdict(grid),
        }
    )


def build_table(t: Target, role: str, grid: Grid, out: Path | None = None) -> TableInfo:
    """Write (or find in the cache) the timing table of one worker role; returns where and from what."""
    key = table_key(t, role, grid)
    out = Path(out) if out else aic.cache_dir() / "tables" / f"{key}.npz"
    meta_file = out.with_suffix(".json")
    if out.is_file() and meta_file.is_file():
        return TableInfo(**json.loads(meta_file.read_text()))
    prefill, decode = design_points(t, role, grid)
    answers, stats = aic.estimate_points(prefill + decode)
    bad = [(p, a) for p, a in zip(prefill + decode, answers, strict=True) if not a.get("ok")]
    if bad:
        p, a = bad[0]
        raise TableError(
            f"AIConfigurator refused {len(bad)} of {len(answers)} table points, e.g. {p['mode']} "
            f"batch {p['batch_size']} isl {p['isl']}: {a['error']}"
        )
    pre = [a["ttft_ms"] for a in answers[: len(prefill)]]
    dec = [a["itl_ms"] for a in answers[len(prefill) :]]
    arrays = assemble(grid, pre, dec)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.stem + ".tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(out)
    info = TableInfo(str(out), t.database, role, asdict(grid), len(answers), stats["computed"], round(dec[0], 3))
    meta_file.write_text(json.dumps(info.to_dict(), indent=1))
    return info


def check_table(path: Path) -> dict[str, tuple]:
    """The shapes the mocker needs (is_mocker_format_npz + the 2-D decode grid); raises on anything else."""
    with np.load(path) as data:
        missing = [k for k in REQUIRED_KEYS if k not in data]
        if missing:
            raise TableError(f"{path}: missing {missing}")
        shapes = {k: data[k].shape for k in REQUIRED_KEYS}
    if len(shapes["prefill_isl"]) != 1 or shapes["prefill_isl"] != shapes["prefill_ttft_ms"]:
        raise TableError(f"{path}: prefill_isl and prefill_ttft_ms must be 1-D of one length, got {shapes}")
    if shapes["decode_itl"] != shapes["decode_active_kv_tokens"] + shapes["decode_context_length"]:
        raise TableError(f"{path}: decode_itl must be [kv, ctx], got {shapes}")
    return shapes
