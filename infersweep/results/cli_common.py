"""What report, compare and regress share: turning a RUN argument into a loaded Run.

RUN is a local run folder (`runs/<run-id>`, as `infersweep run --local` leaves it), or a run id / RECIPE/RUN_ID
in the store given by --store (s3://BUCKET/PREFIX or a folder; default $INFERSWEEP_STORE, else the cluster settings'
results bucket and prefix).
"""

from __future__ import annotations

import argparse
import contextlib
import os
from pathlib import Path
from typing import Iterator

from infersweep.errors import UserError
from infersweep.results.run import Run, load_run_folder
from infersweep.results.store import RunNotFound, RunStore


def default_store() -> str:
    if os.environ.get("INFERSWEEP_STORE"):
        return os.environ["INFERSWEEP_STORE"]
    from infersweep.cluster_settings import load_cluster_settings

    s3 = load_cluster_settings().s3
    return f"s3://{s3.bucket}/{s3.prefix}"


def add_store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        default=None,
        help="s3://BUCKET/PREFIX or a folder of published runs (default $INFERSWEEP_STORE, else the "
        "results bucket of params/cluster.yaml)",
    )


def add_include_invalid_arg(p: argparse.ArgumentParser, verb: str, help: str = "") -> None:
    """--include-invalid: points whose validity verdict is invalid are left out (and listed) unless given."""
    p.add_argument(
        "--include-invalid",
        action="store_true",
        help=help or f"also {verb} points whose validity verdict is invalid (left out by default, and listed)",
    )


class RunLookupError(UserError, LookupError):
    """A RUN argument that names no run: one line naming what was looked for and where."""


LOCAL_RUNS = Path("runs")  # `infersweep run --local`'s default --out: a bare run id is looked for there too


def local_run_dir(ref: str) -> Path | None:
    """The local run folder `ref` names: a folder, or a run id under ./runs/ (where `run --local` left it)."""
    path = Path(ref)
    if path.is_dir():
        return path
    if "/" not in ref and (LOCAL_RUNS / ref).is_dir():
        return LOCAL_RUNS / ref
    return None


def store_unreadable(location: str, e: Exception, what: str) -> RunLookupError | None:
    """The S3 client's error (no credentials, no endpoint) as one line; None for an error of another kind."""
    if type(e).__module__.split(".")[0] not in ("botocore", "boto3", "urllib3"):
        return None
    here = LOCAL_RUNS / "store"
    hint = f"--store {here} (the local runs' store here)" if here.is_dir() else "--store FOLDER"
    return RunLookupError(
        f"the results store {location} could not be read{what}: "
        f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}".rstrip(": ")
        + f" (give {hint}, or AWS credentials for the bucket)"
    )


@contextlib.contextmanager
def reading_store(location: str, what: str = "", head: str = "") -> Iterator[None]:
    """The S3 client's errors while reading the store (no credentials, no endpoint) leave as one RunLookupError
    line (store_unreadable) after `head`; any other error leaves as it came."""
    try:
        yield
    except Exception as e:  # the S3 client's errors (botocore is only imported when S3 is used)
        error = store_unreadable(location, e, what)
        if error is None:
            raise
        raise RunLookupError(f"{head}{error}") from None


def check_store_folder(location: str) -> None:
    """A --store that is neither s3:// nor an existing folder names no store: an error, not "no runs"."""
    if not str(location).startswith("s3://") and not Path(location).is_dir():
        raise RunLookupError(
            f"--store {location}: no such folder; give s3://BUCKET/PREFIX or a store folder "
            f"(local runs keep theirs in {LOCAL_RUNS / 'store'})"
        )


def load_run(ref: str, store: str | None) -> Run:
    """The run `ref` names: a local run folder, else a run id (or RECIPE/RUN_ID) in the store.

    A mistake (a file, a typo, a store that cannot be read: no credentials, no endpoint) is one RunLookupError
    line naming what was looked for and where, never the S3 client's traceback."""
    path = Path(ref)
    if store is None and (folder := local_run_dir(ref)) is not None:
        return load_run_folder(folder)
    if path.is_file():
        raise RunLookupError(
            f"{ref}: a file, not a run: give a run folder (runs/<run-id>, with summary/ inside) "
            "or a run id / RECIPE/RUN_ID in --store"
        )
    here = "" if store is not None else f"no run folder {ref!r} under {Path.cwd()}, and "
    location = store or default_store()
    if store is not None:
        check_store_folder(store)
    try:
        with reading_store(location, f" to look for run {ref!r}", here):
            return RunStore(location).load(ref)
    except RunNotFound:
        raise RunLookupError(
            f"{here}no run {ref!r} in the results store {location}"
            + ("" if store is not None else " (--store S picks another store)")
        ) from None


def label_runs(runs: list[Run]) -> dict[str, Run]:
    """Label each run by its recipe, by recipe@run-id where two runs share a recipe."""
    labels: dict[str, Run] = {}
    recipes = [r.label for r in runs]
    for r in runs:
        label = r.label if recipes.count(r.label) == 1 else f"{r.label}@{r.run_id}"
        base, k = label, 2
        while label in labels:  # the same recipe and run id twice (an experiment's balanced second pass)
            label, k = f"{base}#{k}", k + 1
        labels[label] = r
    return labels
