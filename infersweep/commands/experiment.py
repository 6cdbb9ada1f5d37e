"""`infersweep experiment plan FILE|NAME`: an experiment's treatments in run order, the restart class of each
step, and the counts against one workflow per recipe; `experiment list`: the experiment files;
`experiment render FILE [--out DIR]`: the experiment's WorkflowTemplate and the Workflow that references it
(workflows/experiment.py), validated;
`experiment run --local FILE [--resume RUN_DIR]`: that Workflow run here (infersweep.local.experiment_run);
`experiment report FILE TREATMENT=RUN ...`: the experiment report from the treatments' runs (every treatment
needs a run of its own recipe hash; a run that measured nothing is reported and the exit status is 1)."""

from __future__ import annotations

import argparse
import json

from infersweep.cli_util import add_dgd_api_arg, table, writable_folder


def _report(a: argparse.Namespace) -> int:
    from infersweep.experiment.report import experiment_report
    from infersweep.experiment.spec import load_experiment
    from infersweep.recipe import RecipeError
    from infersweep.recipe_context import recipe_hash
    from infersweep.results.cli_common import load_run
    from infersweep.results.evidence import check_recipe_hash

    e = load_experiment(a.file)
    names = [t.name for t in e.treatments]
    refs: dict[str, str] = {}
    for item in a.runs:
        name, sep, ref = item.partition("=")
        if not sep or name not in names:
            raise RecipeError(f"experiment report: {item!r}: give TREATMENT=RUN with TREATMENT one of {names}")
        refs[name] = ref
    missing = [n for n in names if n not in refs]
    if missing:
        raise RecipeError(
            f"experiment report {e.name}: no run given for treatment(s) {', '.join(missing)}: "
            f"give {' '.join(f'{n}=RUN' for n in missing)} (a report without them is no answer)"
        )
    tables, runs = {}, {}
    for name, ref in refs.items():
        run = load_run(ref, a.store)
        # A run of another recipe is not evidence for this treatment (infersweep.results.evidence).
        expected = recipe_hash(e.treatment(name).recipe)
        check_recipe_hash(
            name, f"{ref} ({run.run_id})", run.context.get("recipe_hash"), expected, f"experiment report {e.name}"
        )
        tables[name], runs[name] = run.table, run
    notes = _comparable(e, runs, a)
    report = experiment_report(e, tables)
    for note in notes:
        print(f"note: {note}")
    print(report.text(), end="")
    return 1 if report.missing else 0  # a treatment whose run measured nothing: no answer either


def _comparable(e, runs: dict, a: argparse.Namespace) -> list[str]:
    """The treatments' runs must measure the same thing except where the experiment varies it on purpose
    (its treatments' recipes differ in that dimension: a factor of ISL, of model, of SLOs); anything else
    needs --allow-different (infersweep.results.comparable). Local runs of one experiment share its scaled
    workload, so a treatment run on a cluster beside one run locally is refused (source, workload)."""
    from infersweep.results.comparable import allowed, check_comparable

    def varied(key) -> bool:
        return len({json.dumps(key(t.recipe), sort_keys=True, default=str) for t in e.treatments}) > 1

    by_design = {
        dim: "the experiment varies it"
        for dim, key in (
            (
                "workload",
                lambda r: [r.recipe.workload.aiperf_workload(), [p.as_dict() for p in r.recipe.workload.points()]],
            ),
            ("model", lambda r: r.model.id),
            ("slo", lambda r: r.recipe.slo.model_dump()),
        )
        if varied(key)
    }
    return check_comparable(
        runs, allowed(a) | set(by_design), why_allowed=by_design, asked_by=f"experiment report {e.name}"
    )


def _render(a: argparse.Namespace) -> int:

    import yaml

    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from infersweep.schemas import validate_document
    from workflows.experiment import experiment_template, experiment_workflow

    plan = make_plan(load_experiment(a.file))
    settings = load_cluster_settings()
    template = experiment_template(plan, settings, dgd_api=a.dgd_api or "v1beta1").to_dict()
    doc = experiment_workflow(plan, settings).to_dict()
    for d in (template, doc):
        validate_document(d)  # Hera drops unknown fields silently: the strict Argo schemas catch what it would hide
    out = writable_folder(a.out or ".") / f"experiment-{plan.experiment.name}.yaml"
    out.parent.mkdir(parents=True, exist_ok=True)
    tout = out.with_name(f"experiment-{plan.experiment.name}.template.yaml")
    tout.write_text(yaml.safe_dump(template, sort_keys=False, width=120))
    out.write_text(yaml.safe_dump(doc, sort_keys=False, width=120))
    print(plan.text())
    # The Workflow only references the template, so a controller in templateReferencing Strict/Secure runs it.
    print(f"\ntemplate: {tout}  (argo template create {tout.name}; `infersweep install` installs it too)")
    # A bare `argo submit` creates a run of priority 0: ahead of every queued run, and two in one second tie
    # on every lock (workflows/gpu_guard.py). So the printed commands give it the GPU guard's priority, taken
    # when the command runs (argo-workflows v4.1.2 cmd/argo/commands/submit.go --priority -> util.go :264-265).
    print(f"workflow: {out}")
    print(f"submit:   infersweep experiment submit {a.file}  (applies the template, stamps the queue priority)")
    print(f"   or:    argo submit {out.name} --priority {argo_priority_expression()}")
    return 0


