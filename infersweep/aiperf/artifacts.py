"""Files out: what AIPerf leaves behind. The artifact file names (SUMMARY_FILE, RECORDS_FILE, LOG_FILE, ...),
`read_point` (one artifact dir -> a small, honest result dict) and `iter_profiling_records`, across the
version differences of AIPerf 0.10-0.13. (The flags in are flags.py.)

Standard library only: this file (with infersweep/__init__.py) is copied into the AIPerf image
(images/aiperf.Dockerfile), which has no infersweep install. tests/aiperf/test_aiperf_contract.py proves it.

Why read_point exists: AIPerf's exit code says little. It exits 0 when half the requests got HTTP 500,
when --failed-request-threshold cancelled the run, and when SIGINT stopped it early; it exits 1
with no summary at all when nothing succeeded. The truth is in profile_export_aiperf.json:
`is_complete`, `was_cancelled`, `request_error_rate` (a percentage) and `error_summary`, with
`request_count` = successful requests and `completed_request_count` = successful + errored.

Versions (each one's JsonExportData in aiperf/common/models/export_models.py, read from the installed
wheels): 0.13.0 writes schema 1.4 with `is_complete`, `completed_request_count`, `request_error_rate` and
phases with a `kind`; 0.10.0 and 0.11.0 write schema 1.3 and 0.12.0 schema 1.4 without a top-level
`is_complete` (0.12.0's only `is_complete` is a timeslice's), so completeness is inferred (_infer_complete). Real runs of each: tests/fixtures/aiperf/.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

from infersweep.aiperf.phase_overlap import (
    THROUGHPUT_OVER_PHASE,
    THROUGHPUT_OVER_REQUESTS,
    seamless_profiling,
    throughputs_over_requests,
)

# Inside the artifact dir (OUT/aiperf/).
SUMMARY_FILE = "profile_export_aiperf.json"
RECORDS_FILE = "profile_export.jsonl"
MANIFEST_FILE = "phase_manifest.json"
LOG_FILE = "logs/aiperf.log"

# AIPerf summary metric -> (our short name, unit suffix): read_point's `metrics` are named
# `<name>_<stat>_<unit>` (ttft_p50_ms, osl_avg_tok, output_throughput_p50_tok_s_per_user), the canonical names
# of infersweep/metrics.py, which adds what each one means. Only these distributions are copied; every other
# statistic AIPerf wrote goes to the raw table (infersweep.results.table.raw_table).
DISTRIBUTIONS = {
    "time_to_first_token": ("ttft", "ms"),
    "time_to_second_token": ("ttst", "ms"),
    "inter_token_latency": ("itl", "ms"),
    "request_latency": ("request_latency", "ms"),
    "output_sequence_length": ("osl", "tok"),
    "input_sequence_length": ("isl", "tok"),
    "output_token_throughput_per_user": ("output_throughput", "tok_s_per_user"),
}
STATS = ("avg", "p50", "p90", "p95", "p99", "min", "max", "std")

# Single numbers (one value per point, AIPerf's `avg`): our name -> (AIPerf metric, stat).
SCALARS = {
    "output_throughput_tok_s": ("output_token_throughput", "avg"),
    "request_throughput_req_s": ("request_throughput", "avg"),
    "input_throughput_tok_s": ("input_token_throughput", "avg"),
    "total_throughput_tok_s": ("total_token_throughput", "avg"),
}


def metric_name(name: str, stat: str, unit: str) -> str:
    """The canonical name of one statistic of a distribution: `<name>_<stat>_<unit>`."""
    return f"{name}_{stat}_{unit}"


STATUSES = ("ok", "partial", "cancelled", "failed")  # every value `status` can take, best first

try:  # orjson comes with AIPerf (its image, where points are read): ~3x faster than json on big exports
    from orjson import loads as _fast_loads

    _FAST_JSON = "orjson"
except ImportError:  # the step image: the standard library is enough, only slower
    _fast_loads = json.loads
    _FAST_JSON = "stdlib json"
_META_PREFIX = b'{"metadata":'
_DECODER = json.JSONDecoder()


def iter_profiling_records(jsonl_path: str | Path) -> Iterator[dict]:
    """Yield the profiling-phase records of profile_export.jsonl.

    Warmup requests are in the same file and must not count. A line that is not valid JSON
    is skipped: a killed AIPerf can leave a torn last line, and the records before it are
    still real measurements.
    """
    return (record for phase, record in iter_records(jsonl_path) if phase == "profiling")


def iter_records(jsonl_path: str | Path) -> Iterator[tuple[Any, dict]]:
    """Yield (phase, record) for every record of profile_export.jsonl, warm-up and profiling alike (the phase as
    AIPerf 0.13 writes it, `benchmark_phase`, or `phase_kind` before it); torn lines are skipped, as in
    iter_profiling_records."""
    with open(jsonl_path, "rb") as f:
        for line in f:
            try:
                record = _loads(line)
            except ValueError:
                continue
            if not isinstance(record, dict):
                continue
            meta = record.get("metadata") or {}
            yield meta.get("benchmark_phase", meta.get("phase_kind")), record


class RecordCounter:
    """Counts the profiling records of a profile_export.jsonl that AIPerf is still writing: each call reads
    only what was appended since the last one, and a last line without its newline waits for the next.

    AIPerf 0.13 appends records while it runs: post_processors/record_export_jsonl_writer.py writes through
    common/mixins/buffered_jsonl_writer_mixin.py, which flushes every EXPORT_BATCH_SIZE (100) records and at
    least every METRICS EXPORT_FLUSH_INTERVAL (1 s, common/environment.py). So the count is at most about a
    second behind the requests AIPerf has finished; warmup records do not count, as in iter_profiling_records."""

    def __init__(self, jsonl_path: str | Path) -> None:
        self.path = Path(jsonl_path)
        self.offset = 0
        self.done = 0
        self.first_start_ns: int | None = None  # the earliest profiling request's start (time.time_ns clock)
        self._partial = b""

    def count(self) -> int:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except OSError:
            return self.done  # not written yet
        self.offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            meta = None
            if line.startswith(_META_PREFIX):
                meta, _ = _leading_metadata(line + b"\n")
            if not isinstance(meta, dict):
                try:
                    record = _loads(line)
                except ValueError:
                    continue
                meta = record.get("metadata") if isinstance(record, dict) else None
            if isinstance(meta, dict) and meta.get("benchmark_phase", meta.get("phase_kind")) == "profiling":
                self.done += 1
                start = meta.get("request_start_ns")
                if isinstance(start, int) and (self.first_start_ns is None or start < self.first_start_ns):
                    self.first_start_ns = start
        return self.done


def _loads(raw: bytes) -> Any:
    try:
        return _fast_loads(raw)
    except ValueError:  # invalid UTF-8 in a string: decode with replacement, as a text-mode read would
        return json.loads(raw.decode("utf-8", errors="replace"))


def _profiling_meta(jsonl_path: str | Path) -> Iterator[tuple[dict, Any]]:
    """(metadata, error) of every profiling record: what read_point needs, without the metrics.

    AIPerf writes each record as {"metadata":{...},"metrics":{...}[,"error":{...}]}, and the metrics are
    most of its bytes (a 1M-request export is ~2.7 GB). Decoding only the metadata object, and the whole
    line only when it holds an "error" key, is ~4x faster than parsing every metric. A line without its
    newline (only the last can be torn: one writer appends) or of another shape is parsed whole, as
    iter_profiling_records does.
    """
    with open(jsonl_path, "rb") as f:
        for line in f:
            if line.endswith(b"\n") and line.startswith(_META_PREFIX):
                meta, end = _leading_metadata(line)
                if isinstance(meta, dict) and line.find(b'"error":', end) < 0:
                    if meta.get("benchmark_phase", meta.get("phase_kind")) == "profiling":
                        yield meta, None
                    continue
            try:
                record = _loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                meta = record.get("metadata") or {}
                if meta.get("benchmark_phase", meta.get("phase_kind")) == "profiling":
                    yield meta, record.get("error")


def _leading_metadata(line: bytes) -> tuple[Any, int]:
    """The metadata object at the start of a record line, and the byte offset where it ends."""
    start = len(_META_PREFIX)
    if _FAST_JSON == "orjson":
        # Cut at the first `},"metrics":`: a cut anywhere but the metadata's own end leaves unbalanced
        # braces or an open string, which orjson refuses, and the line goes the slower way below.
        cut = line.find(b'},"metrics":', start)
        if cut > 0:
            try:
                return _fast_loads(line[start : cut + 1]), cut
            except ValueError:
                pass
    text = line.decode("utf-8", errors="replace")
    try:
        meta, end = _DECODER.raw_decode(text, start)
    except ValueError:
        return None, 0
    return meta, len(text[:end].encode("utf-8", errors="replace"))


def read_point(
    artifact_dir: str | Path,
    *,
    max_error_rate: float = 0.0,
    exit_code: int | None = None,
    console_log: str | Path | None = None,
) -> dict:
    """Classify one AIPerf run as ok / partial / cancelled / failed and pull its headline numbers.

    `console_log` is AIPerf's own stdout/stderr, searched for a cause when the run left no
    logs/aiperf.log ERROR line (a bad CLI flag, say, only shows up there).
    Never raises on a damaged dir: that comes back as status "failed" with the reason.
    """
    artifact_dir = Path(artifact_dir)
    result = _blank_result()
    try:
        _fill(result, artifact_dir, max_error_rate, exit_code, console_log)
    except Exception as exc:  # a damaged dir must give a result, not a traceback
        result.update(status="failed", reason=f"could not read AIPerf artifacts in {artifact_dir}: {exc!r}")
    return result


def _blank_result() -> dict:
    return {
        "status": "failed",
        "reason": "",
        "requests_ok": 0,
        "requests_failed": 0,
        "error_rate": None,
        "was_cancelled": None,
        "is_complete": False,
        "is_complete_source": None,
        "errors": [],
        "duration_s": None,
        "start_time": None,
        "end_time": None,
        "profiling_start_ns": None,
        "profiling_end_ns": None,
        "throughput_window": None,
        "aiperf_version": None,
        "metrics": {},
    }


def _fill(result: dict, artifact_dir: Path, max_error_rate: float, exit_code: int | None, console_log) -> None:
    summary_path = artifact_dir / SUMMARY_FILE
    if not summary_path.exists():
        _fill_without_summary(result, artifact_dir, exit_code, console_log)
        return
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        result["reason"] = f"AIPerf summary {SUMMARY_FILE} is unreadable ({exc})"
        return
    if not isinstance(summary, dict):
        result["reason"] = f"AIPerf summary {SUMMARY_FILE} is not a JSON object"
        return

    ok = _int(_stat(summary, "request_count"))
    completed = _int(_stat(summary, "completed_request_count"))
    errors = _errors_from_summary(summary.get("error_summary"))
    failed: int
    if completed is not None and ok is not None:
        failed = max(completed - ok, 0)
    elif (counted := _int(_stat(summary, "error_request_count"))) is not None:
        failed = counted
    else:
        failed = sum(e["count"] for e in errors)
    ok = ok or 0
    rate_pct = _num(_stat(summary, "request_error_rate"))
    if rate_pct is not None:
        error_rate = rate_pct / 100.0
    else:
        error_rate = failed / (ok + failed) if ok + failed else 0.0

    result.update(
        requests_ok=ok,
        requests_failed=failed,
        error_rate=error_rate,
        was_cancelled=bool(summary.get("was_cancelled", False)),
        is_complete=bool(summary.get("is_complete", False)),
        is_complete_source="aiperf",
        errors=errors,
        duration_s=_num(_stat(summary, "benchmark_duration")),
        start_time=summary.get("start_time"),
        end_time=summary.get("end_time"),
        aiperf_version=summary.get("aiperf_version"),
        metrics=_metrics(summary),
    )
    if "is_complete" not in summary:
        result["is_complete"], result["is_complete_source"] = _infer_complete(result, summary)
    seamless = seamless_profiling(summary)
    if seamless:
        throughputs_over_requests(result["metrics"], summary)
    result["throughput_window"] = THROUGHPUT_OVER_REQUESTS if seamless else THROUGHPUT_OVER_PHASE
    result["profiling_start_ns"], result["profiling_end_ns"] = _profiling_window(artifact_dir, from_records=seamless)
    result["status"], result["reason"] = _classify(result, summary, artifact_dir, max_error_rate, exit_code)


def _infer_complete(r: dict, summary: dict) -> tuple[bool, str]:
    """Completeness of a summary without `is_complete` (AIPerf before 0.13: the field is absent from
    JsonExportData in aiperf/common/models/export_models.py of 0.10.0, 0.11.0 and 0.12.0).

    Complete when not cancelled and the profiling phase got what it was asked for: its request count
    (successful + failed), or its duration. Without a stated target, not cancelled is all there is.
    """
    version = summary.get("aiperf_version") or "before 0.13"
    if r["was_cancelled"]:
        return False, f"inferred (AIPerf {version} writes no is_complete): cancelled"
    requests, duration = _profiling_target(summary)
    done = r["requests_ok"] + r["requests_failed"]
    if requests:
        return done >= requests, f"inferred (AIPerf {version} writes no is_complete): {done} of {requests} requests"
    if duration:
        ran = r["duration_s"] or 0.0
        return ran >= duration, f"inferred (AIPerf {version} writes no is_complete): {ran:.1f} of {duration:g} s"
    return True, f"inferred (AIPerf {version} writes no is_complete): not cancelled, no target stated"


def _classify(
    r: dict, summary: dict, artifact_dir: Path, max_error_rate: float, exit_code: int | None
) -> tuple[str, str]:
    ok, failed = r["requests_ok"], r["requests_failed"]
    done = ok + failed
    if r["was_cancelled"]:
        # Partial results are kept: the metrics above stay in the dict.
        requests, duration = _profiling_target(summary)
        if requests:
            reason = f"AIPerf was cancelled after {done} of {requests} requests"
        elif duration and r["duration_s"] is not None:
            reason = f"AIPerf was cancelled after {done} requests, {r['duration_s']:.1f} s into a {duration:g} s run"
        else:
            reason = f"AIPerf was cancelled after {done} requests"
        if failed:
            # No counts here: a cancelled run's error_summary may count records past the cut.
            reason += f" ({failed} failed: {_describe_errors(r['errors'], counts=False)})"
        cause = _cancel_cause(artifact_dir / LOG_FILE)
        if cause:
            reason += f": {cause}"
        return "cancelled", reason
    if ok == 0:
        if failed:
            return "failed", f"all {failed} requests failed ({_describe_errors(r['errors'])})"
        return "failed", "AIPerf finished without a single successful request"
    if r["error_rate"] > max_error_rate:
        return "partial", (
            f"{failed} of {done} requests failed ({_describe_errors(r['errors'])}), "
            f"above the allowed error rate {max_error_rate:g}"
        )
    if not r["is_complete"]:
        if r.get("is_complete_source", "aiperf") != "aiperf":
            return "partial", f"AIPerf's run looks incomplete: {r['is_complete_source']}"
        return "partial", f"AIPerf marked the run incomplete: {summary.get('incomplete_reason') or 'no reason given'}"
    if exit_code not in (None, 0):
        # The summary says complete but the process did not: trust neither fully.
        return "partial", f"AIPerf exited with code {exit_code} although its summary says the run completed"
    if failed:
        return (
            "ok",
            f"{ok} of {done} requests succeeded ({failed} failed, within the allowed error rate {max_error_rate:g})",
        )
    return "ok", f"all {ok} requests succeeded"


INTERRUPTS = ("SIGINT", "SIGTERM", "SIGHUP")  # a user or a supervisor stopping the run (not SIGKILL: OOM too)


def interrupting_signal(exit_code: int | None) -> str | None:
    """The signal an exit code says stopped the process, when it is an interruption: -N (killed by it, as
    subprocess reports) or 128+N (the shell's convention, which a Python CLI exiting on KeyboardInterrupt
    follows: 130)."""
    import signal

    if exit_code is None or exit_code == 0:
        return None
    number = -exit_code if exit_code < 0 else exit_code - 128
    try:
        name = signal.Signals(number).name
    except ValueError:
        return None
    return name if name in INTERRUPTS else None


def _fill_without_summary(result: dict, artifact_dir: Path, exit_code: int | None, console_log) -> None:
    """No summary JSON: the run failed, or was interrupted before it wrote one. Say why (the signal, else the
    logs' last error), and count what the records show."""
    where = f" (exit code {exit_code})" if exit_code is not None else ""
    signal_name = interrupting_signal(exit_code)
    if signal_name is not None:
        # A terminal's Ctrl-C reaches AIPerf itself (the foreground process group), which exits 130 before the
        # point step is told anything: the reason is the interruption, not AIPerf's last log line (issue 38).
        result["status"] = "cancelled"
        result["reason"] = f"interrupted by {signal_name}{where} before AIPerf wrote a summary"
    else:
        cause = _last_error_line(artifact_dir / LOG_FILE)
        if not cause and console_log is not None:
            cause = _last_console_line(Path(console_log))
        result["reason"] = f"AIPerf wrote no summary{where}: {cause}" if cause else f"AIPerf wrote no summary{where}"

    records = artifact_dir / RECORDS_FILE
    if not records.exists():
        return
    ok = failed = 0
    groups: dict[tuple, int] = {}
    starts: list[int] = []
    ends: list[int] = []
    for meta, err in _profiling_meta(records):
        _collect_window(meta, starts, ends)
        if err:
            failed += 1
            key = (err.get("code"), err.get("type"), err.get("message"))
            groups[key] = groups.get(key, 0) + 1
        else:
            ok += 1
    result.update(
        requests_ok=ok,
        requests_failed=failed,
        error_rate=failed / (ok + failed) if ok + failed else None,
        errors=[{"code": c, "type": t, "message": m, "count": n} for (c, t, m), n in groups.items()],
        profiling_start_ns=min(starts) if starts else None,
        profiling_end_ns=max(ends) if ends else None,
    )


def _metrics(summary: dict) -> dict:
    out: dict[str, float] = {}
    for name, (short, unit) in DISTRIBUTIONS.items():
        block = summary.get(name)
        if isinstance(block, dict):
            for stat in STATS:
                value = _num(block.get(stat))
                if value is not None:
                    out[metric_name(short, stat, unit)] = value
    for ours, (name, stat) in SCALARS.items():
        value = _num(_stat(summary, name, stat))
        if value is not None:
            out[ours] = value
    return out


def _profiling_window(artifact_dir: Path, *, from_records: bool = False) -> tuple[int | None, int | None]:
    """The profiling phase's [start, end] in ns: phase_manifest.json when present, else the records. A seamless
    phase (`from_records`) starts before its first request (infersweep/aiperf/phase_overlap.py): the records'."""
    if not from_records:
        try:
            manifest = json.loads((artifact_dir / MANIFEST_FILE).read_text(encoding="utf-8"))
            phases = [p for p in manifest.get("phases", []) if p.get("phase_kind") == "profiling"]
            starts = [p["start_ns"] for p in phases if isinstance(p.get("start_ns"), int)]
            ends = [p["end_ns"] for p in phases if isinstance(p.get("end_ns"), int)]
            if starts and ends:
                return min(starts), max(ends)
        except (OSError, ValueError, AttributeError, TypeError):
            pass  # no (or damaged) manifest: AIPerf writes one only with several phases
    starts, ends = [], []
    records = artifact_dir / RECORDS_FILE
    if records.exists():
        for meta, _ in _profiling_meta(records):
            _collect_window(meta, starts, ends)
    return (min(starts) if starts else None, max(ends) if ends else None)


def _collect_window(meta: dict, starts: list, ends: list) -> None:
    if isinstance(meta.get("request_start_ns"), int):
        starts.append(meta["request_start_ns"])
    if isinstance(meta.get("request_end_ns"), int):
        ends.append(meta["request_end_ns"])


def _errors_from_summary(raw: Any) -> list[dict]:
    errors = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        details = item.get("error_details") or {}
        errors.append(
            {
                "code": details.get("code"),
                "type": details.get("type"),
                "message": details.get("message"),
                "count": _int(item.get("count")) or 0,
            }
        )
    return errors


def _describe_errors(errors: list[dict], counts: bool = True) -> str:
    """'HTTP 500 Internal Server Error x16', or the error type and a short message when there is no code."""
    if not errors:
        return "no error details"
    parts = []
    for e in sorted(errors, key=lambda e: -e["count"])[:3]:
        if e.get("code") is not None:
            label = f"HTTP {e['code']} {e.get('type') or ''}".rstrip()
        else:
            label = f"{e.get('type') or 'error'}: {_short(str(e.get('message') or ''), 80)}"
        parts.append(f"{label} x{e['count']}" if counts else label)
    if len(errors) > 3:
        parts.append(f"and {len(errors) - 3} more kinds")
    return ", ".join(parts)


def _profiling_target(summary: dict) -> tuple[int | None, float | None]:
    """What the profiling phase was asked for: (request count, duration in s), either may be None."""
    phases = ((summary.get("input_config") or {}).get("phases")) or []
    for phase in phases if isinstance(phases, list) else []:
        # 0.13 writes "kind"; 0.10-0.12 only "name" (aiperf/common/config of each version's input_config dump).
        if isinstance(phase, dict) and (phase.get("kind") or phase.get("name")) == "profiling":
            return _int(phase.get("requests")), _num(phase.get("duration"))
    return None, None


def _cancel_cause(log_path: Path) -> str | None:
    """Why AIPerf cancelled, from its log: the failed-request threshold, or a signal."""
    cause = None
    for line in _read_lines(log_path):
        if "--failed-request-threshold exceeded" in line:
            cause = _log_message(line).split(". Requesting")[0]
        elif signal := re.search(r"Signal (\d+) received", line):
            number = int(signal.group(1))
            cause = {2: "SIGINT received", 15: "SIGTERM received"}.get(number, f"signal {number} received")
    return cause


def _last_error_line(log_path: Path) -> str | None:
    errors = [line for line in _read_lines(log_path) if " - ERROR - " in line]
    return _short(_log_message(errors[-1]), 300) if errors else None


def _last_console_line(path: Path) -> str | None:
    """The cause in AIPerf's console output: the last exception line, else the first line of the
    last boxed message (CLI errors and load errors come boxed), else the last line."""
    lines = [line.strip() for line in _read_lines(path)]
    for line in reversed(lines):
        if re.match(r"^[\w.]*(Error|Exception)\b[^ ]*: ", line):
            return _short(line, 300)
    box_tops = [i for i, line in enumerate(lines) if line.startswith("╭")]
    candidates = lines[box_tops[-1] + 1 :] if box_tops else []
    for line in candidates + list(reversed(lines)):
        text = line.strip("│╭╮╰╯─┃┏┓┗┛━ ")
        if text and text.lower() != "error":
            return _short(_log_message(text), 300)
    return None


def _log_message(line: str) -> str:
    """'2026-11-29 16:45:52.231 - system_controller - ERROR - msg' -> 'msg'."""
    match = re.match(r"^\S+ \S+ - \S+ - [A-Z]+ - (.*)$", line.strip())
    return match.group(1) if match else line.strip()


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []


def _stat(summary: dict, name: str, stat: str = "avg") -> Any:
    block = summary.get(name)
    return block.get(stat) if isinstance(block, dict) else None


def _num(value: Any) -> float | None:
    """A finite float, else None (NaN/inf are not valid JSON and mean 'no data' here)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _int(value: Any) -> int | None:
    number = _num(value)
    return int(round(number)) if number is not None else None


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
