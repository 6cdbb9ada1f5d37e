"""`infersweep predict RECIPE [-c N ...] [--json]`: the predicted curve per concurrency, nothing run.

Estimates come from AIConfigurator's silicon database (infersweep.predict.curve); a recipe the database
cannot model gets the reason instead, and exit code 3 so scripts can tell it from an error.
"""

from __future__ import annotations

import argparse
import json
import sys

from infersweep.cli_util import table
from infersweep.recipe import RecipeError, load_recipe

UNSUPPORTED_EXIT = 3


def _fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def run(a: argparse.Namespace) -> int:
    from infersweep.predict.aic import AicError
    from infersweep.predict.curve import predict_recipe

    r = load_recipe(a.recipe)
    if a.concurrency and any(c < 1 for c in a.concurrency):
        raise RecipeError("--concurrency: give positive integers, e.g. -c 1 8 32")
    try:
        pred = predict_recipe(r, a.concurrency or None)
    except AicError as e:
        print(f"infersweep predict: {e}", file=sys.stderr)
        return 1
    if a.json:
        print(json.dumps(pred.to_dict(), indent=2))
        return UNSUPPORTED_EXIT if pred.unsupported else 0
    if pred.unsupported:
        print(f"{r.name}: not modelled: {pred.unsupported}")
        return UNSUPPORTED_EXIT
    t = pred.target
    roles = ", ".join(f"{w.replicas} {role} x {w.label()}" for role, w in t.workers.items())
    print(f"{r.name}: predicted by {t.database} ({t.model_path}, {roles}, isl {t.isl} / osl {t.osl}"
          f"{f', prefix {t.prefix}' if t.prefix else ''}); nothing was run")
    rows = [(p.concurrency, _fmt(p.ttft_ms), _fmt(p.itl_ms, 2), _fmt(p.output_tok_s), _fmt(p.tok_s_per_user),
             _fmt(p.tok_s_per_gpu), p.error or "") for p in pred.points]
    print(table(["concurrency", "TTFT ms", "ITL ms", "output tok/s", "tok/s/user", "tok/s/GPU", "error"], rows))
    for n in t.notes:
        print(f"note: {n}")
    if t.mode == "disagg":
        print("note: disaggregated TTFT is a zero-queue estimate; queueing under load comes on top")
    print(f"({pred.stats.get('cached', 0)} estimates from cache, {pred.stats.get('computed', 0)} computed)")
    return 1 if any(p.error for p in pred.points) else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("predict", help="predicted TTFT/ITL/throughput per concurrency (AIConfigurator), nothing run")
    p.add_argument("recipe", help="recipe name or file")
    p.add_argument("-c", "--concurrency", type=int, nargs="+", help="concurrencies (default: the recipe's)")
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p.set_defaults(fn=run)
