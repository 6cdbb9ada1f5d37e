"""Run one AIPerf benchmark point and leave an honest OUT/result.json behind (steps/aiperf_point.py's work).

Runs inside the AIPerf image: standard library only (plus infersweep/aiperf/artifacts.py and
infersweep/step_interface.py, also stdlib only);
images/aiperf.Dockerfile copies this file, tests/aiperf/test_aiperf_contract.py and tests/steps/test_step_declarations.py
run it with only the image's files.

Why beside, not inside, the AIPerf contract: the contract says what AIPerf takes and leaves behind (read from
AIPerf's source, changes with AIPerf's version); this module is our own policy around one run of it (how a
point is stopped, how a retry treats an earlier attempt, what result.json records), which changes with Argo
and Kubernetes, not with AIPerf.

What it guarantees:
- AIPerf gets an argv list, never a shell string: recipe values cannot reach a shell.
- Argo stops a step with SIGTERM, which kills AIPerf without a summary. We catch SIGTERM and
  send AIPerf SIGINT instead, which makes it write a partial summary; SIGKILL only after a grace period.
- A retried step never redoes or overwrites a measured point: an existing OUT/result.json with
  status ok is kept as is. Any other earlier attempt is moved to OUT/attempts/<n>/ first.
- Exit 0 for ok/partial, 2 for cancelled/failed (the reason goes to stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from infersweep.aiperf.adaptive import (
    TARGET_REL,
    Plan,
    measure_until_long_enough,
    point_budget,
    series_from_records,
)
from infersweep.aiperf.artifacts import RECORDS_FILE, RecordCounter, read_point
from infersweep.aiperf.flags import (
    ARTIFACT_SUBDIR,
    CONSOLE_LOG_FILE,
    RAMP_KEY,
    RESULT_FILE,
    TRACE_KEYS,
    build_argv,
    child_env,
    choose_seed,
    point_folder,
    point_seed,
    seamless_warmup,
    tokenizer_as_cached_hub_id,
    warmup_ramp_s,
    workload_argv,
    write_phases_file,
)
from infersweep.aiperf.steadiness import steady_state_reasons, thresholds_from_workload, window_measures
from infersweep.step_interface import json_object

# Kubernetes' default terminationGracePeriodSeconds is 30 s: AIPerf must be gone (and result.json
# written) before the kubelet's own SIGKILL, so our grace period stays below it.
DEFAULT_GRACE_S = 20.0
EXIT_OK = 0
EXIT_BAD_POINT = 2
# How often the step says how far the point is (a log line and ARGO_PROGRESS_FILE). Argo's executor reads the
# file every 3 s and patches the pod with it at most every minute by default (controller.go
# progressFileTickDuration / progressPatchTickDuration); the log line is there at once.
PROGRESS_EVERY_S = 5.0


# -- the point's own argument checks (the step's parser comes from its declaration) ---------------------------
def workload_json(text: str) -> dict:
    """--workload: a JSON object whose keys AIPerf takes (infersweep.aiperf WORKLOAD_FLAGS, TRACE_KEYS)."""
    value = json_object(text)
    try:
        workload_argv({k: v for k, v in value.items() if k not in TRACE_KEYS})
        thresholds_from_workload(value)
        warmup_ramp_s(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def request_rate(text: str) -> float:
    """--request-rate: requests/s >= 0, finite (0 = closed loop)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (value == value and 0 <= value < float("inf")):
        raise argparse.ArgumentTypeError("give requests/s >= 0 (0 = closed loop)")
    return value


