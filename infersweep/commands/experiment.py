"""`infersweep experiment plan FILE|NAME`: an experiment's treatments in run order, the restart class of each
step, and the counts against one workflow per recipe; `experiment list`: the experiment files."""

from __future__ import annotations

import argparse

from infersweep.cli_util import table


def run(a: argparse.Namespace) -> int:
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.restart import RestartClass
    from infersweep.experiment.spec import all_experiment_paths, load_experiment

    if a.action == "list":
        rows = []
        for p in all_experiment_paths():
            plan = make_plan(load_experiment(p))
            counts = plan.counts()
            rows.append((plan.experiment.name, len(plan.steps), counts.get(RestartClass.FULL, 0),
                         plan.experiment.spec.description))
        print(table(["name", "treatments", "full deploys", "description"], rows))
        return 0
    if not a.file:
        from infersweep.recipe import RecipeError

        raise RecipeError(f"infersweep experiment {a.action} FILE: give an experiment file or name "
                          "(`infersweep experiment list`)")
    print(make_plan(load_experiment(a.file)).text())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("experiment", help="plan a comparison of deployments with the fewest redeploys")
    p.add_argument("action", choices=["plan", "list"])
    p.add_argument("file", nargs="?", help="params/experiments/<name>.yaml or its name")
    p.set_defaults(fn=run)
