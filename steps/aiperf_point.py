"""Run one AIPerf benchmark point and leave an honest OUT/result.json behind.

Runs inside the AIPerf image: standard library only.

    python -m steps.aiperf_point --url URL --model NAME --tokenizer DIR --concurrency N \
        --requests N --warmup N --isl N --osl N --out DIR [--trace FILE] [--timeout-s S] \
        [--max-error-rate F] [--aiperf BIN] [--extra-inputs k:v ...] [--result-param PATH]

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
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    from steps.aiperf_results import read_point
except ImportError:  # the two files copied flat into an image, without the package
    from aiperf_results import read_point  # type: ignore[no-redef]

from infersweep.step_declarations import AIPERF_POINT

RESULT_FILE = "result.json"
ARTIFACT_SUBDIR = "aiperf"
LOG_FILE = "aiperf.log"
# Kubernetes' default terminationGracePeriodSeconds is 30 s: AIPerf must be gone (and result.json
# written) before the kubelet's own SIGKILL, so our grace period stays below it.
DEFAULT_GRACE_S = 20.0
EXIT_OK = 0
EXIT_BAD_POINT = 2


# The workload a recipe describes, as AIPerf flags. Only these keys are accepted: a recipe value reaches
# AIPerf as one argv item after a known flag, never as a flag of its own choosing.
WORKLOAD_FLAGS = {
    "isl": "--isl",
    "osl": "--osl",
    "isl_stddev": "--isl-stddev",
    "seq_dist": "--seq-dist",  # e.g. "1024,256:35;4096,512:30" (ISL,OSL:percent)
    "prefix_tokens": "--prefix-prompt-length",  # shared prefix length (KV reuse)
    "num_prefixes": "--num-prefix-prompts",  # how many distinct prefixes
    "turns": "--conversation-turn-mean",  # multi-turn sessions
    "turn_delay_ms": "--conversation-turn-delay-mean",
    "sessions": "--conversation-num",
    # Open-loop arrivals of a --request-rate point: poisson | constant (AIPerf 0.13
    # aiperf/config/flags/cli_config.py, CLIConfig.arrival_pattern, alias --request-rate-mode).
    "arrival": "--arrival-pattern",
    # tokens per hash_id block of a trace (AIPerf 0.13 cli_config.py, prompt_input_tokens_block_size)
    "block_size": "--isl-block-size",
}


TRACE_KEYS = ("trace", "trace_type", "fixed_schedule")  # taken by build_argv itself, not WORKLOAD_FLAGS

# Workload keys that make requests reuse prompts on purpose (shared prefixes, multi-turn sessions, a trace):
# their points keep one seed, so every point sees the same prefixes/sessions.
REUSE_KEYS = ("prefix_tokens", "num_prefixes", "turns", "turn_delay_ms", "sessions", "trace")
DEFAULT_BASE_SEED = 1


def point_seed(base: int, concurrency: int | str, repetition: int) -> int:
    """A seed of this point and repetition alone: a later point's prompts are not the ones an earlier point
    left in the prefix cache. Deterministic, so a rerun sends the same prompts again."""
    digest = hashlib.sha256(f"{base}:{concurrency}:{repetition}".encode()).digest()
    return int.from_bytes(digest[:4], "big") % (2**31 - 1)


def choose_seed(args: argparse.Namespace) -> tuple[int, str, str]:
    """(seed, seed_policy, cache_state at point start) of this point.

    Cache state: Dynamo 1.6.1's frontend exposes no cache reset over HTTP (its OpenAPI lists no
    /clear_kv_blocks route, measured; the vLLM and SGLang workers register a `clear_kv_blocks` endpoint
    on the Dynamo runtime only: dynamo/vllm/worker_factory.py, dynamo/sglang/init_llm.py), so the cache
    is never reset here. What is known: with a seed of its own the point's prompts were never sent before
    ("fresh-prompts"); a workload that reuses prompts on purpose keeps its seed ("reused-prompts").
    """
    workload = dict(args.workload or {})
    reuse = sorted(k for k in REUSE_KEYS if workload.get(k) or (k == "trace" and args.trace))
    if args.seed is not None:
        return args.seed, "given (--seed)", "reused-prompts" if reuse else "unknown"
    if reuse:
        return DEFAULT_BASE_SEED, f"shared: the workload reuses prompts ({', '.join(reuse)})", "reused-prompts"
    # a rate point's seed depends on its rate too: every rate point shares the concurrency cap
    load = args.concurrency if not getattr(args, "request_rate", 0) else f"{args.concurrency}@{args.request_rate:g}"
    return point_seed(DEFAULT_BASE_SEED, load, args.repetition), "per-point", "fresh-prompts"


def workload_argv(workload: dict) -> list[str]:
    unknown = sorted(set(workload) - set(WORKLOAD_FLAGS) - set(TRACE_KEYS))
    if unknown:
        raise ValueError(f"--workload: unknown keys {unknown}; known: {sorted(WORKLOAD_FLAGS)} + trace, trace_type")
    argv: list[str] = []
    for key, flag in WORKLOAD_FLAGS.items():
        if workload.get(key) is not None:
            argv += [flag, str(workload[key])]
    return argv


def build_argv(args: argparse.Namespace) -> list[str]:
    """The AIPerf command line, as a list. Every value is a separate item, never shell-parsed."""
    argv = [
        args.aiperf, "profile",
        "--model", args.model,
        "--url", args.url,
        "--endpoint-type", "chat",
        "--streaming",
        "--tokenizer", args.tokenizer,
        "--concurrency", str(args.concurrency),
    ]
    workload = dict(args.workload or {})
    if not workload.get("fixed_schedule"):
        # A fixed schedule replays the whole trace at its timestamps: the trace is the request count and
        # there is no warmup phase (its requests would be the trace's own first lines).
        argv += ["--request-count", str(args.requests)]
        if args.warmup > 0:
            argv += ["--warmup-request-count", str(args.warmup)]
    if args.request_rate:
        # Open loop: AIPerf schedules arrivals at this rate; --concurrency stays as the in-flight cap
        # (AIPerf 0.13 aiperf/config/flags/cli_config.py, CLIConfig.request_rate: "Can be combined with
        # `--concurrency` to control the number of concurrent requests").
        argv += ["--request-rate", f"{args.request_rate:g}"]
    trace = args.trace or workload.pop("trace", None)
    trace_type = workload.pop("trace_type", None) or args.trace_type
    fixed_schedule = bool(workload.pop("fixed_schedule", False))
    if trace:
        # The trace gives each request its lengths. --fixed-schedule replays its timestamps (AIPerf 0.13
        # cli_config.py CLIConfig.fixed_schedule); --no-fixed-schedule (disable_auto_fixed_schedule) keeps a
        # concurrency or rate point, since a trace with timestamps would otherwise switch to its schedule.
        argv += ["--input-file", str(trace), "--custom-dataset-type", trace_type,
                 "--fixed-schedule" if fixed_schedule else "--no-fixed-schedule"]
        workload.pop("isl", None), workload.pop("osl", None)
    else:
        workload.setdefault("isl", args.isl)
        workload.setdefault("osl", args.osl)
    argv += workload_argv(workload)
    seed = getattr(args, "chosen_seed", None)
    argv += ["--random-seed", str(seed if seed is not None else choose_seed(args)[0])]
    if args.request_timeout_s is not None:
        argv += ["--request-timeout-seconds", f"{args.request_timeout_s:g}"]
    if args.failed_request_threshold is not None:
        argv += ["--failed-request-threshold", f"{args.failed_request_threshold:g}"]
    for item in args.extra_inputs:
        argv += ["--extra-inputs", item]
    argv += ["--ui-type", "none", "--artifact-dir", str(Path(args.out) / ARTIFACT_SUBDIR)]
    return argv


def _workload_json(text: str) -> dict:
    try:
        value = json.loads(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"not JSON: {e}") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError("must be a JSON object")
    try:
        workload_argv({k: v for k, v in value.items() if k not in TRACE_KEYS})
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return value


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (value == value and 0 <= value < float("inf")):
        raise argparse.ArgumentTypeError("give requests/s >= 0 (0 = closed loop)")
    return value


def point_folder(out: str, request_rate: float) -> Path:
    """Where this point's files go. Every point of a rate sweep has the same concurrency (the in-flight
    cap), so an open-loop point gets a folder of its own rate: a later rate never finds an earlier one's
    good result.json and keeps it as its own."""
    return Path(out) if not request_rate else Path(f"{out}-rate{request_rate:g}")


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    # With HF_HUB_OFFLINE=1 AIPerf treats a local --tokenizer DIR as a hub id and fails.
    env = dict(os.environ)
    env.pop("HF_HUB_OFFLINE", None)
    env.update(extra or {})
    return env


# A trace with hash_ids is turned into prompts by AIPerf 0.13's parallel_convert worker pool, whose
# _init_worker (aiperf/dataset/loader/parallel_convert.py) forces HF_HUB_OFFLINE=1 and loads the tokenizer
# with Tokenizer.from_pretrained; offline, that goes through Tokenizer._resolve_local_snapshot
# (aiperf/common/tokenizer.py), i.e. huggingface_hub.snapshot_download(name, local_files_only=True), which
# refuses a folder path (HFValidationError: "Repo id must be in the form ..."). The forkserver preload
# (aiperf/dataset/_tokenizer_preload.py) takes the same path and fails soft. So a local tokenizer folder
# is handed to AIPerf as a hub id whose snapshot is that folder, in a private HF cache, and every AIPerf
# process runs offline against it: the main process, the preload and the workers all find it.
LOCAL_TOKENIZER_REPO = "infersweep-local/tokenizer"


def tokenizer_as_cached_hub_id(tokenizer_dir: Path, hub_cache: Path) -> tuple[str, dict[str, str]]:
    """(hub id, env) under which AIPerf loads tokenizer_dir offline: hub_cache gets the layout
    huggingface_hub reads (models--<org>--<name>/refs/main -> snapshots/<commit>/, files as symlinks)."""
    repo = hub_cache / ("models--" + LOCAL_TOKENIZER_REPO.replace("/", "--"))
    commit = hashlib.sha1(str(tokenizer_dir.resolve()).encode()).hexdigest()
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    for f in tokenizer_dir.resolve().iterdir():
        if f.is_file() and not (snapshot / f.name).exists():
            (snapshot / f.name).symlink_to(f)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return LOCAL_TOKENIZER_REPO, {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(hub_cache)}


def run_aiperf(argv: list[str], log_path: Path, *, timeout_s: float | None, grace_s: float,
               env: dict[str, str] | None = None) -> tuple[int, str | None]:
    """Run AIPerf to the end; return (exit code, what stopped it early or None).

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
                proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        env=child_env(env), start_new_session=True)
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


