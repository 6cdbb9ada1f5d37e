"""`infersweep slo-search RECIPE --local`: the highest concurrency (or request rate) meeting the recipe's SLOs."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from infersweep.commands.run import add_worker_options, check_local
from infersweep.metrics import SLO_KEYS, canonical  # the results table's metric names (docs/columns.md)
from infersweep.recipe import RecipeError


def _slo(items: list[str]) -> dict[str, float] | None:
    if not items:
        return None
    out = {}
    for item in items:
        key, _, value = item.partition("=")
        try:
            key = canonical(key, f"--slo {item}", warn=True)  # an old spelling: mapped, with a warning
        except ValueError:
            key = None
        if key not in SLO_KEYS:
            raise RecipeError(f"--slo {item}: unknown bound {item.partition('=')[0]!r}; use one of {list(SLO_KEYS)}")
        try:
            out[key] = float(value)
        except ValueError:
            raise RecipeError(f"--slo {item}: {value!r} is not a number") from None
        if not out[key] > 0:
            raise RecipeError(f"--slo {item}: a bound must be above 0")
    return out


def slo_search(a: argparse.Namespace) -> int:
    check_local(
        a,
        "slo-search runs against a local deployment for now: add --local "
        "(on a cluster, run a sweep and read the table's slo_pass column)",
    )
    slo = _slo(a.slo)  # bad bounds are refused before anything starts
    from infersweep.cli_util import writable_folder
    from infersweep.local.slo_search import slo_search_local

    out = writable_folder(a.out) / f"slo-search-{time.strftime('%Y%m%d-%H%M%S')}"
    search, _ = slo_search_local(
        a.recipe,
        out=out,
        lo=a.lo,
        hi=a.hi,
        axis=a.axis,
        slo=slo,
        rel_tol=a.rel_tol,
        workers=a.workers,
        weights=a.weights,
        gpu_python=a.gpu_python,
        engine_cache=Path(a.engine_cache) if a.engine_cache else None,
    )
    print(search.summary())
    print(f"probes and verdicts: {out}/slo-search.json; points: {out}/points/")
    return 0 if search.best is not None else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("slo-search", help="bisect for the highest load meeting the recipe's SLOs")
    p.add_argument("recipe", help="recipe name or file")
    p.add_argument(
        "--local",
        action="store_true",
        help="against one local deployment (Dynamo mocker or, --workers gpu, real engines)",
    )
    p.add_argument("--axis", choices=["concurrency", "request_rate"], default="concurrency")
    p.add_argument("--lo", type=float, default=1, help="lowest load to try (default 1)")
    p.add_argument("--hi", type=float, default=64, help="highest load to try (default 64)")
    p.add_argument("--rel-tol", type=float, default=0.1, help="request_rate: stop when miss/best <= 1 + this")
    p.add_argument(
        "--slo",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"an SLO bound instead of the recipe's ({', '.join(SLO_KEYS)})",
    )
    p.add_argument("--out", default="runs", help="folder for the search (default ./runs)")
    add_worker_options(p)
    p.set_defaults(fn=slo_search)