def argo_priority_expression() -> str:
    """A shell expression that computes, when the command runs, what workflows/gpu_guard.py submit_priority
    gives a run submitted at that millisecond (GNU date's %3N: milliseconds)."""
    from workflows.gpu_guard import PRIORITY_BAND

    return f'"$((-1 - $(date +%s%3N) % {PRIORITY_BAND}))"'


def _submit(a: argparse.Namespace) -> int:
    """The experiment's Workflow (the one `render` writes) created through the Argo Server, as `submit` does a
    recipe's: everything that can be refused (the file, every treatment, the strict Argo schemas, the GPU
    pool) is refused before the first request."""
    from infersweep.argo_client import server_from_args
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.commands.submit import watch
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from infersweep.schemas import validate_document
    from workflows.experiment import experiment_template, experiment_workflow
    from workflows.gpu_guard import check_fits_pool, submit_priority

    settings = load_cluster_settings()
    plan = make_plan(load_experiment(a.file))
    for step in plan.steps:
        check_fits_pool(step.treatment.recipe, settings)
    server = server_from_args(a)
    from infersweep.install_version import MANAGED_SELECTOR, stamp
    from infersweep.recipe import RecipeError
    from workflows.experiment import template_name
    from workflows.install_set import installed_dgd_api, submit_dgd_api

    installed_templates = server.list_templates(MANAGED_SELECTOR)
    dgd_api = submit_dgd_api(a.dgd_api, installed_dgd_api(installed_templates, template_name(plan.experiment.name)))
    template = experiment_template(plan, settings, dgd_api=dgd_api).to_dict()
    doc = experiment_workflow(plan, settings, namespace=server.cfg.namespace).to_dict()
    for d in (template, doc):
        validate_document(d)
    doc["spec"]["priority"] = submit_priority()  # the GPU guard's total queue order (workflows/gpu_guard.py)
    from infersweep.install_version import check_installed
    from workflows.install_set import step_templates

    check_installed(server, step_templates(settings, []))

    # The template first (updated in place when `infersweep install` put it there), then a Workflow that only
    # references it: what a controller in templateReferencing Strict/Secure runs (workflows/strict.py). Never
    # a template a live run of this experiment still reads (infersweep/template_holds.py: Secure errors it).
    from infersweep.template_holds import LIVE_SELECTOR, held_line, split_updates

    template = stamp(template)  # the labels `infersweep install` puts on it, so both compare equal
    _, held = split_updates([template], installed_templates, server.list_workflows(LIVE_SELECTOR))
    if held:
        (_, runs), name = held[0], template["metadata"]["name"]
        raise RecipeError(
            f"experiment {plan.experiment.name}: {held_line('WorkflowTemplate', name, runs)}; wait for them to end "
            f"(or `argo stop` them), then submit again"
        )
    verb, _ = server.apply(template)
    print(f"{verb} WorkflowTemplate/{template['metadata']['name']}")
    wf = server.create_workflow(doc)
    name = wf["metadata"]["name"]
    print(plan.text())
    print(
        f"\nsubmitted {server.cfg.namespace}/{name} (experiment {plan.experiment.name}, {len(plan.steps)} treatments)"
    )
    print(server.ui_link(name))
    if not a.watch:
        return 0
    return 0 if watch(server, name) == "Succeeded" else 1


