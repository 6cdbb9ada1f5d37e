"""Flags in: what a benchmark point gives AIPerf. WORKLOAD_FLAGS (the recipe workload keys AIPerf accepts),
TRACE_KEYS, the per-point seed, `build_argv` (the AIPerf command line of one point), the point folder layout
(RESULT_FILE, ARTIFACT_SUBDIR, CONSOLE_LOG_FILE) and the child's environment.

Standard library only: the AIPerf image copies this package (images/aiperf.Dockerfile).
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

# A point folder, as steps/aiperf_point.py leaves it: OUT/result.json, OUT/aiperf/ (AIPerf's --artifact-dir)
# and OUT/aiperf.log (AIPerf's console output).
RESULT_FILE = "result.json"
ARTIFACT_SUBDIR = "aiperf"
CONSOLE_LOG_FILE = "aiperf.log"

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


# Workload switches (true -> the flag alone). server_token_count: OSL and ITL from the server's `usage`
# (AIPerf 0.13 aiperf/config/endpoint.py EndpointConfig.use_server_token_count), not from re-tokenizing the
# streamed text client-side: with random weights (GPU local mode's --load-format dummy) the output ids span
# the whole vocabulary and a client tokenizer counted 52 of 256 tokens, making ITL 5x too high (measured).
WORKLOAD_SWITCHES = {"server_token_count": "--use-server-token-count"}

TRACE_KEYS = ("trace", "trace_type", "fixed_schedule")  # taken by build_argv itself, not WORKLOAD_FLAGS
# Seconds over which the warm-up starts its users (the recipe's workload.warmup_ramp_s): taken by build_argv itself,
# since the flag only keeps the spread beside a seamless window (seamless_warmup, SEAMLESS_PHASES_YAML). Why: a
# loop whose users start together can stay in lockstep; on the H200 SGLang's c64 loop did for its whole window
# (benchmarks/loop_clustering.py), vLLM's opened locked and spread out (docs/measured-h200.md). AIPerf 0.13's
# CLIConfig.warmup_concurrency_ramp_duration (config/flags/cli_config.py) becomes the warm-up phase's
# concurrency_ramp (config/flags/_converter_warmup.py _warmup_ramps), a linear step of its session limit from 1 to
# the concurrency over that many seconds (timing/phase/runner.py _create_rampers; timing/ramping.py
# Ramper._run_discrete waits with asyncio.sleep, so a user may start late, never early).
RAMP_KEY = "warmup_ramp_s"
RAMP_FLAG = "--warmup-concurrency-ramp-duration"

# The workload keys that carry the steadiness thresholds to the point step (infersweep.aiperf.steadiness):
# key -> (params/validity.yaml block, threshold). Each is a number > 0, checked with the other length keys.
STEADY_KEYS = {
    "steady_max_throughput_drift": ("steady_state", "max_throughput_drift"),
    "steady_max_ttft_drift": ("steady_state", "max_ttft_drift"),
    "steady_max_ttft_drift_few_requests": ("steady_state", "max_ttft_drift_few_requests"),
    "steady_few_requests_per_cycle": ("steady_state", "few_requests_per_cycle"),
    "steady_max_first_cycle_ttft_excess": ("steady_state", "max_first_cycle_ttft_excess"),
    "steady_min_cycles": ("steady_state", "min_cycles"),
    "steady_max_ttft_growth": ("overload", "max_ttft_growth"),
    "steady_trend_alpha": ("steady_state", "trend_alpha"),
    "steady_trend_test_min_cycles": ("steady_state", "trend_test_min_cycles"),
}
# The drift's trend test (infersweep.aiperf.steadiness._trend) came later: a workload rendered without
# these keys is judged by drift size alone, as when it was rendered.
OPTIONAL_STEADY_KEYS = ("steady_trend_alpha", "steady_trend_test_min_cycles")

# How long a point measures (infersweep.aiperf.adaptive): taken by the point step, never given to AIPerf.
# max_requests_factor: a window may grow to requests x this (the recipe's max_requests_per_concurrency over its
# requests_per_concurrency); ci95_target: the relative 95 % half-width that stops it; steady_*: the steadiness
# thresholds a window must meet too (STEADY_KEYS).
LENGTH_KEYS = ("max_requests_factor", "ci95_target", *STEADY_KEYS)

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
    unknown = sorted(
        set(workload) - set(WORKLOAD_FLAGS) - set(WORKLOAD_SWITCHES) - set(TRACE_KEYS) - set(LENGTH_KEYS) - {RAMP_KEY}
    )
    if unknown:
        raise ValueError(
            f"--workload: unknown keys {unknown}; known: {sorted(WORKLOAD_FLAGS)} + "
            f"{sorted(WORKLOAD_SWITCHES)} + trace, trace_type, {RAMP_KEY} + {', '.join(LENGTH_KEYS)}"
        )
    for key in LENGTH_KEYS:
        value = workload.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
            raise ValueError(f"--workload: {key} must be a number > 0, not {value!r}")
    argv: list[str] = []
    for key, flag in WORKLOAD_FLAGS.items():
        if workload.get(key) is not None:
            argv += [flag, str(workload[key])]
    for key, flag in WORKLOAD_SWITCHES.items():
        if workload.get(key):
            argv.append(flag)
    return argv


def dataset_entries(workload: dict, requests: int, warmup: int, *, trace: bool = False) -> int | None:
    """How many distinct prompts AIPerf generates for a synthetic point: one per warm-up request and one per
    measured request, so no measured request repeats a warm-up prompt. None where the prompts come from
    elsewhere (a trace) or the workload sets its own count of sessions to reuse (`sessions`).

    Why: AIPerf 0.13 sizes a synthetic dataset from --request-count alone when --num-dataset-entries is not
    given (aiperf/config/flags/_converter_dataset.py _resolve_entries), and the warm-up and profiling phases
    draw from one sampler (aiperf/timing/phase_orchestrator.py builds one ConversationSource for all phases),
    sequential by default for synthetic data (aiperf/config/dataset/config.py SyntheticDataset.sampling;
    aiperf/dataset/dataset_samplers.py SequentialSampler wraps to the start). So with W warm-up requests the
    last W measured requests were the warm-up prompts again, served from the prefix cache (measured: 4/N
    of every point's prompt tokens read from cache).

    Distinct entries, not guaranteed distinct texts: each prompt is a window at a random offset of AIPerf's corpus
    (aiperf/dataset/generator/prompt.py sample_tokens_from_corpus), so two coincide about once per corpus-size
    pairs (963,106 tokens with the GPU runs' tokenizer), within a point or across points. The prompt-cache check
    (params/validity.yaml cache) refuses a point that such a repeat served from the cache;
    benchmarks/prompt_collisions.py finds them in a run."""
    if trace or workload.get("trace") or workload.get("sessions"):
        return None
    return requests + warmup


# The measured window of a closed-loop point opens without a burst: AIPerf's profiling phase starts as the warm-up
# finishes sending, each measured request taking the slot a warm-up request frees, so the loop never drains
# to zero and restarts with `concurrency` requests sent together. AIPerf drains the warm-up by default, and on
# the H200 the drained window's first 2-4 of 12 closed-loop cycles echoed that restart (Llama-3.1-8B c16
# per-cycle mean TTFT 996 603 336 326 ... ms: every KV-vs-RR window of 2026-12-04 was judged unsteady).
#
# AIPerf 0.13 has no flag for it: `seamless` is a field of a phase in its YAML config only
# (aiperf/config/phases.py BasePhaseConfig.seamless, "Start this phase immediately when previous phase stops,
# without waiting for in-flight requests to complete"), and `--config FILE` merges our flags on top of FILE
# (aiperf/config/flags/resolver.py resolve_config / _resolve_config_envelopes). FILE must declare the warm-up
# phase itself (config/config.py refuses `seamless` on a first phase before --warmup-request-count could insert
# one) and a dataset; every value in it but `seamless` is overwritten by our flags (--request-count and
# --concurrency onto the profiling phase: resolver.py _apply_phase_loadgen_overrides; --warmup-* onto the
# warm-up: _apply_warmup_overrides). `--warmup-concurrency` is given because under --config the warm-up's
# concurrency does not default to --concurrency (config/flags/_converter_warmup.py). The dataset is named
# `main`, the name the CLI-only path gives it. tests/aiperf/test_seamless_warmup.py resolves both argvs with
# AIPerf's own resolver: the benchmarks are the same but for the profiling phase's `seamless`.
#
# With phases that overlap, AIPerf's throughputs divide by the phase's window, which now opens before its first
# request (metrics/metric_dicts.py observation_duration): artifacts.py reads them over the requests' own span.
# Research and mocker measurements: docs/seamless-warmup.md.
PHASES_FILE = "aiperf-phases.yaml"
SEAMLESS_PHASES_YAML = """\
# infersweep: AIPerf's phases for a closed-loop point with a warm-up (infersweep/aiperf/flags.py
# seamless_warmup). Every value but `seamless` is overwritten by the command line's flags.
schemaVersion: "2.0"
benchmark:
  datasets:
    - name: main
      type: synthetic
  phases:
    - name: warmup
      type: concurrency
      concurrency: 1
      requests: 1
    - name: profiling
      type: concurrency
      concurrency: 1
      requests: 1
      seamless: true
"""


def seamless_warmup(args: argparse.Namespace) -> bool:
    """Whether this point's measured window follows its warm-up without a drain (PHASES_FILE): a closed-loop
    point with a warm-up and synthetic prompts. Not a rate point (its warm-up would be a rate phase the YAML
    does not declare: _converter_warmup.py builds one from --request-rate) and not a trace (--no-fixed-schedule
    is refused beside --config: config/flags/_config_flag_routing.py; a fixed schedule has no warm-up)."""
    workload = args.workload or {}
    trace = args.trace or workload.get("trace") or workload.get("fixed_schedule")
    return args.warmup > 0 and not args.request_rate and not trace


SEAMLESS_FLAGS = ("--config", "--warmup-concurrency")  # what build_argv adds for seamless_warmup, each with a value


def drained_argv(argv: list[str]) -> list[str]:
    """build_argv's command without SEAMLESS_FLAGS: the same point under AIPerf's default, the warm-up drained before
    the window (what benchmarks/seamless_window.py and tests/aiperf/test_seamless_warmup.py compare it with)."""
    return [x for i, x in enumerate(argv) if x not in SEAMLESS_FLAGS and not (i and argv[i - 1] in SEAMLESS_FLAGS)]


def warmup_ramp_s(workload: dict) -> float | None:
    """The warm-up's ramp in seconds (RAMP_KEY), checked: a number above 0, or None when the workload has none."""
    value = workload.get(RAMP_KEY)
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0):
        raise ValueError(f"--workload: {RAMP_KEY} must be seconds > 0, not {value!r}")
    return None if value is None else float(value)


def write_phases_file(out: Path) -> Path:
    """OUT/PHASES_FILE, the constant YAML build_argv's `--config` names."""
    path = Path(out) / PHASES_FILE
    path.write_text(SEAMLESS_PHASES_YAML, encoding="utf-8")
    return path


def build_argv(args: argparse.Namespace) -> list[str]:
    """The AIPerf command line, as a list. Every value is a separate item, never shell-parsed."""
    argv = [
        args.aiperf,
        "profile",
        "--model",
        args.model,
        "--url",
        args.url,
        "--endpoint-type",
        "chat",
        "--streaming",
        "--tokenizer",
        args.tokenizer,
        "--concurrency",
        str(args.concurrency),
    ]
    workload = dict(args.workload or {})
    ramp = warmup_ramp_s(workload)
    if ramp is not None and not seamless_warmup(args):
        raise ValueError(
            f"--workload: {RAMP_KEY} spreads the warm-up of a closed-loop point with a warm-up and synthetic "
            "prompts, whose window follows it seamlessly; this point is not one (a rate point, a trace or no "
            f"warm-up): remove {RAMP_KEY}"
        )
    if not workload.get("fixed_schedule"):
        # A fixed schedule replays the whole trace at its timestamps: the trace is the request count and
        # there is no warmup phase (its requests would be the trace's own first lines).
        argv += ["--request-count", str(args.requests)]
        if args.warmup > 0:
            argv += ["--warmup-request-count", str(args.warmup)]
        if seamless_warmup(args):
            argv += ["--config", str(Path(args.out) / PHASES_FILE), "--warmup-concurrency", str(args.concurrency)]
            if ramp is not None:
                # AIPerf steps the warm-up's session limit from 1 to the concurrency over these seconds (timing/
                # phase/runner.py _create_rampers, RampType.LINEAR); the profiling phase, seamless, takes each
                # slot a warm-up request frees, so it inherits the spread (SEAMLESS_PHASES_YAML)
                argv += [RAMP_FLAG, f"{ramp:g}"]
        entries = dataset_entries(workload, args.requests, args.warmup, trace=bool(args.trace))
        if entries:
            argv += ["--num-dataset-entries", str(entries)]
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
        argv += [
            "--input-file",
            str(trace),
            "--custom-dataset-type",
            trace_type,
            "--fixed-schedule" if fixed_schedule else "--no-fixed-schedule",
        ]
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


def point_folder(out: str, request_rate: float, repetition: int = 0) -> Path:
    """Where this point's files go. Every point of a rate sweep has the same concurrency (the in-flight
    cap), so an open-loop point gets a folder of its own rate: a later rate never finds an earlier one's
    good result.json and keeps it as its own. A repetition after the first gets `-r<K>` for the same
    reason (infersweep.results.table.point_identity reads `c<N>-r<K>` back)."""
    path = out if not request_rate else f"{out}-rate{request_rate:g}"
    return Path(path if not repetition else f"{path}-r{int(repetition)}")


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
