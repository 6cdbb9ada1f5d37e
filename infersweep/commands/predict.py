"""`infersweep predict RECIPE|EXPERIMENT [-c N ...] [--json]`: the predicted curve per concurrency, nothing run.

Estimates come from AIConfigurator's silicon database (infersweep.predict.curve); a recipe the database
cannot model gets the reason instead, and exit code 3 so scripts can tell it from an error. An experiment
(params/experiments/*.yaml, by name or file) gets every treatment's curve and the treatments ranked by its
question (infersweep.predict.rank); exit 3 there means no treatment could be modelled.
"""

from __future__ import annotations

import argparse
import json

from infersweep.cli_util import table
from infersweep.recipe import RecipeError, load_recipe

UNSUPPORTED_EXIT = 3


def _fmt(v, digits=1):
    return "-" if v is None else f"{v:.{digits}f}"


def is_experiment(ref: str) -> bool:
    """An experiment file (a mapping with `question`) or the name of one in params/experiments/."""
    from pathlib import Path

    from infersweep.paths import params_dir

    p = Path(ref)
    if p.is_file():
        import yaml

        try:
            data = yaml.safe_load(p.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            return False  # the recipe loader reports the file's problem
        return isinstance(data, dict) and "question" in data
    return not p.suffix and (params_dir() / "experiments" / f"{ref}.yaml").is_file()


def _curve_rows(pred) -> list[tuple]:
    return [
        (
            p.concurrency,
            _fmt(p.ttft_ms),
            p.ttft_band().text() if p.ttft_band() else "-",
            _fmt(p.itl_ms, 2),
            _fmt(p.output_tok_s),
            _fmt(p.tok_s_per_user),
            _fmt(p.tok_s_per_gpu),
            p.error or "",
        )
        for p in pred.points
    ]


CURVE_HEAD = [
    "concurrency",
    "TTFT ms",
    "TTFT closed loop ms",
    "ITL ms",
    "output tok/s",
    "tok/s/user",
    "tok/s/GPU",
    "error",
]


def _where(t) -> str:
    roles = ", ".join(f"{w.replicas} {role} x {w.label()}" for role, w in t.workers.items())
    return (
        f"{t.database} ({t.model_path}, {roles}, isl {t.isl} / osl {t.osl}{f', prefix {t.prefix}' if t.prefix else ''})"
    )


def _collapsed(rankings) -> list[tuple]:
    """One row per metric and run of consecutive concurrencies with the same order (c1-c16: a > b)."""
    rows: list[list] = []
    for r in rankings:
        if rows and rows[-1][0] == r.metric and rows[-1][3] == r.text():
            rows[-1][2] = r.concurrency
        else:
            rows.append([r.metric, r.concurrency, r.concurrency, r.text()])
    return [(m, f"c{lo}" if lo == hi else f"c{lo}-c{hi}", text) for m, lo, hi, text in rows]


def run_experiment(a: argparse.Namespace) -> int:
    from infersweep.experiment.spec import load_experiment
    from infersweep.predict.rank import TIE_PCT, predict_treatments, slo_verdict

    e = load_experiment(a.recipe)
    q = e.spec.question
    claims = ([("claim", e.spec.claim)] if e.spec.claim else []) + [
        ("seed", c) for c in (e.spec.seed.expect if e.spec.seed else [])
    ]
    # AIConfigurator not reachable: AicError, a UserError of exit 1 (infersweep/cli.py prints its one line)
    ep = predict_treatments(
        e.name,
        [(t.name, t.recipe) for t in e.treatments],
        q.metrics,
        concurrencies=a.concurrency or q.concurrency,
        slo=q.slo,
        claims=claims,
    )
    if a.json:
        print(json.dumps(ep.to_dict(), indent=2))
        return UNSUPPORTED_EXIT if len(ep.unsupported) == len(ep.predictions) else 0
    print(
        f"experiment {e.name}: {len(e.treatments)} treatments predicted, nothing was run"
        + (f"; SLOs {json.dumps(ep.slo)}" if ep.slo else "")
    )
    errors = False
    for name, pred in ep.predictions.items():
        print(f"\n{name}: " + (f"not modelled: {pred.unsupported}" if pred.unsupported else _where(pred.target)))
        if pred.unsupported:
            continue
        slo = [slo_verdict(p, ep.slo) for p in pred.points]
        rows = [
            (*row[:-1], "-" if ok is None else ("pass" if ok else "fail: " + why), row[-1])
            for row, (ok, why) in zip(_curve_rows(pred), slo, strict=True)
        ]
        print(table(CURVE_HEAD[:-1] + ["SLO (predicted)", "error"], rows))
        for n in pred.target.notes:
            print(f"note: {n}")
        errors |= any(p.error for p in pred.points)
    print(f"\nranked by the question (best first; '=' within {TIE_PCT:g} %)")
    if ep.rankings:
        print(table(["metric", "concurrency", "predicted order"], _collapsed(ep.rankings)))
    else:
        print("no ranking: fewer than two treatments have a prediction")
    for m, why in ep.not_predicted.items():
        print(f"not ranked: {m}: {why}")
    for name, why in ep.unsupported.items():
        print(f"not ranked: treatment {name}: {why}")
    for group in ep.identical:
        print(f"identical predictions: {', '.join(group)} (what separates them is outside the estimator; see notes)")
    if any(p.target and p.target.mode == "disagg" for p in ep.predictions.values()):
        print("note: disaggregated TTFT is a zero-queue estimate; queueing under load comes on top")
    if ep.claims:
        print("\nclaims, as predicted:")
        for c in ep.claims:
            print(f"  {c.verdict:<13} {c.text}: {c.detail}")
    if len(ep.unsupported) == len(ep.predictions):
        return UNSUPPORTED_EXIT
    return 1 if errors else 0


def run(a: argparse.Namespace) -> int:
    from infersweep.predict.curve import predict_recipe

    if a.concurrency and any(c < 1 for c in a.concurrency):
        raise RecipeError("--concurrency: give positive integers, e.g. -c 1 8 32")
    if is_experiment(a.recipe):
        return run_experiment(a)
    try:
        r = load_recipe(a.recipe)
    except RecipeError as e:
        if "no recipe file or recipe name" in str(e):  # neither: name both catalogs
            raise RecipeError(
                f"{a.recipe}: no recipe or experiment of that name or file; `infersweep recipes` and "
                "`infersweep experiment list` list the names"
            ) from None
        raise
    pred = predict_recipe(r, a.concurrency or None)  # AicError: exit 1, one line (as above)
    if a.json:
        print(json.dumps(pred.to_dict(), indent=2))
        return UNSUPPORTED_EXIT if pred.unsupported else 0
    if pred.unsupported:
        print(f"{r.name}: not modelled: {pred.unsupported}")
        return UNSUPPORTED_EXIT
    t = pred.target
    print(f"{r.name}: predicted by {_where(t)}; nothing was run")
    print(table(CURVE_HEAD, _curve_rows(pred)))
    for n in t.notes:
        print(f"note: {n}")
    print(
        "note: TTFT ms is the zero-queue estimate; a closed-loop sweep (AIPerf --concurrency, fixed lengths) "
        "queues its prefills: its mean TTFT lies in 'TTFT closed loop ms', from that estimate up to the lockstep "
        "queue t_prefill x (c/replicas + 1) / 2 (infersweep/predict/queueing.py)"
    )
    print(f"({pred.stats.get('cached', 0)} estimates from cache, {pred.stats.get('computed', 0)} computed)")
    return 1 if any(p.error for p in pred.points) else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "predict",
        help="predicted TTFT/ITL/throughput per concurrency (AIConfigurator), nothing run; "
        "an experiment's treatments ranked by its question",
    )
    p.add_argument("recipe", metavar="RECIPE|EXPERIMENT", help="recipe name or file, or experiment name or file")
    p.add_argument(
        "-c",
        "--concurrency",
        type=int,
        nargs="+",
        help="concurrencies (default: the recipe's, or the experiment question's)",
    )
    p.add_argument("--json", action="store_true", help="print the prediction as JSON")
    p.set_defaults(fn=run)