def _run(a: argparse.Namespace) -> int:
    from pathlib import Path

    from infersweep.commands.run import check_local
    from infersweep.local.experiment_run import run_experiment_local

    check_local(
        a,
        "infersweep experiment run FILE: only --local runs here; on a cluster, "
        "`infersweep experiment render FILE` and submit the Workflow it writes",
    )
    ref = a.local if isinstance(a.local, str) else a.file
    res = run_experiment_local(
        ref,
        resume=Path(a.resume) if a.resume else None,
        dgd_api=a.dgd_api or "v1beta1",
        out_root=writable_folder(a.out or "runs"),
        workers=a.workers,
        weights=a.weights,
        gpu_python=a.gpu_python,
        engine_cache=Path(a.engine_cache) if a.engine_cache else None,
    )
    if res.kept:
        print(f"kept from the earlier attempt: {', '.join(res.kept)}")
    print(res.report_text, end="")
    print(f"\nworkflow {res.run_id}: {res.phase} in {res.seconds:.0f} s; run folder {res.run_dir}")
    for line in res.failed_steps:
        print(f"failed:   {line}")
    if res.store is not None:
        # kept as runs/store/experiments/<experiment>; runs/store lists each treatment as a run of its recipe
        print(f"store:    {res.store} (the treatments as published: infersweep runs --store {res.store};")
        print(f"          as runs of their recipes: infersweep runs --store {res.store.parent.parent})")
    names = [*res.kept, *(s.treatment.name for s in res.plan.steps)]
    for line in treatment_commands(res.plan.experiment.name, res.run_dir, names):
        print(line)
    if res.phase != "Succeeded" or res.report is None or res.report["missing"]:
        # A failed treatment does not stop the others, but the run is not done until every one has results.
        print(f"resume with: infersweep experiment run --local --resume {res.run_dir}")
        return 1
    return 0


def treatment_commands(experiment: str, run_dir, names: list[str]) -> list[str]:
    """Where each treatment's results are, and the commands that read them again (issue 38: the run printed
    none): `experiment report` of those folders, and `compare --html` of them."""
    import shlex
    from pathlib import Path

    folders = {n: Path(run_dir) / "volumes" / "workdir" / "treatments" / n for n in names}
    kept = {n: f for n, f in folders.items() if (f / "summary" / "results.parquet").is_file()}
    if not kept:
        return []
    pairs = " ".join(shlex.quote(f"{n}={f}") for n, f in kept.items())
    lines = [f"results:  {shlex.quote(str(f))}  ({n})" for n, f in kept.items()]
    lines.append(f"report:   infersweep experiment report {shlex.quote(experiment)} {pairs}")
    if len(kept) >= 2:
        lines.append(
            f"compare:  infersweep compare {' '.join(shlex.quote(str(f)) for f in kept.values())} "
            f"--html {shlex.quote(str(Path(run_dir) / 'compare.html'))}"
        )
    return lines


def run(a: argparse.Namespace) -> int:
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.restart import RestartClass
    from infersweep.experiment.spec import all_experiment_paths, load_experiment
    from infersweep.recipe import RecipeError

    if a.action == "list":
        rows = []
        for p in all_experiment_paths():
            plan = make_plan(load_experiment(p))
            rows.append(
                (
                    plan.experiment.name,
                    len(plan.steps),
                    plan.counts().get(RestartClass.FULL, 0),
                    plan.experiment.spec.description,
                )
            )
        print(table(["name", "treatments", "full deploys", "description"], rows))
        return 0
    if a.action == "run":
        return _run(a)
    if not a.file:
        raise RecipeError(
            f"infersweep experiment {a.action} FILE: give an experiment file or name (`infersweep experiment list`)"
        )
    if a.action == "report":
        return _report(a)
    if a.action == "render":
        return _render(a)
    if a.action == "submit":
        return _submit(a)
    if a.runs:
        raise RecipeError("infersweep experiment plan FILE: takes no runs (they go to `experiment report`)")
    print(make_plan(load_experiment(a.file)).text())
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    from infersweep.results.cli_common import add_store_arg

    p = sub.add_parser("experiment", help="plan a comparison of deployments with the fewest redeploys; report on it")
    p.add_argument("action", choices=["plan", "list", "render", "report", "run", "submit"])
    p.add_argument("file", nargs="?", help="params/experiments/<name>.yaml or its name")
    p.add_argument("runs", nargs="*", metavar="TREATMENT=RUN", help="report: each treatment's run (folder or id)")
    p.add_argument("--out", help="render: folder for the Workflow YAML (default: .); run: runs folder (default: runs)")
    # `run --local FILE`: argparse has consumed both positionals by then (empty) when FILE follows an
    # option, so --local takes the file as its optional value.
    p.add_argument(
        "--local",
        nargs="?",
        const=True,
        default=False,
        metavar="FILE",
        help="run: execute the experiment's Workflow on this machine",
    )
    p.add_argument("--resume", metavar="RUN_DIR", help="run --local: re-run only the treatments without results")
    from infersweep.commands.run import add_worker_options

    add_worker_options(p)
    add_dgd_api_arg(
        p, None, "render/run: DGD apiVersion (default v1beta1); submit: the install's (infersweep install --dgd-api)"
    )
    p.add_argument("--watch", action="store_true", help="submit: follow the run until it ends")
    add_store_arg(p)
    from infersweep.results.comparable import add_allow_arg

    add_allow_arg(p, "report: compare treatment")
    from infersweep.argo_server import add_server_flags

    add_server_flags(p)
    p.set_defaults(fn=run)
