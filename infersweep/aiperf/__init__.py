"""The AIPerf contract: what a benchmark point gives AIPerf and what AIPerf leaves behind. Standard library
only: the AIPerf image (images/aiperf.Dockerfile) copies this package, without an infersweep install.

- flags.py      flags in: the recipe workload keys AIPerf takes, the per-point seed, `build_argv`, the
                point folder layout, the child's environment.
- artifacts.py  files out: the artifact names, `read_point` (one artifact dir -> an honest result) and
                `iter_profiling_records`, across AIPerf 0.10-0.13.
- point_run.py  one point end to end in the AIPerf image: AIPerf as a child, its retries, result.json
                (steps/aiperf_point.py is its CLI).
- point.py      a benchmark point (one AIPerf run at one load): one type and one parser for every place
                that builds or reads one.
- adaptive.py   when a point has measured enough: the adaptive point's decision and its `stop_reason`.
- steadiness.py is a window of requests steady: the rule the point step and infersweep.results.validity share.
- server_export.py  the Dynamo frontend's own prompt-cache count, from the server metrics AIPerf scraped.
- phase_overlap.py  a window that follows its warm-up without a drain: its throughputs over the requests' own
                span.
- student_t.py  Student's t (CDF and quantiles): the steadiness rule's trend test, and infersweep.results.noise.
"""

from infersweep.aiperf.artifacts import (
    DISTRIBUTIONS,
    LOG_FILE,
    MANIFEST_FILE,
    RECORDS_FILE,
    SCALARS,
    STATS,
    STATUSES,
    SUMMARY_FILE,
    RecordCounter,
    iter_profiling_records,
    metric_name,
    read_point,
)
from infersweep.aiperf.flags import (
    ARTIFACT_SUBDIR,
    CONSOLE_LOG_FILE,
    DEFAULT_BASE_SEED,
    LENGTH_KEYS,
    LOCAL_TOKENIZER_REPO,
    RESULT_FILE,
    REUSE_KEYS,
    TRACE_KEYS,
    WORKLOAD_FLAGS,
    WORKLOAD_SWITCHES,
    build_argv,
    child_env,
    choose_seed,
    point_folder,
    point_seed,
    tokenizer_as_cached_hub_id,
    workload_argv,
)

__all__ = [
    "ARTIFACT_SUBDIR",
    "CONSOLE_LOG_FILE",
    "DEFAULT_BASE_SEED",
    "DISTRIBUTIONS",
    "LOCAL_TOKENIZER_REPO",
    "LOG_FILE",
    "MANIFEST_FILE",
    "RECORDS_FILE",
    "RecordCounter",
    "RESULT_FILE",
    "REUSE_KEYS",
    "SCALARS",
    "STATS",
    "STATUSES",
    "SUMMARY_FILE",
    "LENGTH_KEYS",
    "TRACE_KEYS",
    "WORKLOAD_FLAGS",
    "WORKLOAD_SWITCHES",
    "build_argv",
    "child_env",
    "choose_seed",
    "iter_profiling_records",
    "metric_name",
    "point_folder",
    "point_seed",
    "read_point",
    "tokenizer_as_cached_hub_id",
    "workload_argv",
]
