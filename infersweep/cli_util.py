"""Small helpers shared by the CLI commands."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from infersweep.errors import BadArgument
from infersweep.recipe import RecipeError

if TYPE_CHECKING:
    from infersweep.recipe.overrides import Sets
from infersweep.text_table import table  # noqa: F401 (moved there so results/ can use it; re-exported)

SET_HELP = (
    "change a recipe field (dotted path, YAML value: workload.concurrency=[1,8], router=kv, "
    "topology.workers.tp=2; a mapping merges into the field) or a run parameter (prometheus-url, "
    "s3-prefix, model-cache-pvc, ...); the recipe is validated and rendered again"
)


DGD_APIS = ["v1beta1", "v1alpha1"]  # v1alpha1: the Dynamo 1.3.1 release's, for a 1.3 operator


def add_set_arg(p: argparse.ArgumentParser) -> None:
    """--set KEY=VALUE (repeatable): every command that renders a recipe (render, validate, submit, run)."""
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help=SET_HELP)


def add_dgd_api_arg(p: argparse.ArgumentParser, default: str | None = "v1beta1", help: str | None = None) -> None:
    p.add_argument("--dgd-api", choices=DGD_APIS, default=default, help=help)


def add_no_cache_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="render even if this recipe was rendered before from the same inputs (see workflows/render_cache.py)",
    )


def key_values(items: list[str], flag: str, form: str) -> dict[str, str]:
    """`KEY=VALUE` arguments as a mapping (the first '=' splits); one without '=' is refused, naming `form`."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise BadArgument(f"{flag} {item!r}: give {form}")
        out[key] = value
    return out


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
        given = out.params if kind == "param" else out.recipe
        if key in given and given[key] != (val if kind == "param" else value):
            # two values for one field: which one the user meant is not ours to guess (issue 38)
            raise RecipeError(f"--set {key}: given twice with different values; keep the one you mean")
        if kind == "param":
            out.params[key] = val
        else:
            out.recipe[key] = value
    if out.params:
        check_sets(out.params, _run_params())
    return out


def _run_params() -> list[str]:
    from infersweep.pipeline_params import RUN_PARAMS

    return list(RUN_PARAMS)


def _bad_chars(value: str) -> bool:
    from infersweep.pipeline_params import bad_chars

    return bad_chars(value)


def check_sets(sets: dict[str, str], known: list[str]) -> None:
    """Refuse `--set` keys that are not workflow parameters and values a step could not use: each parameter's
    check is declared with it (infersweep/pipeline_params.py); one whose default is a cluster setting is checked
    by that setting's field, exactly as params/cluster.yaml is (infersweep.cluster_settings.check_set)."""
    from infersweep.cluster_settings import check_set
    from infersweep.pipeline_params import SETTINGS, check_value

    for key, value in sets.items():
        if key not in known:
            raise RecipeError(f"--set {key}: no such parameter; parameters are {sorted(known)}")
        passed_on = check_value(key, value)
        if key in SETTINGS:
            check_set(key, value)
        if passed_on is not None:
            sets[key] = passed_on


def writable_folder(value: str | os.PathLike, flag: str = "--out") -> Path:
    """The folder a command will write into, checked now and left as it was (bad input touches nothing): a path
    that is a file, or that cannot be created or written (no such parent, /proc, no permission), is one line
    naming the flag, never an OSError's traceback from deep inside the command."""
    path = Path(value)
    if path.exists() and not path.is_dir():
        raise RecipeError(f"{flag} {value}: is a file; give a folder to write into")
    missing = [p for p in [path, *path.parents] if not p.exists()]
    try:
        path.mkdir(parents=True, exist_ok=True)  # the one honest test of "can be created" (root, /proc, ...)
    except OSError as e:
        raise RecipeError(
            f"{flag} {value}: cannot create that folder ({e.strerror}); give a folder you can write to"
        ) from None
    finally:
        for p in missing:  # deepest first: what this check created goes again
            try:
                p.rmdir()
            except OSError:
                pass
    if not missing and not os.access(path, os.W_OK | os.X_OK):
        raise RecipeError(f"{flag} {value}: cannot write into that folder; give a folder you can write to")
    return path
