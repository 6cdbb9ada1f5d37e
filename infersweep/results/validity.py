"""Is a point's measurement one a reviewer would accept? `valid` and `validity_reasons` for every row.

Thresholds are data (params/validity.yaml, explained there and in the README). The checks of one point
read its AIPerf artifacts (the summary and the per-request records of profile_export.jsonl) and its
result.json; saturation compares a point with the next lower concurrency of the same run.

    measures = point_measures(point_dir, result)          # what the checks look at, also table columns
    valid, reasons = judge_point(measures, thresholds)    # one point
    df = mark_saturation(df, thresholds)                  # across points, after the table is built

A check that cannot be made (no records, say) makes the point invalid with the reason "cannot tell ...":
a number nobody can vouch for is not presented as valid.
"""

from __future__ import annotations

import copy
import math
import os
import re
import statistics
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.aiperf import LOG_FILE, RECORDS_FILE, iter_profiling_records
from infersweep.aiperf.server_export import SOURCE as FRONTEND_CACHE_SOURCE
from infersweep.aiperf.server_export import frontend_cache_read_pct
from infersweep.platform.select import LOCAL_WORKERS_ENV, PLATFORM_ENV

# Set by local mode for its steps (infersweep/local/gpu/fake_gpu.py FAKE_GPU_ENV); named here because results/
# imports no local mode (pyproject.toml's layer contracts).
FAKE_GPU_ENV = "INFERSWEEP_FAKE_GPU"

THRESHOLDS_FILE = "validity.yaml"
# The warning AIPerf's worker manager logs when a worker's CPU passes Environment.WORKER.HIGH_LOAD_CPU_USAGE
# (85 %): aiperf/workers/worker_group_state.py update_worker_status in 0.13.0, aiperf/workers/worker_manager.py
# in 0.10.0, 0.11.0 and 0.12.0, same text. AIPerf writes no CPU figure into its exports.
HIGH_CPU_RE = re.compile(r"CPU usage for (\S+) is (\d+)%\. AIPerf results may be inaccurate")

# result.json's cache_state values that say what the cache held at point start (steps.aiperf_point).
KNOWN_CACHE_STATES = ("reset", "fresh-prompts", "reused-prompts")

MEASURE_COLUMNS = [
    "validity_profile",
    "delivered_concurrency",
    "steady_throughput_change",
    "steady_ttft_change",
    "send_delay_p99_ms",
    "aiperf_high_cpu_warnings",
    "prompt_cache_read_pct",
    "seed",
    "seed_policy",
    "cache_state",
    "osl_requested",
    "osl_delivered",
]


# ---------------------------------------------------------------- thresholds


