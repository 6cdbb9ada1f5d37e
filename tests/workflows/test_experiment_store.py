"""A cluster experiment's treatments reach the results store `infersweep runs` reads (issue 38 item 13): each
treatment is published under <prefix>/experiments/<experiment>/<workflow>/<treatment> (the experiment's own
store) and again as a run of its recipe, <prefix>/<recipe>/<workflow>-<treatment>, where the store's index
lists it. The rendered template's publish tasks run here as the publish step, against the real local S3 server
(moto_server, infersweep/local/standins/s3server.py)."""

from __future__ import annotations

import json

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from infersweep.local.standins.s3server import LocalS3
from steps import publish as publish_step
from workflows.experiment import experiment_template

EXPERIMENT = "nemotron-rr-vs-kv"
WORKFLOW = f"{EXPERIMENT}-x7k2p"  # the submitted Workflow's generated name


def _tasks(template: dict) -> dict[str, dict]:
    return {t["name"]: t for tmpl in template["spec"]["templates"] for t in (tmpl.get("dag") or {}).get("tasks") or []}


def _args(task: dict) -> dict[str, str]:
    return {p["name"]: p["value"].replace("{{workflow.name}}", WORKFLOW) for p in task["arguments"]["parameters"]}


def test_runs_lists_a_cluster_experiments_treatments(tmp_path, monkeypatch, capsys):
    settings = load_cluster_settings()
    plan = make_plan(load_experiment(next(p for p in all_experiment_paths() if p.stem == EXPERIMENT)))
    tasks = _tasks(experiment_template(plan, settings).to_dict())
    stems = sorted(n.removesuffix("-publish") for n in tasks if n.endswith("-publish") and n != "publish-report")
    assert len(stems) == len(plan.steps)
    monkeypatch.delenv("INFERSWEEP_STORE", raising=False)
    with LocalS3(buckets=[settings.s3.bucket]) as s3:
        for name, value in s3.env().items():
            monkeypatch.setenv(name, value)
        for stem in stems:
            run = tmp_path / stem  # what summarize left in /work/run for this treatment
            (run / "summary").mkdir(parents=True)
            (run / "summary" / "results.md").write_text("| c4 | ok |\n")
            (run / "summary" / "run.json").write_text(json.dumps({"points": 1, "context": {"treatment": stem}}))
            # the publish step, as the treatment's publish tasks call it (infersweep/step_declarations.py PUBLISH)
            for task in (f"{stem}-publish", f"{stem}-publish-store"):
                args = _args(tasks[task])
                argv = [str(run), "--bucket", args["bucket"], "--prefix", args["prefix"], "--retry-prefix"]
                assert publish_step.main(argv) == 0
        capsys.readouterr()
        assert main(["runs"]) == 0  # the default store: s3://<bucket>/<prefix> of params/cluster.yaml
    out = capsys.readouterr().out
    recipes = {s.treatment.recipe.name for s in plan.steps}
    for s in plan.steps:
        assert f"{WORKFLOW}-{s.treatment.name}" in out, out
    assert all(r in out for r in recipes), out
