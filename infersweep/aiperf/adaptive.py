"""When a point has measured enough: the decision an adaptive point takes after each window of requests, the
loop that acts on it (measure_until_long_enough), and the `stop_reason` every point records (issue 32 item 4,
"adaptive length").

A point is long enough when it is steady and the 95 % confidence interval of its mean TTFT and mean request
latency is within a target (TARGET_REL of the mean); otherwise it may be extended (more requests of the
same prompt distribution) up to its budget. The interval is over *round means*, not requests: in a closed
loop the requests of one round (`concurrency` of them, started together) share their queue, so they are not
independent; consecutive rounds are close to it. A round is max(concurrency, MIN_BATCH) requests in start
order (at c1 a "round" of one request would make the interval over single requests again).

A point's budget is its own request count unless the recipe gives it more (`workload.max_requests_per_concurrency`,
sent to the step as the workload's `max_requests_factor`; `ci95_target` sets the target): then the point step
(infersweep.aiperf.point_run) acts on `extend` by measuring the point again as one longer window
(`next_window` says how long) and records `target met`, or `budget spent` with how many more requests the
interval says would meet the target. results.md's per-load table shows it. Steady is the rule of
infersweep.aiperf.steadiness over the window's records, with params/validity.yaml's thresholds sent in the
workload (the steady_* keys): an unsteady window is measured again, longer, while the budget lasts, and one
still unsteady when it is spent stops with `budget spent`, saying so; summarize's validity check
(infersweep.results.validity, the same rule) then marks it invalid whatever its interval. A workload without
the thresholds leaves `steady` unknown (judged at summarize time only). Standard library only (the AIPerf image
copies this package).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable, Iterable

TARGET_REL = 0.10  # the 95 % half-width a point aims for, relative to its mean
MIN_BATCH = 4
MIN_ROUNDS = 3  # fewer round means than this make no interval worth a decision
# t(0.975, df) for df = 1..10; past 10 the normal 1.96 is within 12 % (a decision, not a published interval)
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


@dataclass(frozen=True)
class Decision:
    stop_reason: str  # "target met" | "budget spent" | "extend"
    ci_rel: float | None  # the widest relative half-width over the judged metrics (None: too few rounds)
    rounds: int
    more_requests: int  # extend: how many to add now; budget spent: how many the target would need (0: unknown)
    detail: str

    def as_result(self) -> dict:
        d = asdict(self)
        d["ci_rel"] = None if self.ci_rel is None else round(self.ci_rel, 4)
        return {f"adaptive_{k}" if k != "stop_reason" else k: v for k, v in d.items()}


def _pct(x: float) -> str:
    """10 % as `10%`, a target below 1 % with its digits (`0.05%`, not `0%`)."""
    return f"{x:.0%}" if x >= 0.01 else f"{x * 100:.2g}%"


def batch_size(concurrency: int) -> int:
    return max(int(concurrency), MIN_BATCH)


def round_means(values: Iterable[float], concurrency: int) -> list[float]:
    """Means of consecutive rounds of batch_size(concurrency) values (start order); a partial last round is
    dropped (its requests started while the next round's had not come back: a different queue)."""
    v = [float(x) for x in values if x is not None and math.isfinite(float(x))]
    b = batch_size(concurrency)
    return [sum(v[i : i + b]) / b for i in range(0, len(v) - b + 1, b)]


def rel_half_width(means: list[float]) -> float | None:
    n = len(means)
    if n < MIN_ROUNDS:
        return None
    mean = sum(means) / n
    if mean <= 0:
        return None
    sd = math.sqrt(sum((x - mean) ** 2 for x in means) / (n - 1))
    t = _T975[n - 2] if n - 1 <= len(_T975) else 1.96
    return t * sd / math.sqrt(n) / mean


def decide(
    series: dict[str, list[float]],
    concurrency: int,
    *,
    steady: bool | None,
    requests_done: int,
    budget_requests: int,
    target_rel: float = TARGET_REL,
    unsteady_because: str = "",
) -> Decision:
    """`series`: per-request values in start order, by metric name (ttft, latency). Stop when steady and
    every metric's round-mean interval is within target_rel; else extend, or stop with `budget spent`.
    `steady`: None when not judged; `unsteady_because`: the steadiness rule's reasons, for the detail."""
    b = batch_size(concurrency)
    widths = {k: rel_half_width(round_means(v, concurrency)) for k, v in series.items()}
    rounds = min((len(round_means(v, concurrency)) for v in series.values()), default=0)
    known = [w for w in widths.values() if w is not None]
    worst = max(known) if known and len(known) == len(widths) else None
    left = max(0, budget_requests - requests_done)
    unsteady = f"not steady ({unsteady_because})" if unsteady_because else "not steady"
    if worst is None:
        need = max(b * MIN_ROUNDS - requests_done, b)
        why = f"{rounds} round(s) of {b} requests: too few for an interval (needs {MIN_ROUNDS})"
        if steady is False:
            why = f"{unsteady}; {why}"
    elif worst <= target_rel and steady is not False:
        return Decision("target met", worst, rounds, 0, f"±{worst:.1%} <= target ±{_pct(target_rel)}, {rounds} rounds")
    elif steady is False:
        need = requests_done  # unsteady: the same again, to see whether it settles
        why = f"{unsteady}; ±{worst:.1%} over {rounds} rounds"
    else:
        # the half-width shrinks with the square root of the rounds
        need = math.ceil(requests_done * ((worst / target_rel) ** 2 - 1) / b) * b
        why = f"±{worst:.1%} > target ±{_pct(target_rel)} over {rounds} rounds"
    if left <= 0:
        if steady is False:  # how many more would settle it, nobody can say
            return Decision("budget spent", worst, rounds, 0, f"{why}; still not steady when the budget was spent")
        return Decision("budget spent", worst, rounds, need, f"{why}; about {need} more requests would do")
    return Decision("extend", worst, rounds, min(need, left), why)


def point_budget(requests: int, factor: float | None) -> int:
    """The most requests one window of this point may measure: `requests` x the workload's
    max_requests_factor (the recipe's max_requests_per_concurrency / requests_per_concurrency, so a point
    raised to min_requests keeps its share); no factor: `requests` (today's behaviour, never extended)."""
    if not factor or factor <= 1:
        return int(requests)
    return max(int(requests), int(math.floor(requests * float(factor) + 1e-9)))


def next_window(
    decision: Decision,
    requests: int,
    budget: int,
    *,
    seconds_per_request: float | None = None,
    seconds_left: float | None = None,
) -> tuple[int | None, str]:
    """(requests of the next, longer window of an `extend` decision, '') — `requests` + what decide() asked for,
    at most `budget` and what fits in `seconds_left` (the point's timeout) at `seconds_per_request` (what the
    last window took a request, warm-up included) — or (None, why not)."""
    if decision.stop_reason != "extend" or decision.more_requests <= 0:
        return None, ""
    # decide() counts what was measured (successful requests); the window's request count may be more
    total = min(requests + decision.more_requests, budget)
    if total <= requests:
        return None, "the budget is spent"
    if seconds_per_request and seconds_left is not None:
        total = min(total, int(seconds_left / seconds_per_request))
        if total <= requests:
            return None, "the point's timeout leaves no time for a longer window"
    return total, ""


@dataclass(frozen=True)
class Plan:
    """What an adaptive point starts from: its load, its first window (requests after warmup), its budget (the
    most requests one window may measure: point_budget) and its target."""

    concurrency: int
    requests: int
    warmup: int
    budget: int
    target_rel: float = TARGET_REL


def measure_until_long_enough(
    plan: Plan,
    measure: Callable[[int, int], tuple[dict, dict[str, list[float]] | None]],
    keep_pilot: Callable[[dict, int], dict],
    restore_pilot: Callable[[dict, dict], dict],
    time_left: Callable[[], float | None] = lambda: None,
) -> tuple[dict, list[dict]]:
    """The adaptive point: measure a window of `requests`, decide, and while the decision is `extend` and the
    budget (requests, and the point's time) allows, measure again as one longer window. Returns the final
    window's result (with `stop_reason`, `adaptive_*`) and the pilots (earlier windows) kept on the way.

    `measure(requests, k)`: run window k (0 = the first) -> (result, per-request series; None if unreadable);
    the result's `steady_reasons` (a list; [] = steady) is the steadiness verdict, absent when not judged;
    `keep_pilot(result, k)`: set window k aside as pilot k (its files), -> what the point records of it;
    `restore_pilot(pilot, failed)`: a longer window failed: the pilot comes back as the point's result.
    `time_left()`: seconds left of the point's timeout (None: no timeout)."""
    pilots: list[dict] = []
    requests, warmup = plan.requests, plan.warmup
    while True:
        left = time_left()
        result, series = measure(requests, len(pilots))
        if result.get("status") != "ok":
            if pilots:  # a good measurement is never lost to its extension
                result = restore_pilot(pilots.pop(), result)
            return result, pilots
        if series is None:
            result["stop_reason"] = "unknown (no per-request records)"
            return result, pilots
        # the steadiness rule's reasons over this window (infersweep.aiperf.steadiness), when `measure` judged it
        unsteady = result.get("steady_reasons")
        decision = decide(
            series,
            plan.concurrency,
            steady=None if unsteady is None else not unsteady,
            requests_done=len(series.get("ttft") or []),
            budget_requests=plan.budget,
            target_rel=plan.target_rel,
            unsteady_because="; ".join(unsteady or []),
        )
        grown, why = None, "the point was stopped"
        if not result.get("stopped_by"):
            wall = result.get("wall_s")
            grown, why = next_window(
                decision,
                requests,
                plan.budget,
                seconds_per_request=wall / max(1, requests + warmup) if wall else None,
                # the next window warms up again: its warm-up comes out of the time too
                seconds_left=None if left is None or not wall else left - wall - warmup * wall / (requests + warmup),
            )
        if decision.stop_reason == "extend" and grown is None:
            decision = replace(decision, stop_reason="budget spent", detail=f"{decision.detail}; {why}")
        result.update(decision.as_result())
        if grown is None:
            return result, pilots
        pilots.append(keep_pilot(result, len(pilots) + 1))
        requests = grown


def series_from_records(records_path: Path) -> dict[str, list[float]]:
    """Per-request TTFT and latency (ms) in start order from profile_export.jsonl (failed requests left out)."""
    from infersweep.aiperf.artifacts import iter_profiling_records

    rows = []
    for rec in iter_profiling_records(records_path):
        meta, metrics = rec.get("metadata") or {}, rec.get("metrics") or {}
        start = meta.get("request_start_ns")
        if rec.get("error") or not isinstance(start, int):
            continue
        vals = [(metrics.get(k) or {}).get("value") for k in ("time_to_first_token", "request_latency")]
        ttft, latency = vals
        if isinstance(ttft, (int, float)) and isinstance(latency, (int, float)):
            rows.append((start, float(ttft), float(latency)))
    rows.sort()
    return {"ttft": [r[1] for r in rows], "latency": [r[2] for r in rows]}
