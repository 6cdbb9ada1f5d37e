"""An experiment's treatments ranked by its question before any GPU is spent.

Each treatment (a resolved recipe) gets its predicted curve (infersweep.predict.curve, all treatments'
estimates in one AIConfigurator batch); the experiment's question metrics are read off those curves at
its concurrencies, and the treatments ordered by each metric in its better direction. What the database
cannot say is stated, not guessed:

- a treatment it cannot model is listed with the reason and left out of every ranking;
- a metric it has no estimate for (tails such as p99, error rates, ...) is listed with the reason;
- treatments whose predictions agree within TIE_PCT are ranked equal: typically the factor that separates
  them (router, KV offload policy) is outside the estimator, and the treatment notes say so.

This module takes plain (name, recipe) pairs and duck-typed claims, not infersweep.experiment objects:
experiment/ imports results/, which imports predict/ (no cycles between sibling packages, pyproject's
import-linter contracts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from infersweep.predict.curve import PredictedPoint, Prediction, predict_recipes
from infersweep.predict.target import Target
from infersweep.recipe import ResolvedRecipe

TIE_PCT = 1.0  # predictions closer than this (% of the better one) are a tie: the estimate is not that exact

# Results columns (infersweep.results.table) the prediction gives, and which way is better. The directions
# are schema.direction's (tests/predict/test_predict_experiment.py checks they agree; predict/ cannot import
# results/ without a cycle).
LOWER = "lower"
HIGHER = "higher"
PREDICTED_METRICS = {
    "ttft_avg_ms": LOWER,
    "ttft_p50_ms": LOWER,
    "itl_avg_ms": LOWER,
    "itl_p50_ms": LOWER,
    "request_latency_avg_ms": LOWER,
    "request_latency_p50_ms": LOWER,
    "output_throughput_tok_s": HIGHER,
    "output_throughput_tok_s_per_gpu": HIGHER,
    "output_throughput_avg_tok_s_per_user": HIGHER,
    "output_throughput_p50_tok_s_per_user": HIGHER,
    "request_throughput_req_s": HIGHER,
    "input_throughput_tok_s": HIGHER,
    "total_throughput_tok_s": HIGHER,
    "goodput_req_s": HIGHER,
}


def not_predicted_reason(metric: str) -> str | None:
    """Why the prediction has no value for a results column (None: it has one)."""
    if metric in PREDICTED_METRICS:
        return None
    if any(f"_{s}_" in metric for s in ("p90", "p95", "p99", "min", "max", "std")):
        return "AIConfigurator estimates one static latency per point: no distribution, so no tails or spread"
    if metric in ("error_ratio", "goodput_ratio"):
        return "request failures and per-request SLO shares are not modelled"
    return "no AIConfigurator estimate maps onto this column"


def slo_verdict(p: PredictedPoint, slo: dict[str, float]) -> tuple[bool | None, str]:
    """The predicted point against the SLO bounds (the keys of schema.slo_check). A p99 TTFT bound is judged
    only when the zero-queue estimate already exceeds it (the estimate is a lower bound on the tail)."""
    if p.ttft_ms is None or p.itl_ms is None:
        return None, "no prediction"
    failed, judged = [], []
    checks = [
        ("ttft_p50_ms", p.ttft_ms, "<="),
        ("itl_p50_ms", p.itl_ms, "<="),
        ("output_throughput_p50_tok_s_per_user", p.tok_s_per_user, ">="),
    ]
    for key, value, op in checks:
        bound = slo.get(key)
        if not bound or value is None:
            continue
        judged.append(key)
        if not (value <= bound if op == "<=" else value >= bound):
            failed.append(f"{key}: predicted {value:.4g} (bound {op} {bound:g})")
    if slo.get("ttft_p99_ms") and p.ttft_ms > slo["ttft_p99_ms"]:
        failed.append(f"ttft_p99_ms: even the zero-queue TTFT {p.ttft_ms:.4g} exceeds {slo['ttft_p99_ms']:g}")
    if failed:
        return False, "; ".join(failed)
    if not judged:
        return None, "no SLO the prediction can judge"
    return True, "meets " + ", ".join(judged)


def metric_value(metric: str, p: PredictedPoint, t: Target, slo: dict[str, float]) -> float | None:
    """A results column's predicted value at one point (None: no estimate there)."""
    if p.ttft_ms is None or p.itl_ms is None:
        return None
    latency = p.ttft_ms + p.itl_ms * max(0, t.osl - 1)
    req_s = p.output_tok_s / t.osl if p.output_tok_s and t.osl else None
    if metric.startswith("ttft_") and metric.endswith("_ms"):
        return p.ttft_ms
    if metric.startswith("itl_") and metric.endswith("_ms"):
        return p.itl_ms
    if metric.startswith("request_latency_") and metric.endswith("_ms"):
        return latency
    if metric.endswith("_tok_s_per_user"):
        return p.tok_s_per_user
    if metric == "output_throughput_tok_s":
        return p.output_tok_s
    if metric == "output_throughput_tok_s_per_gpu":
        return p.tok_s_per_gpu
    if metric == "request_throughput_req_s":
        return req_s
    if metric == "input_throughput_tok_s":
        return req_s and req_s * t.isl
    if metric == "total_throughput_tok_s":
        return req_s and req_s * (t.isl + t.osl)
    if metric == "goodput_req_s":  # schema.goodput's point-level rule: all requests if the point meets the SLOs
        passed, _ = slo_verdict(p, slo)
        return req_s if passed is not False else 0.0
    return None


