"""Small helpers shared by the CLI commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infersweep.recipe import RecipeError

if TYPE_CHECKING:
    from infersweep.recipe.overrides import Sets
from infersweep.text_table import table  # noqa: F401 (moved there so results/ can use it; re-exported)

SET_HELP = (
    "change a recipe field (dotted path, YAML value: workload.concurrency=[1,8], router=kv, "
    "topology.workers.tp=2; a mapping merges into the field) or a run parameter (prometheus-url, "
    "s3-prefix, model-cache-pvc, ...); the recipe is validated and rendered again"
)


def parse_sets(values: list[str] | None) -> "Sets":
    """`--set PATH=VALUE`s: recipe-field changes (dotted paths, YAML values) and run parameters, each checked
    here, once, for every command that takes --set (render, validate, submit, run): a mistake is refused
    before anything is loaded, rendered, written or sent. See infersweep.recipe.overrides."""
    from infersweep.recipe.overrides import Sets, classify

    out = Sets()
    for v in values or []:
        key, sep, val = v.partition("=")
        key = key.strip()
        if not sep or not key:
            raise RecipeError(
                f"--set {v!r}: write it as key=value (a recipe field as a dotted path, e.g. "
                "--set workload.concurrency=[1,8], or a run parameter, e.g. --set prometheus-url=http://prom:9090)"
            )
        if _bad_chars(val):
            raise RecipeError(f"--set {key}=...: a value may not contain a newline or NUL")
        kind, value = classify(key, val)
        if kind == "param":
            out.params[key] = val
        else:
            out.recipe.pop(key, None)  # the last --set of a path wins, in its place in the order
            out.recipe[key] = value
    if out.params:
        check_sets(out.params, _run_params())
    return out


def _run_params() -> list[str]:
    from infersweep.recipe.overrides import RUN_PARAMS

    return list(RUN_PARAMS)


# What each `--set` value must look like. A value is refused here, before anything is rendered or
# started, instead of failing mid-run inside a step (a bad `points` would only fail at the sweep's
# withParam, after the deployment took its GPUs). Names end up in Kubernetes object names and S3 keys.
# A parameter whose default is a cluster setting (s3-bucket, model-cache-size, ...) is checked by that
# setting's field in infersweep.cluster_settings, exactly as params/cluster.yaml is.


def _json(key: str, value: str, kind: type):
    import json

    try:
        data = json.loads(value)
    except ValueError as e:
        raise RecipeError(f"--set {key}=...: not JSON ({e}); give a JSON {kind.__name__}") from None
    if not isinstance(data, kind):
        raise RecipeError(f"--set {key}=...: must be a JSON {'list' if kind is list else 'object'}")
    return data


def _check_points(value: str) -> str:
    from infersweep.aiperf.point import PointError, parse_points, points_text

    try:
        return points_text(parse_points(value))  # the one parser of a point (infersweep/aiperf/point.py)
    except PointError as e:
        raise RecipeError(f"--set points=...: {e}") from None


def _check_workload(value: str) -> None:
    from infersweep.aiperf import TRACE_KEYS, WORKLOAD_FLAGS

    w = _json("workload", value, dict)
    unknown = sorted(set(w) - set(WORKLOAD_FLAGS) - set(TRACE_KEYS))
    if unknown:
        raise RecipeError(
            f"--set workload=...: unknown keys {unknown}; known: {sorted(WORKLOAD_FLAGS)} + trace, trace_type"
        )
    for k, v in w.items():
        if not isinstance(v, (str, int, float)) or isinstance(v, bool) or (isinstance(v, str) and _bad_chars(v)):
            raise RecipeError(f"--set workload=...: {k} must be a number or a one-line string")


def _check_slo(value: str) -> None:
    for k, v in _json("slo", value, dict).items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
            raise RecipeError(f"--set slo=...: {k} must be a number > 0")


def _number(key: str, value: str, lo: float, hi: float | None = None, integer: bool = False) -> None:
    try:
        x = int(value) if integer else float(value)
    except ValueError:
        x = None
    if x is None or x != x or x < lo or (hi is not None and x > hi) or (not integer and x in (float("inf"),)):
        rng = f"between {lo:g} and {hi:g}" if hi is not None else f">= {lo:g}"
        raise RecipeError(f"--set {key}={value[:60]!r}: must be {'an integer' if integer else 'a number'} {rng}")


def _bad_chars(value: str) -> bool:
    return any(ch in value for ch in "\n\r\x00")


def check_sets(sets: dict[str, str], known: list[str]) -> None:
    """Refuse `--set` keys that are not workflow parameters and values a step could not use."""
    import re

    from infersweep.cluster_settings import SET_FIELDS, check_set
    from infersweep.names import is_dns_label

    for key, value in sets.items():
        if key not in known:
            raise RecipeError(f"--set {key}: no such parameter; parameters are {sorted(known)}")
        if key != "dgd" and _bad_chars(value):
            raise RecipeError(f"--set {key}=...: a value may not contain a newline or NUL")
        if key in SET_FIELDS:
            check_set(key, value)
        elif key == "points":
            # a closed-loop point may leave request_rate out: the step template wants it in every item
            sets[key] = _check_points(value)
        elif key == "workload":
            _check_workload(value)
        elif key == "slo":
            _check_slo(value)
        elif key in ("ready-timeout-s", "point-timeout-s"):
            _number(key, value, 1)
        elif key == "max-error-rate":
            _number(key, value, 0, 1)
        elif key == "gpu-count":
            _number(key, value, 1, integer=True)
        elif key in ("dgd-name", "recipe") and not is_dns_label(value):
            raise RecipeError(
                f"--set {key}={value[:60]!r}: must be a Kubernetes name (lowercase letters, digits "
                "and '-', starting and ending with a letter or digit, at most 63)"
            )
        elif key == "dgd-api-version" and value not in ("v1beta1", "v1alpha1"):
            raise RecipeError(f"--set {key}={value[:60]!r}: must be v1beta1 or v1alpha1")
        elif key == "model-source" and not (value == "hf" or re.fullmatch(r"file:///\S+", value)):
            raise RecipeError(f"--set {key}={value[:60]!r}: use 'hf' or file:///absolute/path")
        elif key in ("model", "model-revision") and re.search(r"\s", value):
            raise RecipeError(f"--set {key}={value[:60]!r}: may not contain whitespace")
