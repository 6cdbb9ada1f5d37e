"""The AIPerf contract (file map: see the split commit). Standard library only."""

from infersweep.aiperf.artifacts import (  # noqa: F401
    ARTIFACT_SUBDIR, CONSOLE_LOG_FILE, DEFAULT_BASE_SEED, DISTRIBUTIONS, LOCAL_TOKENIZER_REPO, LOG_FILE, MANIFEST_FILE,
    RECORDS_FILE, RESULT_FILE, REUSE_KEYS, SCALARS, STATS, STATUSES, SUMMARY_FILE, TRACE_KEYS, WORKLOAD_FLAGS,
    WORKLOAD_SWITCHES, build_argv, child_env, choose_seed, iter_profiling_records, point_folder, point_seed, read_point,
    tokenizer_as_cached_hub_id, workload_argv)