def _signal(pid: int, sig: signal.Signals, *, group: bool) -> None:
    try:
        os.killpg(pid, sig) if group else os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


def set_aside_previous_attempt(out: Path) -> int:
    """Move an earlier attempt's files to OUT/attempts/<n>/; return this attempt's number."""
    attempts = out / "attempts"
    taken = [int(p.name) for p in attempts.iterdir() if p.name.isdigit()] if attempts.is_dir() else []
    leftovers = [out / name for name in (RESULT_FILE, ARTIFACT_SUBDIR, LOG_FILE) if (out / name).exists()]
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
        keys = ("concurrency", "request_rate", "status", "reason") if result.get("request_rate") else \
            ("concurrency", "status", "reason")  # an open-loop point also says its rate
        write_json(Path(path), {k: result.get(k) for k in keys}, indent=None)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    # the declaration's float and JSON-object types, refined with this step's own checks
    p = AIPERF_POINT.parser(request_rate=_rate, workload=_workload_json)
    p.set_defaults(grace_s=DEFAULT_GRACE_S)
    args = p.parse_args(argv)
    w = args.workload or {}
    has_lengths = (args.isl or w.get("isl")) and (args.osl or w.get("osl")) or w.get("seq_dist")
    if args.trace is None and not w.get("trace") and not has_lengths:
        p.error("give --isl and --osl (or --workload with isl/osl or seq_dist) unless a trace is used")
    if args.concurrency < 1 or args.requests < 1 or args.warmup < 0:
        p.error("--concurrency and --requests must be >= 1, --warmup >= 0")
    if not 0.0 <= args.max_error_rate <= 1.0:
        p.error("--max-error-rate is a fraction between 0 and 1")
    for item in args.extra_inputs:
        if ":" not in item:
            p.error(f"--extra-inputs wants KEY:VALUE, got {item!r}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = point_folder(args.out, args.request_rate)
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
        print(f"warning: --tokenizer {args.tokenizer} is not a local dir; AIPerf will look it up by name",
              file=sys.stderr)
    trace = args.trace or (args.workload or {}).get("trace")
    if trace and not str(trace).startswith("https://") and not Path(trace).is_file():
        # e.g. a params:workloads/ trace, which exists only in a clone (local mode resolves it)
        reason = f"trace {trace} is not a file here; give an https:// URL or a path inside the AIPerf step"
        result = {"status": "failed", "reason": reason, "concurrency": args.concurrency,
                  "request_rate": args.request_rate, "attempt": attempt}
        write_json(result_path, result)
        write_result_param(args.result_param, result)
        print(reason, file=sys.stderr)
        return EXIT_BAD_POINT
    args.chosen_seed, seed_policy, cache_state = choose_seed(args)
    extra_env: dict[str, str] = {}
    hub_cache = None
    if trace and Path(args.tokenizer).is_dir():
        hub_cache = Path(tempfile.mkdtemp(prefix="infersweep-hf-"))  # not in OUT: nothing of it is published
        tokenizer_dir = args.tokenizer
        args.tokenizer, extra_env = tokenizer_as_cached_hub_id(Path(tokenizer_dir), hub_cache)
        print(f"trace replay: tokenizer {tokenizer_dir} given to AIPerf as {args.tokenizer} (offline HF cache)")
    command = build_argv(args)
    log_path = out / LOG_FILE
    print(f"attempt {attempt}: running AIPerf at concurrency {args.concurrency}, log in {log_path}", flush=True)

    started = time.monotonic()
    try:
        exit_code, stopped_by = run_aiperf(command, log_path, timeout_s=args.timeout_s, grace_s=args.grace_s,
                                           env=extra_env)
    finally:
        if hub_cache is not None:
            shutil.rmtree(hub_cache, ignore_errors=True)
    wall_s = time.monotonic() - started

    result = read_point(out / ARTIFACT_SUBDIR, max_error_rate=args.max_error_rate,
                        exit_code=exit_code, console_log=log_path)
    if stopped_by:  # say who stopped it: "(stopped by SIGTERM)", "(stopped by --timeout-s 600, then SIGKILL ...)"
        who = stopped_by
        if stopped_by.startswith("timeout"):
            who = stopped_by.replace("timeout", f"--timeout-s {args.timeout_s:g}", 1)
        result["reason"] += f" (stopped by {who})"
    result.update(concurrency=args.concurrency, request_rate=args.request_rate,
                  arrival=(args.workload or {}).get("arrival", "poisson") if args.request_rate else None, repetition=args.repetition, seed=args.chosen_seed,
                  seed_policy=seed_policy, cache_state=cache_state, argv=command, exit_code=exit_code,
                  wall_s=round(wall_s, 3), attempt=attempt, stopped_by=stopped_by)
    write_json(result_path, result)
    write_result_param(args.result_param, result)

    load = f"request rate {args.request_rate:g}/s (cap {args.concurrency})" if args.request_rate else f"concurrency {args.concurrency}"
    line = f"{load}: {result['status']}: {result['reason']}"
    if result["status"] in ("ok", "partial"):
        print(line)
        return EXIT_OK
    print(line, file=sys.stderr)
    return EXIT_BAD_POINT


if __name__ == "__main__":
    sys.exit(main())