@dataclass
class Ranking:
    metric: str
    concurrency: int
    groups: list[list[str]]  # best first; treatments within TIE_PCT of each other share a group
    values: dict[str, float]

    def text(self) -> str:
        return " > ".join(" = ".join(g) for g in self.groups)


@dataclass
class ClaimCheck:
    text: str
    verdict: str  # "holds" / "does not hold" / "tie" / "not predicted"
    detail: str


@dataclass
class ExperimentPrediction:
    name: str
    predictions: dict[str, Prediction]  # treatment -> prediction (unsupported ones carry their reason)
    metrics: list[str]
    concurrencies: list[int]
    slo: dict[str, float]
    rankings: list[Ranking] = field(default_factory=list)
    not_predicted: dict[str, str] = field(default_factory=dict)  # metric -> why
    claims: list[ClaimCheck] = field(default_factory=list)
    identical: list[list[str]] = field(default_factory=list)  # treatments the database sees as one deployment

    @property
    def unsupported(self) -> dict[str, str]:
        return {n: p.unsupported for n, p in self.predictions.items() if p.unsupported}

    def value(self, treatment: str, metric: str, concurrency: int) -> float | None:
        p = self.predictions[treatment]
        pt = next((x for x in p.points if x.concurrency == concurrency), None)
        return None if pt is None or p.target is None else metric_value(metric, pt, p.target, self.slo)

    def to_dict(self) -> dict[str, Any]:
        return {
            "experiment": self.name,
            "metrics": self.metrics,
            "concurrency": self.concurrencies,
            "slo": self.slo,
            "treatments": {n: p.to_dict() for n, p in self.predictions.items()},
            "unsupported": self.unsupported,
            "not_predicted": self.not_predicted,
            "identical_predictions": self.identical,
            "rankings": [
                {"metric": r.metric, "concurrency": r.concurrency, "order": r.groups, "values": r.values}
                for r in self.rankings
            ],
            "claims": [{"claim": c.text, "verdict": c.verdict, "detail": c.detail} for c in self.claims],
        }


def _rank(metric: str, concurrency: int, values: dict[str, float]) -> Ranking:
    sign = 1 if PREDICTED_METRICS[metric] == LOWER else -1
    ordered = sorted(values, key=lambda n: sign * values[n])
    groups: list[list[str]] = []
    for n in ordered:
        if groups:
            head = values[groups[-1][0]]
            scale = max(abs(head), abs(values[n]))
            if scale == 0 or abs(values[n] - head) / scale * 100 <= TIE_PCT:
                groups[-1].append(n)
                continue
        groups.append([n])
    return Ranking(metric, concurrency, groups, {n: round(v, 3) for n, v in values.items()})


