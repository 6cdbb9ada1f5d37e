"""The predicted curve of a recipe: TTFT, ITL and throughput per concurrency, from AIConfigurator.

- Aggregated: AIConfigurator's IFB model (cli_estimate mode="agg", the in-flight-batching scheduler
  of aiconfigurator/sdk/backends/base_backend.py run_agg) for one replica at batch size
  ceil(concurrency / replicas): the router spreads requests evenly. Its tokens/s/user times the
  concurrency is the output throughput.
- Closed loop: every point also gets `ttft_lockstep_ms`, the lockstep prefill queue of a closed loop from
  one request's prefill estimate (infersweep.predict.queueing); the static TTFT and it bound the band a
  closed-loop sweep's measured TTFT falls in.
- Disaggregated: one prefill step (mode="static_ctx", batch 1: each request is prefilled alone, no
  queueing) plus decode steps (mode="static_gen") at batch ceil(concurrency / decode replicas) and the
  mid-generation context isl + osl/2. Zero-queue: under heavy load measured TTFT is higher (the mocker
  with a calibrated table adds the queueing; see mocker_table).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from infersweep.predict import aic
from infersweep.predict.queueing import lockstep_ttft_ms
from infersweep.predict.target import Target, Unsupported, map_recipe
from infersweep.recipe import ResolvedRecipe


@dataclass
class PredictedPoint:
    concurrency: int
    ttft_ms: float | None
    itl_ms: float | None
    output_tok_s: float | None
    tok_s_per_user: float | None
    tok_s_per_gpu: float | None
    error: str | None = None
    # The closed loop's TTFT band (infersweep.predict.queueing): ttft_ms, the static estimate, is its low end;
    # this, the lockstep prefill queue t_prefill x (c' + 1) / 2, its high end.
    ttft_lockstep_ms: float | None = None

    def ttft_band(self):
        from infersweep.predict.queueing import Band

        if self.ttft_ms is None or self.ttft_lockstep_ms is None:
            return None
        return Band(min(self.ttft_ms, self.ttft_lockstep_ms), max(self.ttft_ms, self.ttft_lockstep_ms))


@dataclass
class Prediction:
    recipe: str
    target: Target | None
    unsupported: str | None
    points: list[PredictedPoint]
    stats: dict

    def to_dict(self) -> dict:
        return {
            "recipe": self.recipe,
            "unsupported": self.unsupported,
            "database": self.target.database if self.target else None,
            "notes": self.target.notes if self.target else [],
            "points": [asdict(p) for p in self.points],
        }


def _base(t: Target) -> dict:
    return {
        "model_path": t.model_path,
        "system_name": t.system,
        "backend_name": t.backend,
        "backend_version": t.version,
        **t.quant,
    }


def points_for(t: Target, concurrencies: list[int]) -> list[list[dict]]:
    """The AIConfigurator estimates each concurrency needs (one for agg, two for disagg)."""
    out = []
    for c in concurrencies:
        if t.mode == "agg":
            w = t.workers["worker"]
            out.append(
                [
                    {
                        **_base(t),
                        **w.kwargs(),
                        "mode": "agg",
                        "isl": t.isl,
                        "osl": t.osl,
                        "prefix": t.prefix,
                        "batch_size": math.ceil(c / w.replicas),
                    }
                ]
            )
        else:
            p, d = t.workers["prefill"], t.workers["decode"]
            out.append(
                [
                    {
                        **_base(t),
                        **p.kwargs(),
                        "mode": "static_ctx",
                        "isl": t.isl,
                        "osl": 1,
                        "batch_size": 1,
                        "prefix": t.prefix,
                    },
                    {
                        **_base(t),
                        **d.kwargs(),
                        "mode": "static_gen",
                        "isl": t.isl + t.osl // 2,
                        "osl": 2,
                        "batch_size": math.ceil(c / d.replicas),
                    },
                ]
            )
    return out


def prefill_estimate(t: Target) -> tuple[dict, int]:
    """The AIConfigurator estimate whose TTFT is one request's prefill alone, and how many workers prefill
    (the lockstep queue of infersweep.predict.queueing forms on each of them)."""
    if t.mode == "agg":
        return points_for(t, [1])[0][0], t.workers["worker"].replicas
    return points_for(t, [1])[0][0], t.workers["prefill"].replicas  # static_ctx at batch 1


def _combine(t: Target, c: int, answers: list[dict], gpus: int) -> PredictedPoint:
    bad = next((a for a in answers if not a.get("ok")), None)
    if bad:
        return PredictedPoint(c, None, None, None, None, None, error=bad["error"])
    if t.mode == "agg":
        a = answers[0]
        ttft, itl, per_user = a["ttft_ms"], a["itl_ms"], a["tok_s_user"]
    else:
        ttft, itl = answers[0]["ttft_ms"], answers[1]["itl_ms"]
        per_user = 1000.0 / itl if itl else None
    # Output tokens/s of c users: each produces osl tokens per (TTFT + (osl-1) x ITL).
    latency_s = (ttft + itl * max(0, t.osl - 1)) / 1000.0
    total = c * t.osl / latency_s if latency_s > 0 else None
    return PredictedPoint(
        c,
        round(ttft, 2),
        round(itl, 3),
        total and round(total, 1),
        per_user and round(per_user, 2),
        total and round(total / gpus, 1),
    )


def predict_recipe(
    r: ResolvedRecipe, concurrencies: list[int] | None = None, *, cache_only: bool = False
) -> Prediction:
    return predict_recipes([(r, concurrencies)], cache_only=cache_only)[0]


def predict_recipes(
    items: list[tuple[ResolvedRecipe, list[int] | None]], *, cache_only: bool = False
) -> list[Prediction]:
    """Predictions for several recipes with one AIConfigurator subprocess for all their estimates (an
    experiment's treatments share most of them: identical points are estimated once).

    cache_only: answer only from the cache (aic.estimate_points raises aic.NotCached for a missing one),
    for callers that must never wait for, or need, the AIConfigurator environment."""
    prepared = []
    flat: list[dict] = []
    for r, concurrencies in items:
        cs = list(concurrencies or r.recipe.workload.concurrency)
        t = map_recipe(r, cache_only=cache_only)
        per_c = [] if isinstance(t, Unsupported) else points_for(t, cs)
        prefill = None if isinstance(t, Unsupported) else prefill_estimate(t)
        prepared.append((r, cs, t, per_c, prefill))
        flat += [p for ps in per_c for p in ps] + ([prefill[0]] if prefill else [])
    unique: dict[str, dict] = {}
    for p in flat:
        unique.setdefault(aic.point_key(p), p)
    answers, stats = aic.estimate_points(list(unique.values()), cache_only=cache_only)
    by_key = dict(zip(unique, answers, strict=True))
    out = []
    for r, cs, t, per_c, prefill in prepared:
        if isinstance(t, Unsupported):
            out.append(Prediction(r.name, None, t.reason, [], {}))
            continue
        pts, mine = [], []
        one = by_key[aic.point_key(prefill[0])]
        t_prefill = one.get("ttft_ms") if one.get("ok") else None
        for c, ps in zip(cs, per_c, strict=True):
            a = [by_key[aic.point_key(p)] for p in ps]
            mine += a
            pt = _combine(t, c, a, r.gpu_count)
            if t_prefill and pt.error is None:
                pt.ttft_lockstep_ms = round(lockstep_ttft_ms(t_prefill, c, prefill[1]), 2)
            pts.append(pt)
        versions = {a.get("backend_version") for a in mine if a.get("ok")}
        if versions and versions != {t.version}:
            t.notes.append(f"database answered for version {sorted(versions)}")
        out.append(Prediction(r.name, t, None, pts, stats))
    return out
