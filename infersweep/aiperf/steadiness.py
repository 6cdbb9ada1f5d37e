"""Is a window of requests steady? The steadiness rule, with two users: the point step judges each window it
measures (infersweep.aiperf.point_run: an unsteady window with budget left is measured again, longer;
infersweep.aiperf.adaptive), and the summarize step judges the final one (infersweep.results.validity, which
marks an unsteady point invalid). One rule, so the step extends exactly the points summarize would refuse.

    m = window_measures(records_path, concurrency, request_rate)   # the figures, from profile_export.jsonl
    reasons = steady_state_reasons(m, thresholds)                  # [] when steady

The thresholds are params/validity.yaml's steady_state and overload blocks (infersweep.results.validity
load_thresholds). The point step has no params/ (the AIPerf image carries this package alone), so they reach it
in the workload, as flat numbers (STEADY_KEYS: thresholds_as_workload at render time, thresholds_from_workload
in the step), only for a point that may be extended.

Standard library only: the AIPerf image copies this package (images/aiperf.Dockerfile).
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any, NamedTuple

from infersweep.aiperf.artifacts import iter_records
from infersweep.aiperf.flags import OPTIONAL_STEADY_KEYS, STEADY_KEYS
from infersweep.aiperf.student_t import t_two_sided_p


def thresholds_as_workload(thresholds: dict[str, Any]) -> dict[str, float]:
    """The STEADY_KEYS of `thresholds` (load_thresholds' dict), for the point step's workload."""
    return {key: thresholds[block][name] for key, (block, name) in STEADY_KEYS.items() if name in thresholds[block]}


def thresholds_from_workload(workload: dict[str, Any]) -> dict[str, Any] | None:
    """The steady_state and overload blocks steady_state_reasons takes, from a workload's STEADY_KEYS; None when it
    has none (a point without a budget, or a workflow rendered before the step judged steadiness). Some but
    not all is a workload nobody rendered: refused, naming the missing keys."""
    given = [k for k in STEADY_KEYS if workload.get(k) is not None]
    if not given:
        return None
    # The trend test's keys came later: a workload rendered before them is judged as it was (by size alone).
    missing = [k for k in STEADY_KEYS if k not in given and k not in OPTIONAL_STEADY_KEYS]
    if missing:
        raise ValueError(
            f"--workload: the steadiness thresholds come together; missing {missing}: render the workflow "
            "again (the pipeline adds all of them for a point with a budget) or remove the steady_* keys"
        )
    out: dict[str, Any] = {}
    for key, (block, name) in STEADY_KEYS.items():
        if key in given:
            out.setdefault(block, {})[name] = workload[key]
    return out


def window_measures(records_path: Path, concurrency: int | None, request_rate: float | None = None) -> dict[str, Any]:
    """Steady state, delivered load and send delay from the profiling records of profile_export.jsonl.

    Delivered load and send delay are read over the issuing window [first request start, last request start]:
    while AIPerf still issues requests a closed loop holds `concurrency` requests in flight; after the last
    start only the drain remains. The delivered load counts every request in flight then, the warm-up's last
    ones too: a seamless window (infersweep/aiperf/flags.py seamless_warmup) opens while they still run, each
    measured request taking the slot one frees, and counting the measured ones alone would read the first
    round as a ramp from 1 to `concurrency`. Steady state is judged over whole cycles of the loop
    (`cycle_measures`).
    """
    out = {
        "osl_delivered": math.nan,
        "delivered_concurrency": math.nan,
        **_no_cycles(0),
        "send_delay_p99_ms": math.nan,
        "request_latency_mean_ms": math.nan,
        "records": 0,
        "client_warmup_tail_tokens": 0.0,
    }
    if not Path(records_path).exists():
        return out
    reqs, warmup = read_window(records_path)
    out["records"] = len(reqs)
    if reqs:
        out["client_warmup_tail_tokens"] = warmup_tokens_after(warmup, min(r[0] for r in reqs))
    lengths = [r[3] for r in reqs if math.isfinite(r[2]) and math.isfinite(r[3]) and r[3] > 0]
    out["osl_delivered"] = sum(lengths) / len(lengths) if lengths else math.nan
    if len(reqs) < 2:
        return out
    a = min(r[0] for r in reqs)
    b = max(r[0] for r in reqs)
    if b > a:
        spans = [(s, e) for s, e, *_ in reqs] + [(s, e) for s, e, _ in warmup]
        busy = sum(max(0, min(e, b) - max(s, a)) for s, e in spans)
        out["delivered_concurrency"] = busy / (b - a)
    delays = sorted(d for *_, d in reqs if math.isfinite(d))
    if delays:
        out["send_delay_p99_ms"] = delays[min(len(delays) - 1, math.ceil(0.99 * len(delays)) - 1)]
    # the cycle a send delay is a share of (the client-bound check, params/validity.yaml client)
    out["request_latency_mean_ms"] = sum(e - s for s, e, *_ in reqs) / len(reqs) / 1e6
    open_loop = request_rate is not None and math.isfinite(request_rate) and request_rate > 0
    if open_loop or not concurrency:
        # An open loop has no rounds: its cycle is the requests the server holds at once (Little's law: the
        # arrivals over one mean latency), which is what the delivered concurrency measures.
        dc = out["delivered_concurrency"]
        size = max(1, round(dc)) if math.isfinite(dc) else 1
    else:
        size = int(concurrency)
    out.update(cycle_measures(reqs, size, closed_loop=not (open_loop or not concurrency)))
    return out


def read_requests(records_path: Path) -> list[tuple[int, int, float, float, float]]:
    """(start ns, end ns, TTFT ms, output tokens, send delay ms) of each profiling request, by start time."""
    return read_window(records_path)[0]


def read_window(records_path: Path) -> tuple[list[tuple[int, int, float, float, float]], list[tuple[int, int, dict]]]:
    """read_requests' tuples, and the (start ns, end ns, metrics) of every warm-up request, in one pass over the
    records: a seamless window (infersweep/aiperf/flags.py seamless_warmup) opens while the warm-up's last requests
    still run, and the server holds them as it holds the measured ones (window_measures' delivered load), and
    counts their tokens in the window (warmup_tokens_after)."""
    reqs, warmup = [], []
    for phase, rec in iter_records(records_path):
        meta = rec.get("metadata") or {}
        start, end = meta.get("request_start_ns"), meta.get("request_end_ns")
        if not isinstance(start, int) or not isinstance(end, int):
            continue
        if phase == "warmup":
            warmup.append((start, end, rec.get("metrics") or {}))
            continue
        if phase != "profiling":
            continue
        metrics = rec.get("metrics") or {}
        issued = meta.get("credit_issued_ns")
        delay = (start - issued) / 1e6 if isinstance(issued, int) else math.nan
        if rec.get("error"):
            reqs.append((start, end, math.nan, 0.0, delay))
            continue
        reqs.append(
            (start, end, _value(metrics, "time_to_first_token"), _value(metrics, "output_sequence_length"), delay)
        )
    return sorted(reqs), warmup


def warmup_tokens_after(warmup: list[tuple[int, int, dict]], start_ns: int) -> float:
    """Output tokens of warm-up requests (read_window's) that reached the client after `start_ns` (the window's
    start, its first measured request).

    Behind a seamless window (infersweep/aiperf/flags.py seamless_warmup) the warm-up's last requests are still
    generating when the window opens, so the server's token count over the window holds their tails as well as
    the measured requests' tokens: on the H200, SGLang c64 opened with 63 warm-up requests in flight, whose 12,350
    tokens after the start were 7 % of the window's (counted so, the client's side agrees with the frontend's
    within 0.1 %; tests/results/test_measured_sglang_c1_c64.py). Each request's chunk arrival times are its start +
    TTFT, then AIPerf's inter-chunk gaps (aiperf 0.13.0 metrics/types/inter_chunk_latency_metric.py: the gaps
    between consecutive content responses); its tokens are shared evenly over its chunks (several tokens may
    share a chunk under load)."""
    total = 0.0
    for start, end, metrics in warmup:
        if end <= start_ns:
            continue
        tokens, ttft_ms = _value(metrics, "output_sequence_length"), _value(metrics, "time_to_first_token")
        if not (math.isfinite(tokens) and tokens > 0 and math.isfinite(ttft_ms)):
            continue
        gaps = (metrics.get("inter_chunk_latency") or {}).get("value")
        t = start + ttft_ms * 1e6
        arrivals = [t]
        for gap in gaps if isinstance(gaps, list) else []:
            t += float(gap) * 1e6
            arrivals.append(t)
        total += tokens * sum(1 for a in arrivals if a > start_ns) / len(arrivals)
    return total


def _no_cycles(size: int) -> dict[str, Any]:
    """cycle_measures' figures before any cycle is read (nothing to judge)."""
    return {
        "steady_throughput_change": math.nan,
        "steady_ttft_change": math.nan,
        "steady_throughput_trend_p": math.nan,
        "steady_ttft_trend_p": math.nan,
        "steady_first_cycle_ttft_excess": math.nan,
        "steady_cycles": 0,
        "steady_cycles_judged": 0,
        "steady_edges_left_out": 0,
        "steady_cycle_size": size,
    }