def _check_claim(ep: ExperimentPrediction, kind: str, c: Any) -> ClaimCheck:
    """A claim (metric, concurrency, treatment, baseline, better_by_pct; experiment.spec.Comparison) against
    the predicted values."""
    text = f"{kind}: {c.text()}"
    why = not_predicted_reason(c.metric)
    if why:
        return ClaimCheck(text, "not predicted", f"{c.metric}: {why}")
    for n in (c.treatment, c.baseline):
        if ep.predictions[n].unsupported:
            return ClaimCheck(text, "not predicted", f"{n} is not modelled: {ep.predictions[n].unsupported}")
    t, b = ep.value(c.treatment, c.metric, c.concurrency), ep.value(c.baseline, c.metric, c.concurrency)
    if t is None or b is None:
        return ClaimCheck(text, "not predicted", f"no predicted {c.metric} at c{c.concurrency}")
    detail = f"predicted {c.metric} at c{c.concurrency}: {c.treatment} {t:.4g} vs {c.baseline} {b:.4g}"
    if b == 0:  # goodput of a point predicted to miss its SLOs
        return (
            ClaimCheck(text, "holds", detail + f"; {c.baseline} is predicted to miss the SLOs")
            if t > 0
            else ClaimCheck(text, "does not hold", detail + "; both are predicted to miss the SLOs")
        )
    better_pct = (b - t) / b * 100 if PREDICTED_METRICS[c.metric] == LOWER else (t - b) / b * 100
    detail += f" ({better_pct:.1f} % better)" if better_pct >= 0 else f" ({-better_pct:.1f} % worse)"
    if abs(better_pct) <= TIE_PCT:
        return ClaimCheck(text, "tie", detail + f"; within {TIE_PCT:g} %: the prediction does not separate them")
    if better_pct < 0:
        return ClaimCheck(text, "does not hold", detail)
    if better_pct < c.better_by_pct:
        return ClaimCheck(text, "does not hold", detail + f"; the claim needs {c.better_by_pct:g} %")
    return ClaimCheck(text, "holds", detail)


def predict_treatments(
    name: str,
    treatments: list[tuple[str, ResolvedRecipe]],
    metrics: list[str],
    *,
    concurrencies: list[int] | None = None,
    slo: dict[str, float] | None = None,
    claims: list[tuple[str, Any]] = (),
) -> ExperimentPrediction:
    """Predict every treatment at the question's concurrencies (default: each treatment's own) and rank.
    `claims`: (kind, comparison) pairs, e.g. ("claim", spec.claim), ("seed", an item of spec.seed.expect)."""
    preds = predict_recipes([(r, concurrencies) for _, r in treatments])
    by_name = {n: p for (n, _), p in zip(treatments, preds, strict=True)}
    if concurrencies is None:
        concurrencies = sorted({c for _, r in treatments for c in r.recipe.workload.concurrency})
    if slo is None:
        # treatments of one experiment share their SLOs when the question sets them; else the first's
        slo = {k: v for k, v in treatments[0][1].recipe.slo.model_dump().items() if v is not None}
    ep = ExperimentPrediction(name, by_name, list(metrics), list(concurrencies), dict(slo))
    modelled = [n for n, p in by_name.items() if not p.unsupported]
    for m in metrics:
        why = not_predicted_reason(m)
        if why:
            ep.not_predicted[m] = why
            continue
        for c in concurrencies:
            values = {n: v for n in modelled if (v := ep.value(n, m, c)) is not None and math.isfinite(v)}
            if len(values) >= 2:
                ep.rankings.append(_rank(m, c, values))
    seen: dict[tuple, list[str]] = {}
    for n in modelled:
        pts = tuple((p.ttft_ms, p.itl_ms, p.output_tok_s) for p in by_name[n].points)
        seen.setdefault(pts, []).append(n)
    ep.identical = [g for g in seen.values() if len(g) > 1]
    ep.claims = [_check_claim(ep, kind, c) for kind, c in claims]
    return ep
