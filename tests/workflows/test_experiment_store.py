"""A cluster experiment's treatments reach the results store `infersweep runs` reads (issue 38 item 13), uploaded
once: each treatment is published under <prefix>/experiments/<experiment>/<workflow>/<treatment> (the
experiment's own store), and a run pointer at <prefix>/<recipe>/<workflow>-<treatment> makes it a run of its
recipe there, which `runs` lists and `compare` reads (infersweep/results/index.py). The rendered template's
publish tasks run here as the publish step, on run folders summarized with the template's own summarize
context, against the real local S3 server (moto_server, infersweep/local/standins/s3server.py).

The upload it measures, for this experiment's treatments (printed with `pytest -s`):
    PYTHONPATH=$PWD .venv/bin/python -m pytest -q -s tests/workflows/test_experiment_store.py
"""

from __future__ import annotations

import re

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from infersweep.local.standins.s3server import LocalS3
from infersweep.recipe_context import recipe_hash
from infersweep.results.store import RunStore
from steps import publish as publish_step
from tests.support.run_folders import make_run_folder, summarize
from workflows.experiment import experiment_template

EXPERIMENT = "nemotron-rr-vs-kv"
WORKFLOW = f"{EXPERIMENT}-x7k2p"  # the submitted Workflow's generated name


def _tasks(template: dict) -> dict[str, dict]:
    return {t["name"]: t for tmpl in template["spec"]["templates"] for t in (tmpl.get("dag") or {}).get("tasks") or []}


def _args(task: dict) -> dict[str, str]:
    return {p["name"]: p["value"].replace("{{workflow.name}}", WORKFLOW) for p in task["arguments"]["parameters"]}


def _objects(s3, bucket: str) -> dict[str, int]:
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket)
    return {o["Key"]: o["Size"] for page in pages for o in page.get("Contents", [])}


def test_an_experiments_treatments_are_uploaded_once_and_runs_lists_them(tmp_path, monkeypatch, capsys, aiperf_ref):
    settings = load_cluster_settings()
    plan = make_plan(load_experiment(next(p for p in all_experiment_paths() if p.stem == EXPERIMENT)))
    tasks = _tasks(experiment_template(plan, settings).to_dict())
    stems = sorted(n.removesuffix("-summarize") for n in tasks if n.endswith("-summarize"))
    assert len(stems) == len(plan.steps)
    monkeypatch.delenv("INFERSWEEP_STORE", raising=False)
    one_copy = [0, 0]  # objects, bytes: each treatment's run folder once
    with LocalS3(buckets=[settings.s3.bucket]) as s3:
        for name, value in s3.env().items():
            monkeypatch.setenv(name, value)
        for stem in stems:
            # what summarize left in /work/run for this treatment, with the context the template gives it
            run = make_run_folder(tmp_path / stem, aiperf_ref)
            context = re.sub(
                r"\{\{inputs\.parameters\.commit-\d+\}\}", "0" * 40, _args(tasks[f"{stem}-summarize"])["context"]
            )
            summarize(run, extra=("--context", context))
            files = [p for p in run.rglob("*") if p.is_file()]
            one_copy = [one_copy[0] + len(files), one_copy[1] + sum(p.stat().st_size for p in files)]
            # every publish task of the treatment, as the publish step (infersweep/step_declarations.py PUBLISH)
            for task in sorted(n for n in tasks if n.startswith(f"{stem}-publish")):
                argv = [str(run), "--retry-prefix"]
                for name, value in _args(tasks[task]).items():
                    argv += [f"--{name}", value]
                assert publish_step.main(argv) == 0
        stored = _objects(s3.client(), settings.s3.bucket)
        uploaded = {k: v for k, v in stored.items() if not k.endswith(("/manifest.json", "/run-pointer.json"))}
        uploaded = {k: v for k, v in uploaded.items() if "/_index/" not in k}
        with capsys.disabled():  # the measurement the module docstring names
            print(
                f"\n{EXPERIMENT}: {len(stems)} treatments, their run folders {one_copy[0]} files / {one_copy[1]} bytes; "
                f"in the bucket {len(stored)} objects / {sum(stored.values())} bytes, of them run files "
                f"{len(uploaded)} / {sum(uploaded.values())} bytes"
            )
        # every treatment's files once, under the experiment
        assert [len(uploaded), sum(uploaded.values())] == one_copy
        assert all(k.startswith(f"{settings.s3.prefix}/experiments/{EXPERIMENT}/{WORKFLOW}/") for k in uploaded)
        store = RunStore(f"s3://{settings.s3.bucket}/{settings.s3.prefix}", s3=s3.client())
        first = store.load(f"{WORKFLOW}-{plan.steps[0].treatment.name}")  # read through its pointer
        assert first.context["recipe_hash"] == recipe_hash(plan.steps[0].treatment.recipe)  # its provenance
        assert first.context["experiment"] == EXPERIMENT
        assert first.source.endswith(f"experiments/{EXPERIMENT}/{WORKFLOW}/{plan.steps[0].treatment.name}")
        capsys.readouterr()
        assert main(["runs"]) == 0  # the default store: s3://<bucket>/<prefix> of params/cluster.yaml
        out = capsys.readouterr().out
        treatments = sorted({s.treatment.name for s in plan.steps})
        assert main(["compare", *(f"{WORKFLOW}-{t}" for t in treatments)]) == 0
    recipes = {s.treatment.recipe.name for s in plan.steps}
    for s in plan.steps:
        assert f"{WORKFLOW}-{s.treatment.name}" in out, out
    assert all(r in out for r in recipes), out
    assert f"{len(treatments)} run(s)" in out, out