def cycle_measures(reqs: list[tuple], size: int, closed_loop: bool = True) -> dict[str, Any]:
    """Steady state over whole cycles of the loop: drift of the output rate and of TTFT from the first cycle
    to the last, and the first cycle's weight in the mean TTFT.

    A closed loop's cycle k is the k-th request of every slot: AIPerf issues the first `size` requests at once
    and each later one when an earlier one ends (concurrency mode), so the i-th request issued after the first
    `size` follows the i-th to end, one cycle later. In a lockstep loop a cycle is a round; when the slots
    drift apart (c128 on the H200) it still holds one request of each. An open loop's cycle is `size`
    consecutive arrivals (the requests it holds at once). Per cycle: the output rate, output tokens over
    request time (sum of tokens / sum of latencies: a closed loop's throughput is `size` times it, by
    Little's law), and the TTFT median.

    Why whole requests: the rule this replaces cut [first start, last start] at its midpoint and counted the
    tokens streamed in each half. In a lockstep loop of R rounds that window holds R-1 rounds and the
    midpoint falls inside one, so one half got that round's prefill (no tokens) and the other its decode: a
    perfectly periodic 6-round loop read +10.5 % at TTFT = 20 % of request latency, +24 % at 35 % and +31 % at
    40 % (issue 32), and a steady server failed once TTFT passed about 36 % of latency. Any time window has
    such edges while the loop is locked (and while it fills); a cycle holds every request whole, so a
    periodic loop reads the same in every cycle at any TTFT share and what is left to see is the server.

    Drift is the least-squares line through the per-cycle figures (the interior ones from
    INTERIOR_FROM_CYCLES cycles on: the loop's start and drain are not the server), read across the whole span
    of the cycles (from the first one's leading edge to the last one's trailing edge) relative to its start: a
    server whose output rate falls evenly by 20 % reads -20 % whatever the number of cycles, where halves read
    about half of it. Each line's slope also gets a two-sided p-value (its t statistic against the scatter of
    the cycles about the line, `_trend_p`): a drift counts only when the cycles tell it from their own noise
    (steady_state_reasons). The first cycle's excess is how much it alone raises the point's mean TTFT (mean over
    all requests / mean without the first cycle - 1): a cold start (a whole batch's prefills at once, caches
    empty) that the warm-up did not absorb, which a line through few cycles only partly shows.
    """
    out = _no_cycles(size)
    groups = whole_cycles(reqs, size, closed_loop)
    out["steady_cycles"] = len(groups)
    if len(groups) < 2:  # a line needs two cycles; judge_point asks for steady_state.min_cycles
        return out
    rate, ttft = [], []
    for g in groups:
        toks = sum(t for _, _, f, t, _ in g if math.isfinite(t) and math.isfinite(f))
        busy = sum(e - s for s, e, f, t, _ in g if math.isfinite(t) and math.isfinite(f)) / 1e9
        rate.append(toks / busy if busy > 0 else math.nan)
        fs = [f for _, _, f, *_ in g if math.isfinite(f)]
        ttft.append(statistics.median(fs) if fs else math.nan)
    # The loop's own two edges are not the server's, its start and its drain (INTERIOR_FROM_CYCLES): the line is
    # fitted through the interior cycles and still read across the span of all of them, so a server that slows
    # down evenly reads the same whole-point change either way.
    edges = 2 if len(groups) >= INTERIOR_FROM_CYCLES else 0
    out["steady_cycles_judged"] = len(groups) - edges
    out["steady_edges_left_out"] = edges
    if edges:
        rate[0] = rate[-1] = ttft[0] = ttft[-1] = math.nan
    out["steady_throughput_change"] = _drift(rate)
    out["steady_ttft_change"] = _drift(ttft)
    out["steady_throughput_trend_p"] = _trend_p(rate)
    out["steady_ttft_trend_p"] = _trend_p(ttft)
    ttfts = [[f for _, _, f, *_ in g if math.isfinite(f)] for g in groups]
    first, rest = ttfts[0], [f for fs in ttfts[1:] for f in fs]
    if first and rest and statistics.fmean(rest) > 0:
        out["steady_first_cycle_ttft_excess"] = statistics.fmean(first + rest) / statistics.fmean(rest) - 1
    return out