# by option dest: the declaration's float and JSON-object types, refined (Step.parser(**ARG_TYPES))
ARG_TYPES = {"request_rate": request_rate, "workload": workload_json}


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    """The checks that need more than one option; a failure is parser.error (exit 2, usage, the fix)."""
    if args.grace_s is None:
        args.grace_s = DEFAULT_GRACE_S
    w = args.workload or {}
    has_lengths = (args.isl or w.get("isl")) and (args.osl or w.get("osl")) or w.get("seq_dist")
    if args.trace is None and not w.get("trace") and not has_lengths:
        parser.error("give --isl and --osl (or --workload with isl/osl or seq_dist) unless a trace is used")
    if args.concurrency < 1 or args.requests < 1 or args.warmup < 0:
        parser.error("--concurrency and --requests must be >= 1, --warmup >= 0")
    if not 0.0 <= args.max_error_rate <= 1.0:
        parser.error("--max-error-rate is a fraction between 0 and 1")
    for item in args.extra_inputs:
        if ":" not in item:
            parser.error(f"--extra-inputs wants KEY:VALUE, got {item!r}")
    if w.get(RAMP_KEY) is not None and not seamless_warmup(args):
        parser.error(
            f"--workload {RAMP_KEY} spreads a closed-loop point's warm-up (its window follows it seamlessly): give "
            f"--warmup above 0, no --request-rate and no trace, or remove {RAMP_KEY}"
        )
    return args


