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

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd

from infersweep.aiperf import LOG_FILE, RECORDS_FILE
from infersweep.aiperf.server_export import SOURCE as FRONTEND_CACHE_SOURCE
from infersweep.aiperf.server_export import frontend_cache_read_pct

# The steadiness rule lives beside the point step, which judges every window with it (standard library only:
# the AIPerf image carries it); the final window is judged here with the same rule.
from infersweep.aiperf.steadiness import steady_state_reasons, window_measures
from infersweep.results.prompt_repeats import repeats_line
from infersweep.validity_thresholds import load_thresholds  # noqa: F401  (results/ reads them from here)

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
    "steady_throughput_trend_p",
    "steady_ttft_trend_p",
    "send_delay_p99_ms",
    "aiperf_high_cpu_warnings",
    "prompt_cache_read_pct",
    "seed",
    "seed_policy",
    "cache_state",
    "osl_requested",
    "osl_delivered",
]


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
    # The server counts every token generated inside the window, the warm-up's last requests' tails too (a
    # seamless window opens while they run): the client's side of the comparison holds them as well.
    m["client_output_tokens"] += m["client_warmup_tail_tokens"]
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
            tails = m.get("client_warmup_tail_tokens") if client_key == "client_output_tokens" else None
            held = f" (of them {tails:.0f} from warm-up requests inside the window)" if tails else ""
            out.append(
                f"client and server disagree: {what} {client:.1f}{unit} by the client{held}, {server:.1f}{unit} by "
                f"the {src} ({client / server - 1:+.0%} > server_agreement.{tol_key} {limit:.0%})"
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
        # Long, and a share of the cycle it delays that the point would notice (params/validity.yaml client); a
        # window without a known latency is judged by the length alone
        why = (
            f"client-bound: AIPerf sent requests {delay:.0f} ms (p99) after issuing them "
            f"(> max_send_delay_ms_p99 {c['max_send_delay_ms_p99']:g})"
        )
        cycle = m.get("request_latency_mean_ms", math.nan)
        share_limit = c.get("max_send_delay_share_p99")
        if share_limit is None or not (isinstance(cycle, (int, float)) and math.isfinite(cycle) and cycle > 0):
            reasons.append(why)
        elif delay / cycle > share_limit:
            reasons.append(
                f"{why}, {delay / cycle:.1%} of a request's mean latency {cycle:.0f} ms "
                f"(> max_send_delay_share_p99 {share_limit:.0%})"
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
            + (f": {repeats_line(m['point'], m['prompt_repeats'])}" if m.get("prompt_repeats") else "")
        )
    return not reasons, reasons


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


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) else math.nan


def _fmt(x: float) -> str:
    return f"{x:.1f}" if math.isfinite(x) else "unknown"