def load_thresholds(profile: str | None = None, path: Path | None = None) -> dict[str, Any]:
    """params/validity.yaml, with the overrides of `profile` merged in (default: the profile named like the
    platform the steps run on, when there is one: 'local' in local mode; else none). The result says which
    profile it is."""
    from infersweep.params_files import read_yaml_mapping
    from infersweep.paths import params_dir

    path = path or params_dir() / THRESHOLDS_FILE
    data = read_yaml_mapping(Path(path))
    profiles = data.pop("profiles", {}) or {}
    if profile is None and os.environ.get(PLATFORM_ENV) in profiles:
        profile = os.environ[PLATFORM_ENV]
        # Local mode with real engine workers measures a real server: the mocker's allowances (second-long
        # points, the toy tokenizer's identical prompts) do not apply (local/adapter.py step_env sets the
        # workers kind; local/fake_gpu.py the fake GPU count, whose engines are the mocker again).
        if (
            profile == "local"
            and os.environ.get(LOCAL_WORKERS_ENV) == "gpu"
            and not os.environ.get(FAKE_GPU_ENV)
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


# ---------------------------------------------------------------- what one point measured


def point_measures(
    point_dir: Path, result: dict[str, Any], summary_stats: dict[str, float] | None = None
) -> dict[str, Any]:
    """The quantities the checks judge, read from the point's records, log, summary and result.json."""
    point_dir = Path(point_dir)
    art = point_dir / "aiperf"
    stats = summary_stats or {}
    m: dict[str, Any] = {
        "concurrency": result.get("concurrency"),
        "duration_s": _num(result.get("duration_s")),
        "requests_ok": int(result.get("requests_ok") or 0),
        "error_rate": _num(result.get("error_rate")),
        "status": result.get("status"),
        "seed": result.get("seed"),
        "seed_policy": result.get("seed_policy"),
        "cache_state": result.get("cache_state") or "unknown",
        "prompt_cache_read_pct": stats.get("overall_usage_prompt_cache_read_pct__avg", math.nan),
        # the client's own figures, for the client-vs-server agreement check (AIPerf summary blocks)
        "client_ttft_avg_ms": stats.get("time_to_first_token__avg", math.nan),
        "client_itl_avg_ms": stats.get("inter_token_latency__avg", math.nan),
        "client_output_tokens": stats.get("total_output_tokens__avg", math.nan),
        "request_rate": _num(result.get("request_rate")),
    }
    m["prompt_cache_read_source"] = "AIPerf usage (cached_tokens)"
    if not math.isfinite(m["prompt_cache_read_pct"]):
        # No response carried cached_tokens: the frontend's own count (infersweep/aiperf/server_export.py)
        m["prompt_cache_read_pct"] = frontend_cache_read_pct(art)
        m["prompt_cache_read_source"] = FRONTEND_CACHE_SOURCE if math.isfinite(m["prompt_cache_read_pct"]) else "none"
    m.update(window_measures(art / RECORDS_FILE, m["concurrency"], m["request_rate"]))
    m["osl_requested"] = requested_osl(result.get("argv") or [])
    m["aiperf_high_cpu_warnings"] = high_cpu_warnings(art / LOG_FILE)
    return m


def requested_osl(argv: list[str]) -> float:
    """The output length AIPerf asked for (--osl in the point's command line, infersweep.aiperf)."""
    for i, a in enumerate(argv[:-1]):
        if a == "--osl":
            try:
                return float(argv[i + 1])
            except ValueError:
                return math.nan
    return math.nan


def window_measures(records_path: Path, concurrency: int | None, request_rate: float | None = None) -> dict[str, Any]:
    """Steady state, delivered load and send delay from the profiling records of profile_export.jsonl.

    Delivered load and send delay are read over the issuing window [first request start, last request start]:
    while AIPerf still issues requests a closed loop holds `concurrency` requests in flight; after the last
    start only the drain remains. Steady state is judged over whole cycles of the loop (`cycle_measures`).
    """
    out = {
        "osl_delivered": math.nan,
        "delivered_concurrency": math.nan,
        **_no_cycles(0),
        "send_delay_p99_ms": math.nan,
        "records": 0,
    }
    if not Path(records_path).exists():
        return out
    reqs = read_requests(records_path)
    out["records"] = len(reqs)
    lengths = [r[3] for r in reqs if math.isfinite(r[2]) and math.isfinite(r[3]) and r[3] > 0]
    out["osl_delivered"] = sum(lengths) / len(lengths) if lengths else math.nan
    if len(reqs) < 2:
        return out
    a = min(r[0] for r in reqs)
    b = max(r[0] for r in reqs)
    if b > a:
        busy = sum(max(0, min(e, b) - max(s, a)) for s, e, *_ in reqs)
        out["delivered_concurrency"] = busy / (b - a)
    delays = sorted(d for *_, d in reqs if math.isfinite(d))
    if delays:
        out["send_delay_p99_ms"] = delays[min(len(delays) - 1, math.ceil(0.99 * len(delays)) - 1)]
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
    reqs = []
    for rec in iter_profiling_records(records_path):
        meta = rec.get("metadata") or {}
        start, end = meta.get("request_start_ns"), meta.get("request_end_ns")
        if not isinstance(start, int) or not isinstance(end, int):
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
    return sorted(reqs)


def _no_cycles(size: int) -> dict[str, Any]:
    """cycle_measures' figures before any cycle is read (nothing to judge)."""
    return {
        "steady_throughput_change": math.nan,
        "steady_ttft_change": math.nan,
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
    about half of it. The first cycle's excess is how much it alone raises the point's mean TTFT (mean over
    all requests / mean without the first cycle - 1): a cold start (a whole batch's prefills at once, caches
    empty) that the warm-up did not absorb, which a line through few cycles only partly shows.
    """
    out = _no_cycles(size)
    cycle = _closed_loop_cycles(reqs, size) if closed_loop else [i // size for i in range(len(reqs))]
    groups: list[list[tuple]] = [[] for _ in range(max(cycle) + 1 if cycle else 0)]
    for r, k in zip(reqs, cycle, strict=True):
        groups[k].append(r)
    # whole cycles only: the slots that drifted ahead started a cycle the others had not reached
    groups = [g for g in groups if len(g) >= max(1, size // 2)]
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


def _closed_loop_cycles(reqs: list[tuple], size: int) -> list[int]:
    """The cycle of each request (sorted by start) of a closed loop of `size` slots: the first `size` are
    cycle 0; the i-th one after them follows the i-th request to end."""
    by_end = sorted(range(len(reqs)), key=lambda i: reqs[i][1])
    cycle = [0] * len(reqs)
    for i in range(size, len(reqs)):
        cycle[i] = cycle[by_end[i - size]] + 1
    return cycle


def _drift(values: list[float]) -> float:
    """Relative change of the least-squares line through `values` (one per cycle, in order) from the first
    cycle's leading edge (x = -0.5) to the last one's trailing edge; +inf when the line starts at or below
    zero and rises (a queue from nothing)."""
    pts = [(i, v) for i, v in enumerate(values) if math.isfinite(v)]
    if len(pts) < 2 or len(pts) < len(values) / 2:
        return math.nan
    mx = statistics.fmean(i for i, _ in pts)
    my = statistics.fmean(v for _, v in pts)
    var = sum((i - mx) ** 2 for i, _ in pts)
    slope = sum((i - mx) * (v - my) for i, v in pts) / var
    first = my + slope * (-0.5 - mx)
    last = my + slope * (len(values) - 0.5 - mx)
    if first <= 0:
        return math.inf if last > first else math.nan
    return last / first - 1


def high_cpu_warnings(log_path: Path) -> int:
    try:
        text = Path(log_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return len(HIGH_CPU_RE.findall(text))


# ---------------------------------------------------------------- verdicts


# The client's figure, the server's column, the tolerance key, and what a disagreement means.
AGREEMENT = (
    ("client_ttft_avg_ms", "server_ttft_avg_ms", "max_ttft_relative_error", "TTFT mean", "ms"),
    ("client_itl_avg_ms", "server_itl_avg_ms", "max_itl_relative_error", "ITL mean", "ms"),
    ("client_output_tokens", "server_output_tokens", "max_output_tokens_relative_error", "output tokens", ""),
)


def server_agreement_reasons(m: dict[str, Any], t: dict[str, Any]) -> list[str]:
    """The client's TTFT / ITL / output tokens against the server's own over the same window (issue 32 item 1:
    TTFT was measured at the first *visible* chunk, +45 % at c1, and nothing noticed). A figure the server did
    not give (no histograms scraped: no Prometheus, or an older run) is not judged, neither a pass nor a fail;
    a disagreement beyond the tolerance makes the point invalid, naming both figures."""
    tol = t.get("server_agreement") or {}
    out = []
    for client_key, server_key, tol_key, what, unit in AGREEMENT:
        limit = tol.get(tol_key)
        client, server = m.get(client_key), m.get(server_key)
        if limit is None or not isinstance(client, (int, float)) or not isinstance(server, (int, float)):
            continue
        if not (math.isfinite(client) and math.isfinite(server)) or server <= 0:
            continue
        if abs(client / server - 1) > limit:
            src = m.get("server_figures_source") or "server"
            out.append(
                f"client and server disagree: {what} {client:.1f}{unit} by the client, {server:.1f}{unit} by the "
                f"{src} ({client / server - 1:+.0%} > server_agreement.{tol_key} {limit:.0%})"
            )
    return out


def judge_point(m: dict[str, Any], t: dict[str, Any]) -> tuple[bool, list[str]]:
    """(valid, reasons) of one point; reasons name the check, the value and the threshold."""
    reasons: list[str] = []
    if m.get("status") not in ("ok", "partial"):
        return False, [f"not measured (status {m.get('status')})"]
    dur, n = m["duration_s"], m["requests_ok"]
    if not math.isfinite(dur) or dur < t["min_duration_s"]:
        reasons.append(f"too short: profiled {_fmt(dur)} s < min_duration_s {t['min_duration_s']:g}")
    if n < t["min_requests"]:
        reasons.append(f"too few requests: {n} successful < min_requests {t['min_requests']}")

    # Delivered output length: a point whose requests did not produce the tokens asked for measured another
    # workload, and its ITL is divided by the wrong count. Seen on the H200 with random weights: a client
    # tokenizer counted 52 of 256 output tokens and ITL came out 5x too high (docs/measured-h200.md).
    want, got = m.get("osl_requested", math.nan), m.get("osl_delivered", math.nan)
    tol = (t.get("output_length") or {}).get("max_relative_error")
    if tol is not None and math.isfinite(want) and math.isfinite(got) and want > 0 and abs(got / want - 1) > tol:
        reasons.append(
            f"output length off: {got:.0f} tokens delivered on average, {want:.0f} requested "
            f"(output_length.max_relative_error {tol:.0%}); count tokens on the server "
            "(--use-server-token-count) or check that the engine does not stop early"
        )

    reasons += steady_state_reasons(m, t)
    reasons += server_agreement_reasons(m, t)

    conc, got = m.get("concurrency"), m["delivered_concurrency"]
    frac = t["delivered_load"]["min_concurrency_fraction"]
    rate = m.get("request_rate")
    # An open-loop point (a request rate) holds as many requests in flight as its arrivals and service time
    # make: its concurrency is only the cap (AIPerf 0.13 aiperf/config/flags/cli_config.py
    # CLIConfig.request_rate: "Can be combined with `--concurrency` to control the number of concurrent
    # requests"), so the closed loop's delivered-load check does not apply to it.
    if conc and not (rate is not None and math.isfinite(rate) and rate > 0):
        if not math.isfinite(got):
            reasons.append("cannot tell the delivered load: no per-request records")
        elif got < frac * conc:
            reasons.append(f"delivered load {got:.2f} requests in flight < {frac:g} x configured concurrency {conc}")

    c = t["client"]
    delay = m["send_delay_p99_ms"]
    if math.isfinite(delay) and delay > c["max_send_delay_ms_p99"]:
        reasons.append(
            f"client-bound: AIPerf sent requests {delay:.0f} ms (p99) after issuing them "
            f"(> max_send_delay_ms_p99 {c['max_send_delay_ms_p99']:g})"
        )
    if c.get("high_cpu_warning_invalidates") and m.get("aiperf_high_cpu_warnings"):
        reasons.append(
            f"client-bound: AIPerf logged {m['aiperf_high_cpu_warnings']} high-CPU warning(s) "
            '("AIPerf results may be inaccurate")'
        )

    err = m["error_rate"]
    if math.isfinite(err) and err > t["errors"]["max_error_rate"]:
        reasons.append(f"errors: {err:.1%} of requests failed > max_error_rate {t['errors']['max_error_rate']:g}")

    cache = t["cache"]
    state = m.get("cache_state") or "unknown"
    if cache.get("require_known_state") and state not in KNOWN_CACHE_STATES:
        reasons.append(f"prefix-cache state at point start {state}: neither reset nor a seed of its own")
    # An experiment treatment run on the caches the previous treatment left (experiment run without a reset
    # between treatments: infersweep.experiment records the run's context kv_cache_state "warm after <treatment>")
    # starts from a state nobody chose: what it holds depends on the order, whatever its own seed policy says.
    inherited = str(m.get("kv_cache_state") or "")
    if cache.get("require_known_state") and inherited.startswith("warm after"):
        reasons.append(
            f"prefix-cache state at point start inherited from another treatment (kv_cache_state {inherited!r}): "
            "not a known state; reset the caches between treatments"
        )
    read = m["prompt_cache_read_pct"]
    if state != "reused-prompts" and math.isfinite(read) and read > cache["max_unintended_cache_read_pct"]:
        reasons.append(
            f"prefix cache served {read:.1f}% of prompt tokens though the workload reuses no prompts "
            f"(max_unintended_cache_read_pct {cache['max_unintended_cache_read_pct']:g}; read from "
            f"{m.get('prompt_cache_read_source', 'AIPerf usage')})"
        )
    return not reasons, reasons


def steady_state_reasons(m: dict[str, Any], t: dict[str, Any]) -> list[str]:
    """The steady-state check over whole cycles of the loop (`cycle_measures`; thresholds: steady_state and
    overload in params/validity.yaml)."""
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
    reasons = []
    growth = 1 + ttft  # nan stays nan, +inf (TTFT from zero) stays +inf
    tput_flat = math.isfinite(tput) and abs(tput) <= s["max_throughput_drift"]
    if tput_flat and not math.isnan(growth) and growth > t["overload"]["max_ttft_growth"]:
        reasons.append(
            f"overloaded: TTFT p50 grew {growth:.2f}x from the first cycle to the last (trend {over}) while "
            f"output tok/s changed {tput:+.0%} (queue building up; overload.max_ttft_growth "
            f"{t['overload']['max_ttft_growth']:g})"
        )
    else:
        if not math.isfinite(tput) or abs(tput) > s["max_throughput_drift"]:
            reasons.append(
                f"unsteady: output tok/s drifted {_pct(tput)} from the first cycle to the last (trend {over}; "
                f"steady_state.max_throughput_drift ±{s['max_throughput_drift']:.0%})"
            )
        # a cycle's median of few requests is noisy (c1: one request a cycle), of many it is not
        key = "max_ttft_drift" if size >= s["few_requests_per_cycle"] else "max_ttft_drift_few_requests"
        if math.isnan(ttft) or abs(ttft) > s[key]:
            reasons.append(
                f"unsteady: TTFT p50 drifted {_pct(ttft)} from the first cycle to the last (trend {over}; "
                f"steady_state.{key} ±{s[key]:.0%})"
            )
    excess = m.get("steady_first_cycle_ttft_excess", math.nan)
    if math.isfinite(excess) and excess > s["max_first_cycle_ttft_excess"]:
        reasons.append(
            f"unsteady: the first cycle raises the mean TTFT by {excess:+.0%} (a cold start inside the window; "
            f"steady_state.max_first_cycle_ttft_excess {s['max_first_cycle_ttft_excess']:.0%})"
        )
    return reasons


def mark_saturation(df: pd.DataFrame, t: dict[str, Any]) -> pd.DataFrame:
    """Mark points past the knee: vs the next lower measured concurrency (repetitions reduced to the median),
    throughput barely grows while TTFT p50 does. The rows stay, marked invalid with the reason."""
    if df.empty or "output_throughput_tok_s" not in df or "ttft_p50_ms" not in df:
        return df
    s = t["saturation"]
    ok = df[df["status"].isin(("ok", "partial"))].dropna(subset=["concurrency"])
    med = ok.groupby("concurrency")[["output_throughput_tok_s", "ttft_p50_ms"]].median().sort_index()
    prev = None
    for label, row in med.iterrows():
        c = float(label)  # type: ignore[arg-type]  # the index is the concurrency
        if prev is not None:
            pc, pr = prev
            load_growth = c / pc - 1
            gain = (
                row["output_throughput_tok_s"] / pr["output_throughput_tok_s"] - 1
                if pr["output_throughput_tok_s"] > 0
                else math.nan
            )
            ttft_growth = row["ttft_p50_ms"] / pr["ttft_p50_ms"] if pr["ttft_p50_ms"] > 0 else math.nan
            if (
                math.isfinite(gain)
                and math.isfinite(ttft_growth)
                and gain < s["min_throughput_gain"] * load_growth
                and ttft_growth > s["min_ttft_growth"]
            ):
                why = (
                    f"saturated: from concurrency {int(pc)} to {int(c)} output tok/s changed {gain:+.0%} while "
                    f"TTFT p50 grew {ttft_growth:.2f}x (past the knee)"
                )
                idx = df.index[df["concurrency"] == c]
                df.loc[idx, "valid"] = False
                df.loc[idx, "validity_reasons"] = df.loc[idx, "validity_reasons"].map(
                    lambda r, why=why: why if not r else f"{r}; {why}"
                )
        prev = (c, row)
    return df


def split_valid(df: pd.DataFrame, include_invalid: bool = False) -> tuple[pd.DataFrame, list[str]]:
    """(the rows to use, one line per row left out): the rule of infersweep.results.evidence.counted."""
    from infersweep.results.evidence import counted

    return counted(df, include_invalid)


# ---------------------------------------------------------------- helpers


def _value(metrics: dict, name: str) -> float:
    v = (metrics.get(name) or {}).get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else math.nan


def _fmt(x: float) -> str:
    return f"{x:.1f}" if math.isfinite(x) else "unknown"


def _pct(x: float) -> str:
    if math.isinf(x):
        return "+inf (from zero)" if x > 0 else "-inf"
    return f"{x:+.0%}" if math.isfinite(x) else "(unknown)"