# -- progress while AIPerf runs ------------------------------------------------------------------------------
def _duration(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def progress_text(done: int, total: int, elapsed_s: float, measuring_s: float | None = None) -> str:
    """`37/120 requests (31%), 14s elapsed, ETA 31s`: the ETA at the rate measured so far (measuring_s: how
    long the profiling phase has run; the whole elapsed time when not known)."""
    pct = f" ({100 * done // total}%)" if total > 0 else ""
    text = f"{done}/{total} requests{pct}, {_duration(elapsed_s)} elapsed"
    # the profiling phase cannot have run longer than the point (records of another clock: use the elapsed time)
    rate_s = measuring_s if measuring_s and 0 < measuring_s <= elapsed_s else elapsed_s
    if 0 < done < total and rate_s > 0:
        text += f", ETA {_duration((total - done) * rate_s / done)}"
    return text


class PointProgress:
    """Counts the finished requests of the running point (AIPerf's records, artifacts.RecordCounter) and
    reports them: a `progress:` line in the step's log and `N/M` in $ARGO_PROGRESS_FILE, the file Argo's
    executor reads into the node's `progress` (workflow/executor/executor.go monitorProgress: the last line,
    parsed by pkg/apis/workflow/v1alpha1/progress.go ParseProgress as N/M)."""

    def __init__(
        self,
        artifact_dir: Path,
        total: int,
        *,
        progress_file: str | None = None,
        every_s: float = PROGRESS_EVERY_S,
        out=print,
    ) -> None:
        self.counter = RecordCounter(Path(artifact_dir) / RECORDS_FILE)
        self.total, self.every_s, self.out = total, every_s, out
        self.file = Path(progress_file) if progress_file else None
        self.started = time.monotonic()
        self._last_tick = self.started
        self._reported: int | None = None
        self.tick(force=True)  # 0/N at once: the step says what it is about to do

    def _write(self, done: int) -> None:
        if self.file is None:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            self.file.write_text(f"{min(done, self.total)}/{self.total}\n")
        except OSError:
            pass  # progress is a courtesy: it never fails a point

    def tick(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_tick < self.every_s:
            return
        self._last_tick = now
        done = self.counter.count()
        if done == self._reported:
            return
        self._reported = done
        measuring = (time.time_ns() - self.counter.first_start_ns) / 1e9 if self.counter.first_start_ns else None
        self.out(f"progress: {progress_text(done, self.total, now - self.started, measuring)}", flush=True)
        self._write(done)


# -- one point ------------------------------------------------------------------------------------------------
def run_point(args: argparse.Namespace) -> int:
    """Run the point `args` (checked by check_args) describes; return the step's exit code."""
    out = point_folder(args.out, args.request_rate, args.repetition)
    args.out = str(out)
    out.mkdir(parents=True, exist_ok=True)
    result_path = out / RESULT_FILE

    previous = load_json(result_path)
    if previous is not None and previous.get("status") == "ok":
        print(f"{result_path} already holds a good point (attempt {previous.get('attempt')}): kept, AIPerf not run")
        previous.setdefault("concurrency", args.concurrency)
        previous.setdefault("request_rate", args.request_rate)
        write_result_param(args.result_param, previous)
        return EXIT_OK

    attempt = set_aside_previous_attempt(out)
    if not Path(args.tokenizer).is_dir():
        print(
            f"warning: --tokenizer {args.tokenizer} is not a local dir; AIPerf will look it up by name", file=sys.stderr
        )
    trace = args.trace or (args.workload or {}).get("trace")
    if trace and not str(trace).startswith("https://") and not Path(trace).is_file():
        # e.g. a params:workloads/ trace, which exists only in a clone (local mode resolves it)
        reason = f"trace {trace} is not a file here; give an https:// URL or a path inside the AIPerf step"
        result = {
            "status": "failed",
            "reason": reason,
            "concurrency": args.concurrency,
            "request_rate": args.request_rate,
            "attempt": attempt,
        }
        write_json(result_path, result)
        write_result_param(args.result_param, result)
        print(reason, file=sys.stderr)
        return EXIT_BAD_POINT
    args.chosen_seed, seed_policy, cache_state = choose_seed(args)
    extra_env: dict[str, str] = {}
    hub_cache = None
    tokenizer_dir = None
    if Path(args.tokenizer).is_dir():
        # Every local tokenizer folder goes to AIPerf as a hub id in a private offline HF cache: a trace replay
        # needs it (infersweep.aiperf.flags.LOCAL_TOKENIZER_REPO), and any point gains from it, because AIPerf
        # 0.13 otherwise loads the tokenizer once more in a subprocess before the run (aiperf/common/
        # tokenizer_validator.py _prefetch_tokenizers), which it skips under HF_HUB_OFFLINE ("HF offline mode
        # already set, skipping cache warming", tokenizer_validator.py:306): 12.7-16.4 s of every H200 point
        # (benchmarks/measured/h200-2026-12-01 and -04 aiperf.log, "Prefetching 1 tokenizer into HF cache").
        hub_cache = Path(tempfile.mkdtemp(prefix="infersweep-hf-"))  # not in OUT: nothing of it is published
        tokenizer_dir = args.tokenizer
        args.tokenizer, extra_env = tokenizer_as_cached_hub_id(Path(tokenizer_dir), hub_cache)
        print(f"tokenizer {tokenizer_dir} given to AIPerf as {args.tokenizer} (offline HF cache)")
    workload = args.workload or {}
    # a fixed schedule replays the whole trace: its request count is the trace's, never extended (flags.build_argv)
    factor = None if workload.get("fixed_schedule") else workload.get("max_requests_factor")
    budget = point_budget(args.requests, factor)
    target = float(workload.get("ci95_target") or TARGET_REL)
    steadiness = thresholds_from_workload(workload)  # None: steadiness judged at summarize time only
    initial, point_started = args.requests, time.monotonic()

    def measure(requests: int, k: int) -> tuple[dict, dict[str, list[float]] | None]:
        args.requests = requests
        if k and seed_policy == "per-point":  # fresh prompts: the pilot's are in the prefix cache now
            args.chosen_seed = point_seed(args.chosen_seed, "extend", k)
        if k:
            print(f"length: measuring the point again as one window of {requests} requests (was {initial})")
        left = args.timeout_s - (time.monotonic() - point_started) if args.timeout_s else None
        result = measure_window(args, out, attempt, extra_env, left)
        # a per-point seed is renewed for every window; any other seed resends the pilot's prompts
        reused = k > 0 and seed_policy != "per-point"
        result.update(
            seed_policy=seed_policy,
            cache_state="reused-prompts" if reused else cache_state,
            tokenizer_dir=tokenizer_dir,  # the folder behind argv's --tokenizer hub id, when it was one
        )
        records = out / ARTIFACT_SUBDIR / RECORDS_FILE
        try:
            series = series_from_records(records) if result["status"] == "ok" else None
            if series is not None and steadiness is not None:
                result["steady_reasons"] = window_steadiness(records, args, steadiness)
        except (OSError, ValueError) as e:
            print(f"length: cannot read the records ({e})", file=sys.stderr)
            series = None
        return result, series

    try:
        result, pilots = measure_until_long_enough(
            Plan(args.concurrency, args.requests, args.warmup, budget, target),
            measure,
            lambda r, k: set_aside_pilot(out, r, k),
            lambda pilot, failed: restore_pilot(out, pilot, failed),
            time_left=lambda: args.timeout_s - (time.monotonic() - point_started) if args.timeout_s else None,
        )
    finally:
        if hub_cache is not None:
            shutil.rmtree(hub_cache, ignore_errors=True)
    if result.get("stop_reason"):
        print(f"length: {result['stop_reason']}: {result.get('adaptive_detail', '')}", flush=True)
    if budget > initial:  # an adaptive point: what it measured in the end against what it was given
        result.update(
            requests_initial=initial,
            requests_budget=budget,
            requests_extended=int(result.get("requests") or initial) - initial,
            pilots=pilots,
            wall_s_total=round(time.monotonic() - point_started, 3),
        )
    write_json(result_path, result)
    write_result_param(args.result_param, result)

    load = (
        f"request rate {args.request_rate:g}/s (cap {args.concurrency})"
        if args.request_rate
        else f"concurrency {args.concurrency}"
    )
    line = f"{load}: {result['status']}: {result['reason']}"
    if result["status"] in ("ok", "partial"):
        print(line)
        return EXIT_OK
    print(line, file=sys.stderr)
    return EXIT_BAD_POINT


# -- one window of the point, and making it longer -------------------------------------------------------------
def window_steadiness(records: Path, args: argparse.Namespace, thresholds: dict) -> list[str]:
    """Why the window whose records these are is not steady ([] = steady): the rule summarize judges the point by
    (infersweep.results.validity), over the same records, at the same load, with the run profile's thresholds."""
    m = window_measures(records, args.concurrency, args.request_rate)
    reasons = steady_state_reasons(m, thresholds)
    why = "; ".join(reasons)
    print(f"length: {'not steady: ' + why if why else 'steady'} ({m['steady_cycles']} whole cycles)", flush=True)
    return reasons


def measure_window(
    args: argparse.Namespace, out: Path, attempt: int, extra_env: dict[str, str], time_left: float | None
) -> dict:
    """Run AIPerf once for `args.requests` measured requests (after `args.warmup`) into OUT/; its result.

    Why an extended point is measured again as ONE longer window rather than as more chunks merged: AIPerf 0.13
    fixes a phase's request count when the phase starts (timing/config.py:242 CreditPhaseConfig is frozen,
    :268 total_expected_requests) and stops sending at it (timing/phase/stop_conditions.py:147-149
    RequestCountStopCondition), then waits for every credit to return (timing/phase/runner.py:1160
    all_credits_returned_event); nothing outside the process can raise the count of a running phase. A
    second AIPerf run would open with `concurrency` requests started together and its first window's last
    round would drain with fewer and fewer in flight: stitched together, that drain and start burst sit
    inside the window, where infersweep's steadiness rule (infersweep.aiperf.steadiness cycle_measures judges
    whole closed-loop cycles of one window) would read them as drift, and AIPerf's summary percentiles would
    be per chunk, not of the point. One window keeps every number (AIPerf's own, the validity verdict, the
    scrape's server window) a measurement of one steady run, at the cost of measuring the pilot's requests
    twice; the pilot stays under OUT/pilots/<k>/ as evidence."""
    seamless = seamless_warmup(args)
    if seamless:
        write_phases_file(out)  # the YAML build_argv's --config names
    command = build_argv(args)
    log_path = out / CONSOLE_LOG_FILE
    print(
        f"attempt {attempt}: running AIPerf at concurrency {args.concurrency} ({args.requests} requests), "
        f"log in {log_path}",
        flush=True,
    )
    started = time.monotonic()
    progress = PointProgress(out / ARTIFACT_SUBDIR, args.requests, progress_file=os.environ.get("ARGO_PROGRESS_FILE"))
    timeout_s = max(1.0, time_left) if time_left is not None else None
    exit_code, stopped_by = run_aiperf(
        command, log_path, timeout_s=timeout_s, grace_s=args.grace_s, env=extra_env, on_tick=progress.tick
    )
    progress.tick(force=True)
    wall_s = time.monotonic() - started
    result = read_point(
        out / ARTIFACT_SUBDIR, max_error_rate=args.max_error_rate, exit_code=exit_code, console_log=log_path
    )
    if stopped_by:  # say who stopped it: "(stopped by SIGTERM)", "(stopped by --timeout-s 600, then SIGKILL ...)"
        who = stopped_by
        if stopped_by.startswith("timeout"):
            who = stopped_by.replace("timeout", f"--timeout-s {args.timeout_s:g}", 1)
        result["reason"] += f" (stopped by {who})"
    result.update(
        concurrency=args.concurrency,
        request_rate=args.request_rate,
        arrival=(args.workload or {}).get("arrival", "poisson") if args.request_rate else None,
        repetition=args.repetition,
        requests=args.requests,
        warmup=args.warmup,
        # seamless: the window follows the warm-up without a drain (flags.seamless_warmup); drained: AIPerf's
        # default, the window opens with `concurrency` requests sent together
        # seamless-ramped: a seamless window after a warm-up whose users started one after another over
        # warmup_ramp_s seconds (flags.RAMP_KEY), so the loop opens spread out
        warmup_mode=warmup_mode(args, seamless),
        warmup_ramp_s=warmup_ramp_s(args.workload or {}),
        seed=args.chosen_seed,
        argv=command,
        exit_code=exit_code,
        wall_s=round(wall_s, 3),
        attempt=attempt,
        stopped_by=stopped_by,
    )
    return result


def warmup_mode(args: argparse.Namespace, seamless: bool) -> str:
    """How the window followed its warm-up (the results table's warmup_mode)."""
    if not args.warmup:
        return "none"
    if not seamless:
        return "drained"
    return "seamless-ramped" if warmup_ramp_s(args.workload or {}) is not None else "seamless"


PILOTS_DIR = "pilots"
WINDOW_FILES = (RESULT_FILE, ARTIFACT_SUBDIR, CONSOLE_LOG_FILE)


def set_aside_pilot(out: Path, result: dict, k: int) -> dict:
    """Move the window in OUT/ (with its result.json, stop_reason `extend`) to OUT/pilots/<k>/; what the point's
    result.json says of it. Only OUT/result.json is a point (infersweep.results.table.point_dirs), so summarize
    reads the final window, never a pilot."""
    taken = {p.name for p in (out / PILOTS_DIR).iterdir()} if (out / PILOTS_DIR).is_dir() else set()
    while str(k) in taken:  # a pilot of an earlier, interrupted attempt
        k += 1
    dest = out / PILOTS_DIR / str(k)
    dest.mkdir(parents=True)
    write_json(out / RESULT_FILE, result)
    for name in WINDOW_FILES:
        if (out / name).exists():
            (out / name).rename(dest / name)
    keys = ("requests", "requests_ok", "seed", "wall_s", "start_time", "end_time", "adaptive_ci_rel", "steady_reasons")
    return {"folder": f"{PILOTS_DIR}/{k}"} | {key: result.get(key) for key in keys}


def restore_pilot(out: Path, pilot: dict, failed: dict) -> dict:
    """The longer window failed: it goes to OUT/attempts/<n>/ like any failed attempt, and the pilot it was to
    replace comes back to OUT/ as the point's measurement (a good result is never lost to an extension)."""
    write_json(out / RESULT_FILE, failed)
    set_aside_previous_attempt(out)
    src = out / pilot["folder"]
    for name in WINDOW_FILES:
        if (src / name).exists():
            (src / name).rename(out / name)
    src.rmdir()
    result = load_json(out / RESULT_FILE) or {}
    result.update(
        stop_reason="extension failed",
        adaptive_detail=f"the longer window ({failed.get('requests')} requests) was {failed.get('status')}: "
        f"{failed.get('reason')}; the pilot is kept",
    )
    return result


# -- AIPerf as a child, and the point folder --------------------------------------------------------------
def run_aiperf(
    argv: list[str],
    log_path: Path,
    *,
    timeout_s: float | None,
    grace_s: float,
    env: dict[str, str] | None = None,
    on_tick=None,
) -> tuple[int, str | None]:
    """Run AIPerf to the end; return (exit code, what stopped it early or None). `on_tick()` runs every 0.2 s.

    SIGTERM/SIGINT to us, or the timeout, become one SIGINT to AIPerf (partial summary), then a
    SIGKILL to its whole process group if it is still there after grace_s.
    """
    stop: dict[str, str | None] = {"cause": None}

    def on_signal(signum, _frame):
        stop["cause"] = stop["cause"] or signal.Signals(signum).name

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with open(log_path, "ab") as log:
            try:
                # Own session: a terminal Ctrl-C or a group kill aimed at us does not hit AIPerf
                # directly; it gets exactly one SIGINT from us. It also lets us SIGKILL its workers.
                proc = subprocess.Popen(
                    argv,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    env=child_env(env),
                    start_new_session=True,
                    preexec_fn=_die_with_parent,
                )
            except OSError as exc:
                log.write(f"could not start AIPerf: {exc}\n".encode())
                return 127, None
        deadline = time.monotonic() + timeout_s if timeout_s else None
        interrupted_at = None
        while True:
            try:
                code = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                pass
            if on_tick is not None:
                on_tick()
            now = time.monotonic()
            if stop["cause"] is None and deadline is not None and now >= deadline:
                stop["cause"] = "timeout"
            if stop["cause"] and interrupted_at is None:
                _signal(proc.pid, signal.SIGINT, group=False)
                interrupted_at = now
            elif interrupted_at is not None and now - interrupted_at >= grace_s:
                _signal(proc.pid, signal.SIGKILL, group=True)
                stop["cause"] = f"{stop['cause']}, then SIGKILL after {grace_s:g} s"
                code = proc.wait()
                break
        _signal(proc.pid, signal.SIGKILL, group=True)  # leftover AIPerf workers, if any
        return code, stop["cause"]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _die_with_parent() -> None:
    """In AIPerf's child, before exec: SIGKILL it when this step's process dies (Linux PR_SET_PDEATHSIG).

    AIPerf runs in its own session (above), so a SIGKILL to this step's process group does not reach it; if
    this process is killed before it could stop AIPerf, AIPerf's main process (`aiperf system_controller`)
    would run on with nobody to stop it. AIPerf arms the same guard in its own service processes against
    their controller (aiperf/common/bootstrap.py, PR_SET_PDEATHSIG)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the group kill below is all there is


def _signal(pid: int, sig: signal.Signals, *, group: bool) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def set_aside_previous_attempt(out: Path) -> int:
    """Move an earlier attempt's files to OUT/attempts/<n>/; return this attempt's number."""
    attempts = out / "attempts"
    taken = [int(p.name) for p in attempts.iterdir() if p.name.isdigit()] if attempts.is_dir() else []
    leftovers = [out / name for name in WINDOW_FILES if (out / name).exists()]
    if leftovers:
        dest = attempts / str(max(taken, default=0) + 1)
        dest.mkdir(parents=True)
        for path in leftovers:
            path.rename(dest / path.name)
        taken.append(int(dest.name))
    return max(taken, default=0) + 1


def load_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_json(path: Path, data: dict, indent: int | None = 2) -> None:
    """Write via a temp file + rename: a kill mid-write never leaves a torn result.json."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=indent) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_result_param(path: str | None, result: dict) -> None:
    # An Argo output parameter: keep it small, the full result lives in result.json.
    if path:
        keys = (
            ("concurrency", "request_rate", "status", "reason")
            if result.get("request_rate")
            else ("concurrency", "status", "reason")
        )  # an open-loop point also says its rate
        write_json(Path(path), {k: result.get(k) for k in keys}, indent=None)