# From this many whole cycles on, the drift lines run through the interior cycles only: the first and the last
# belong to the loop, not to the server.
# - The first starts every slot at once. AIPerf 0.13 waits for every warm-up request to return before the
#   profiling phase issues its first credit (aiperf/timing/phase/runner.py:698-704: a phase that is not
#   `seamless` awaits _wait_for_returning_complete; `seamless` exists only in AIPerf's YAML phase config,
#   aiperf/config/phases.py:237, and is not used here), so however long the warm-up, the first measured round
#   is a synchronised burst of prefills: +13 % mean TTFT at c64 on the H200 (docs/measured-h200.md).
# - The last is the drain: each slot's last request runs while the others have stopped, with no prefills
#   interleaved, so its output rate is higher (+15 % at c64 on the H200) whatever the server does.
# A line through six cycles with both edges read +25 % at c64 where the four interior cycles were flat within
# 0.2 %. The first cycle still counts where it moves the reported numbers: `steady_first_cycle_ttft_excess`
# is its weight in the point's mean TTFT, judged against steady_state.max_first_cycle_ttft_excess. Below this
# many cycles there is no interior line worth drawing (steady_state.min_cycles is judged on what is left).
INTERIOR_FROM_CYCLES = 5


def whole_cycles(reqs: list[tuple], size: int, closed_loop: bool = True) -> list[list[tuple]]:
    """The requests (read_requests' tuples, by start) grouped into the loop's whole cycles, in order (see
    cycle_measures); a cycle that fewer than half the slots reached is left out."""
    cycle = _closed_loop_cycles(reqs, size) if closed_loop else [i // size for i in range(len(reqs))]
    groups: list[list[tuple]] = [[] for _ in range(max(cycle) + 1 if cycle else 0)]
    for r, k in zip(reqs, cycle, strict=True):
        groups[k].append(r)
    # whole cycles only: the slots that drifted ahead started a cycle the others had not reached
    return [g for g in groups if len(g) >= max(1, size // 2)]


def start_transient_cycles(values: list[float], max_share: float = 0.5) -> int:
    """How many leading cycles the loop's start transient lasts, by the Marginal Standard Error Rule (MSER;
    White, "An effective truncation heuristic for bias reduction in simulation output", Simulation 69(6),
    1997), with the cycles as its batches: the d that minimises sum_{i>=d} (x_i - mean_d)^2 / (n - d)^2 over
    d < max_share * n, i.e. the cut after which the remaining mean is known most precisely. A steady series
    gives 0 or a cycle or two of noise; a burst that echoes for k cycles gives about k. Not the verdict's
    rule (cycle_measures is): an estimate of where the steady part of a window begins."""
    xs = [v for v in values if math.isfinite(v)]
    n = len(xs)
    best, best_d = math.inf, 0
    for d in range(0, max(1, int(max_share * n))):
        rest = xs[d:]
        if len(rest) < 2:
            break
        m = statistics.fmean(rest)
        score = sum((x - m) ** 2 for x in rest) / len(rest) ** 2
        if score < best:
            best, best_d = score, d
    return best_d


def _closed_loop_cycles(reqs: list[tuple], size: int) -> list[int]:
    """The cycle of each request (sorted by start) of a closed loop of `size` slots: the first `size` are
    cycle 0; the i-th one after them follows the i-th request to end."""
    by_end = sorted(range(len(reqs)), key=lambda i: reqs[i][1])
    cycle = [0] * len(reqs)
    for i in range(size, len(reqs)):
        cycle[i] = cycle[by_end[i - size]] + 1
    return cycle


class _Line(NamedTuple):
    """The least-squares line through the finite (cycle index, value) points of a per-cycle series."""

    n: int  # finite points
    mx: float
    my: float
    sxx: float
    slope: float
    scatter: float  # residual variance about the line (n - 2 degrees of freedom); nan below 3 points


def _fit(values: list[float]) -> _Line:
    """The line `_drift` reads and `_trend_p` tests (at least 2 finite values)."""
    pts = [(i, v) for i, v in enumerate(values) if math.isfinite(v)]
    n = len(pts)
    mx = statistics.fmean(i for i, _ in pts)
    my = statistics.fmean(v for _, v in pts)
    sxx = sum((i - mx) ** 2 for i, _ in pts)
    slope = sum((i - mx) * (v - my) for i, v in pts) / sxx
    scatter = sum((v - my - slope * (i - mx)) ** 2 for i, v in pts) / (n - 2) if n > 2 else math.nan
    return _Line(n, mx, my, sxx, slope, scatter)


def _drift(values: list[float]) -> float:
    """Relative change of the least-squares line through `values` (one per cycle, in order) from the first
    cycle's leading edge (x = -0.5) to the last one's trailing edge; +inf when the line starts at or below
    zero and rises (a queue from nothing)."""
    if sum(math.isfinite(v) for v in values) < max(2, len(values) / 2):
        return math.nan
    fit = _fit(values)
    first = fit.my + fit.slope * (-0.5 - fit.mx)
    last = fit.my + fit.slope * (len(values) - 0.5 - fit.mx)
    if first <= 0:
        return math.inf if last > first else math.nan
    return last / first - 1


def _trend_p(values: list[float]) -> float:
    """Two-sided p-value of the least-squares slope through `values` (one per cycle; NaN cycles left out): its t
    statistic, slope over its standard error from the scatter about the line, with points - 2 degrees of
    freedom. NaN with fewer than 3 points; 0 for a line without scatter that moves (a clean ramp), 1 for a flat
    one. The cycles are taken as independent: no two share a request, but a loop whose cycles are positively
    correlated (slots that stay slow for several cycles) reads smaller p-values than it should, which errs
    toward calling a window unsteady, never toward passing a drifting one."""
    if sum(math.isfinite(v) for v in values) < 3:
        return math.nan
    fit = _fit(values)
    if fit.slope == 0:
        return 1.0
    if fit.scatter <= 0:
        return 0.0
    return t_two_sided_p(fit.slope / math.sqrt(fit.scatter / fit.sxx), fit.n - 2)


def _trend(p: float, judged: int, s: dict[str, Any]) -> tuple[bool, str]:
    """Whether a drift's trend counts as the server's, and what the reason says of it: its slope's p-value is
    below steady_state.trend_alpha. With fewer judged cycles than steady_state.trend_test_min_cycles the scatter is
    too poorly known to test against, and the size alone decides; so it does with thresholds without the test
    (a workload rendered before it), and the reason says nothing of it."""
    alpha, min_cycles = s.get("trend_alpha"), s.get("trend_test_min_cycles")
    if alpha is None or min_cycles is None:
        return True, ""
    if judged < min_cycles:
        return True, f"; {judged} judged cycles < steady_state.trend_test_min_cycles {min_cycles}: size alone"
    if math.isnan(p):
        return True, ""
    return p < alpha, f"; trend p = {p:.2g} < steady_state.trend_alpha {alpha:g}"


def steady_state_reasons(m: dict[str, Any], t: dict[str, Any]) -> list[str]:
    """The steady-state check over whole cycles of the loop (`cycle_measures`; thresholds: steady_state and
    overload in params/validity.yaml).

    A drift is judged by its size and by whether it is a trend at all: a stationary loop's per-cycle figures
    scatter, and the line through them tilts by chance. On the H200 (2026-12-04, gpu-kv-vs-rr with seamless
    windows) each cycle's TTFT median of 16 requests flipped between the prefix-cache-hit mode (~70 ms) and the
    queued one (~350 ms): lines through 22 such cycles read -35 % to +78 % with |t| <= 1.3, and three of twelve
    flat windows were called unsteady or overloaded. So a drift past its limit fails only when its slope's
    p-value is below steady_state.trend_alpha (from steady_state.trend_test_min_cycles judged cycles; with fewer,
    by size alone). A clean ramp of 20 % has no scatter and fails at any number of cycles."""
    s = t["steady_state"]
    cycles, size = m.get("steady_cycles", 0), m.get("steady_cycle_size", 0)
    if cycles < s["min_cycles"]:
        return [
            f"cannot tell steady state: {cycles} whole cycle(s) of {size} requests "
            f"(< steady_state.min_cycles {s['min_cycles']})"
        ]
    judged = m.get("steady_cycles_judged") or cycles
    over = f"over {cycles} whole cycles of {size} requests"
    if judged < cycles:
        over = f"over cycles 2-{cycles - 1} of {cycles} of {size} requests; the loop's start and drain left out"
    tput, ttft = m["steady_throughput_change"], m["steady_ttft_change"]
    tput_real, tput_note = _trend(m.get("steady_throughput_trend_p", math.nan), judged, s)
    ttft_real, ttft_note = _trend(m.get("steady_ttft_trend_p", math.nan), judged, s)
    reasons = []
    growth = 1 + ttft  # nan stays nan, +inf (TTFT from zero) stays +inf
    tput_drifts = not math.isfinite(tput) or (abs(tput) > s["max_throughput_drift"] and tput_real)
    if not tput_drifts and not math.isnan(growth) and growth > t["overload"]["max_ttft_growth"] and ttft_real:
        reasons.append(
            f"overloaded: TTFT p50 grew {growth:.2f}x from the first cycle to the last (trend {over}"
            f"{ttft_note}) while output tok/s changed {tput:+.0%} (queue building up; "
            f"overload.max_ttft_growth {t['overload']['max_ttft_growth']:g})"
        )
    else:
        if tput_drifts:
            reasons.append(
                f"unsteady: output tok/s drifted {_pct(tput)} from the first cycle to the last (trend {over}"
                f"{tput_note}; steady_state.max_throughput_drift ±{s['max_throughput_drift']:.0%})"
            )
        # a cycle's median of few requests is noisy (c1: one request a cycle), of many it is not
        key = "max_ttft_drift" if size >= s["few_requests_per_cycle"] else "max_ttft_drift_few_requests"
        if math.isnan(ttft) or (abs(ttft) > s[key] and ttft_real):
            reasons.append(
                f"unsteady: TTFT p50 drifted {_pct(ttft)} from the first cycle to the last (trend {over}"
                f"{ttft_note}; steady_state.{key} ±{s[key]:.0%})"
            )
    excess = m.get("steady_first_cycle_ttft_excess", math.nan)
    if math.isfinite(excess) and excess > s["max_first_cycle_ttft_excess"]:
        reasons.append(
            f"unsteady: the first cycle raises the mean TTFT by {excess:+.0%} (a cold start inside the window; "
            f"steady_state.max_first_cycle_ttft_excess {s['max_first_cycle_ttft_excess']:.0%})"
        )
    return reasons


# ---------------------------------------------------------------- helpers


def _value(metrics: dict, name: str) -> float:
    v = (metrics.get(name) or {}).get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _pct(x: float) -> str:
    if math.isinf(x):
        return "+inf (from zero)" if x > 0 else "-inf"
    return f"{x:+.0%}" if math.isfinite(x) else "(unknown)"
