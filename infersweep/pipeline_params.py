"""The pipeline template's parameters, each declared once: name, help, default, how a `--set` of it is checked,
and whether a `--set` may name it at all.

As a step's `Option`s are (infersweep/step_interface.py), a parameter is one `PipelineParam`, and what lists
the parameters follows from `PARAMS`: the template's arguments and the defaults a submit may leave out
(workflows/pipeline.py PIPELINE_PARAMS, pipeline_defaults), the GPU guard's lock parameters
(workflows/gpu_guard.py), the run parameters a `--set` passes as they are and the derived ones it refuses with
what to set instead (infersweep/recipe/overrides.py RUN_PARAMS, DERIVED), the cluster settings a `--set` is
checked with (infersweep/cluster_settings.py SET_FIELDS) and the value checks (infersweep/cli_util.py
check_sets). tests/workflows/test_pipeline_params.py holds the declarations to every rendered template.

Standard library only, no Hera and no pydantic: a `--set` is checked before anything heavy is imported. A
parameter whose default is a cluster setting (`setting`) is checked by that setting's field, exactly as
params/cluster.yaml is (cluster_settings.check_set); every other check is a function here that raises a
one-line RecipeError naming the key.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Callable

from infersweep.aiperf import LENGTH_KEYS, TRACE_KEYS, WORKLOAD_FLAGS
from infersweep.aiperf.point import PointError, parse_points, points_text
from infersweep.aiperf.steadiness import thresholds_from_workload
from infersweep.names import is_dns_label
from infersweep.params_files import RecipeError

# A check gets the key and the value as given; it raises RecipeError (one line naming the key) or returns the
# value to pass on instead (None: the value as given).
Check = Callable[[str, str], "str | None"]

MAX_LANES = 4  # the span template's gpu-lock-N parameters: at most this many GPU-guard locks per run
LOCK_PREFIX = "gpu-lock-"
GPU_POOLS_CONFIGMAP = "infersweep-gpu-pools"  # the GPU guard's semaphores (workflows/gpu_guard.py)

_TOPOLOGY = "topology.<role>.replicas / .tp / .dp (workers, or prefill + decode) and gpu.count to match"
LOCK_ADVICE = (
    "the GPU guard's locks follow from the recipe's GPU count; set "
    + _TOPOLOGY
    + " (or gpu_pools in params/cluster.yaml)"
)


@dataclass(frozen=True)
class PipelineParam:
    """One parameter of the pipeline template.

    `default`: the value a submit may leave out ('' is a value; None with no `setting`: the submit must give
    it, Argo refuses the workflow otherwise). `setting`: the default is this params/cluster.yaml field (dotted
    attribute path of ClusterSettings) and a `--set` is checked by its type. `derived`: the parameter is
    rendered from the recipe, and this says what to set instead; `recipe_field`: a `--set` of the name is the
    recipe field of the same name. A parameter that is neither is a run parameter, passed as it is.
    """

    name: str
    help: str  # the template parameter's description (the Argo UI's submit form)
    default: str | None = None
    setting: str | None = None
    enum: tuple[str, ...] | None = None
    check: Check | None = None
    multiline: bool = False  # the value may hold newlines (the DGD's YAML)
    derived: str | None = None
    recipe_field: bool = False

    def __post_init__(self) -> None:
        if self.default is not None and self.setting:
            raise ValueError(f"{self.name}: give a default or a setting, not both")
        if self.derived and self.recipe_field:
            raise ValueError(f"{self.name}: derived or a recipe field, not both")

    @property
    def is_run_param(self) -> bool:
        return not self.derived and not self.recipe_field


# ---------------------------------------------------------------------------------------------- the checks
# A value is refused at `--set`, before anything is rendered or started, instead of failing mid-run inside a
# step (a bad `points` would only fail at the sweep's withParam, after the deployment took its GPUs). Names end
# up in Kubernetes object names and S3 keys.


def bad_chars(value: str) -> bool:
    return any(ch in value for ch in "\n\r\x00")


def _json(key: str, value: str, kind: type):
    try:
        data = json.loads(value)
    except ValueError as e:
        raise RecipeError(f"--set {key}=...: not JSON ({e}); give a JSON {kind.__name__}") from None
    if not isinstance(data, kind):
        raise RecipeError(f"--set {key}=...: must be a JSON {'list' if kind is list else 'object'}")
    return data


def json_points(key: str, value: str) -> str:
    """The sweep: the one parser of a point (infersweep/aiperf/point.py). A closed-loop point may leave
    request_rate out; the step template wants it in every item, so the normalised text is passed on."""
    try:
        return points_text(parse_points(value))
    except PointError as e:
        raise RecipeError(f"--set {key}=...: {e}") from None


def json_workload(key: str, value: str) -> None:
    """The AIPerf workload: known keys only (its flags and the trace's), each a number or a one-line string."""
    w = _json(key, value, dict)
    unknown = sorted(set(w) - set(WORKLOAD_FLAGS) - set(TRACE_KEYS) - set(LENGTH_KEYS))
    if unknown:
        raise RecipeError(
            f"--set {key}=...: unknown keys {unknown}; known: {sorted(WORKLOAD_FLAGS)} + trace, trace_type + "
            + ", ".join(LENGTH_KEYS)
        )
    for k, v in w.items():
        if not isinstance(v, (str, int, float)) or isinstance(v, bool) or (isinstance(v, str) and bad_chars(v)):
            raise RecipeError(f"--set {key}=...: {k} must be a number or a one-line string")
    try:
        thresholds_from_workload(w)  # the steadiness thresholds come all together or not at all
    except ValueError as e:
        raise RecipeError(f"--set {key}=...: {e}") from None


def json_positive_bounds(key: str, value: str) -> None:
    """SLO bounds: a JSON object of numbers > 0."""
    for k, v in _json(key, value, dict).items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
            raise RecipeError(f"--set {key}=...: {k} must be a number > 0")


def number_range(lo: float, hi: float | None = None, integer: bool = False) -> Check:
    """A number (an integer with `integer`) in [lo, hi] (hi None: no upper bound); inf and nan are refused."""

    def check(key: str, value: str) -> None:
        try:
            x = int(value) if integer else float(value)
        except ValueError:
            x = None
        if x is None or x != x or x < lo or (hi is not None and x > hi) or (not integer and x == float("inf")):
            rng = f"between {lo:g} and {hi:g}" if hi is not None else f">= {lo:g}"
            raise RecipeError(f"--set {key}={value[:60]!r}: must be {'an integer' if integer else 'a number'} {rng}")

    check.__name__ = f"{'integer' if integer else 'number'}_range"
    return check


def dns_label(key: str, value: str) -> None:
    if not is_dns_label(value):
        raise RecipeError(
            f"--set {key}={value[:60]!r}: must be a Kubernetes name (lowercase letters, digits "
            "and '-', starting and ending with a letter or digit, at most 63)"
        )


def no_whitespace(key: str, value: str) -> None:
    if re.search(r"\s", value):
        raise RecipeError(f"--set {key}={value[:60]!r}: may not contain whitespace")


def model_source(key: str, value: str) -> None:
    if not (value == "hf" or re.fullmatch(r"file:///\S+", value)):
        raise RecipeError(f"--set {key}={value[:60]!r}: use 'hf' or file:///absolute/path")


def one_of(*choices: str) -> Check:
    def check(key: str, value: str) -> None:
        if value not in choices:
            raise RecipeError(f"--set {key}={value[:60]!r}: must be {' or '.join(choices)}")

    check.__name__ = "one_of"
    return check


# ---------------------------------------------------------------------------------------------- the parameters
# In the template's order (the Argo UI lists them so).

_API_VERSIONS = ("v1beta1", "v1alpha1")

PARAMS: tuple[PipelineParam, ...] = (
    PipelineParam(
        "recipe",
        "recipe name (label and S3 key component)",
        check=dns_label,
        derived="it is the recipe's name; a variant under another name is a new recipe file (copy the recipe)",
    ),
    PipelineParam(
        "dgd-name",
        "base name of the DynamoGraphDeployment; each run's DGD is <base>-<hash of the workflow name>",
        check=dns_label,
        derived="it follows from the recipe's name; a variant under another name is a new recipe file",
    ),
    PipelineParam(
        "dgd",
        "the DynamoGraphDeployment to benchmark, as YAML",
        multiline=True,
        derived="the DGD is rendered from the recipe; set the fields it comes from (topology.*, router, "
        "engine_args, worker_env, image, ...)",
    ),
    PipelineParam(
        "dgd-api-version",
        "DGD apiVersion: v1beta1 (the Dynamo 1.6.1 release) or v1alpha1 (the 1.3.1 release, for a 1.3 operator)",
        default="v1beta1",
        enum=_API_VERSIONS,
        check=one_of(*_API_VERSIONS),
        derived="use --dgd-api v1alpha1",
    ),
    PipelineParam(
        "model", "Hugging Face model id (also the served model name)", check=no_whitespace, recipe_field=True
    ),
    PipelineParam(
        "model-revision",
        "model commit to pin",
        check=no_whitespace,
        derived="it is the model's pinned revision in params/models/<model>.yaml; set model=<another catalog model>",
    ),
    PipelineParam(
        "draft-model",
        "speculative-decoding draft model to cache beside the model ('' = none)",
        default="",
        derived="it follows from speculative; set speculative.draft_model (or speculative.mode)",
    ),
    PipelineParam(
        "model-source", "'hf' (download from the hub) or file:///path on the PVC", default="hf", check=model_source
    ),
    PipelineParam("model-cache-pvc", "PVC holding the model cache (created if missing)", setting="model_cache.pvc"),
    PipelineParam("model-cache-size", "size of the PVC if it must be created", setting="model_cache.size"),
    PipelineParam(
        "storage-class", "storage class for a new PVC ('' = cluster default)", setting="model_cache.storage_class"
    ),
    PipelineParam(
        "ready-timeout-s",
        "fail when the deployment is not serving after this many seconds",
        default="1800",
        check=number_range(1),
    ),
    PipelineParam(
        "points",
        "the sweep as JSON: [{concurrency, requests, warmup}, ...]",
        check=json_points,
        derived="the sweep follows from the workload; set workload.concurrency (or workload.request_rate), "
        "workload.requests_per_concurrency, workload.min_requests, workload.warmup_requests or workload.warmup_rounds",
    ),
    PipelineParam(
        "workload",
        "the AIPerf workload as JSON: isl/osl, seq_dist, prefix_tokens/num_prefixes, turns, trace; "
        "max_requests_factor/ci95_target (how far a point may be extended)",
        check=json_workload,
        recipe_field=True,
    ),
    PipelineParam(
        "max-error-rate",
        "failed-request fraction a point may have and still count",
        default="0.0",
        check=number_range(0, 1),
        derived="set workload.max_error_rate",
    ),
    PipelineParam(
        "point-timeout-s",
        "stop a point gracefully after this many seconds",
        default="3600",
        check=number_range(1),
        derived="set workload.point_timeout_s",
    ),
    PipelineParam(
        "gpu-count",
        "GPUs the deployment uses (for tok/s/GPU)",
        check=number_range(1, integer=True),
        derived=f"the GPU count follows from the topology; set {_TOPOLOGY}",
    ),
    PipelineParam("slo", "SLO bounds as JSON", check=json_positive_bounds, recipe_field=True),
    PipelineParam("prometheus-url", "Prometheus base URL ('' skips server metrics)", setting="prometheus_url"),
    PipelineParam("s3-bucket", "bucket for published results", setting="s3.bucket"),
    PipelineParam("s3-prefix", "key prefix under which runs are published", setting="s3.prefix"),
    PipelineParam(
        "baseline-prefix", "S3 prefix of the recipe's baseline run to check for regressions ('' skips)", default=""
    ),
    PipelineParam(
        "regression", "regression tolerances per metric and noise z as JSON", default="{}", recipe_field=True
    ),
    PipelineParam(
        "context",
        "the run's context as JSON (recipe hash, images, model revision, topology)",
        default="{}",
        derived="the run's context is computed from the recipe; set the recipe fields",
    ),
) + tuple(
    PipelineParam(
        f"{LOCK_PREFIX}{i}",
        f"GPU guard: semaphore key {i} of {MAX_LANES} in ConfigMap {GPU_POOLS_CONFIGMAP} (set by infersweep from "
        "the recipe's GPU count; see workflows/gpu_guard.py)",
        derived=LOCK_ADVICE,
    )
    for i in range(1, MAX_LANES + 1)
)

BY_NAME: dict[str, PipelineParam] = {p.name: p for p in PARAMS}
LOCK_PARAMS: list[str] = [p.name for p in PARAMS if p.name.startswith(LOCK_PREFIX)]
RUN_PARAMS: tuple[str, ...] = tuple(p.name for p in PARAMS if p.is_run_param)
SETTINGS: dict[str, str] = {p.name: p.setting for p in PARAMS if p.setting}  # parameter -> cluster setting


def check_value(key: str, value: str) -> str | None:
    """The stdlib part of a `--set KEY=VALUE` check: one line per mistake, naming the key; the value to pass on
    when the check normalises it (points). A cluster setting's type is checked by cluster_settings.check_set."""
    p = BY_NAME.get(key)
    if not (p is not None and p.multiline) and bad_chars(value):
        raise RecipeError(f"--set {key}=...: a value may not contain a newline or NUL")
    if p is None or p.check is None:
        return None
    return p.check(key, value)
