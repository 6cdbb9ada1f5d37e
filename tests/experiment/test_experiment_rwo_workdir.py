"""No two tasks of an experiment that mount the run's ReadWriteOnce workdir can run at once.

A ReadWriteOnce claim attaches to one node: a second pod scheduled on another node waits in
ContainerCreating with the attach-detach controller's "Multi-Attach error" (Kubernetes
pkg/controller/volume/attachdetach/reconciler/reconciler.go reportMultiAttachError) until the first ends, and a
step deadline counts that wait. Two DAG tasks may run at once unless one depends (transitively) on the other
(argo-workflows v4.1.2 workflow/controller/dag.go: a task runs once its `depends` expression is satisfied)."""

from __future__ import annotations

import re

import pytest

from infersweep.cluster_settings import load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from workflows.experiment import experiment_template
from workflows.install_set import step_templates

SETTINGS = load_cluster_settings()
STEPS = {t["metadata"]["name"]: t for t in step_templates(SETTINGS, [])}


def _template_mounts(tmpl: dict, local: dict[str, dict]) -> bool:
    c = tmpl.get("container") or tmpl.get("script") or {}
    if any(vm["name"] == "workdir" for vm in c.get("volumeMounts") or []):
        return True
    if any(vm["name"] == "workdir" for ic in tmpl.get("initContainers") or [] for vm in ic.get("volumeMounts") or []):
        return True
    tasks = (tmpl.get("dag") or {}).get("tasks") or [s for group in tmpl.get("steps") or [] for s in group]
    return any(_task_mounts(t, local) for t in tasks)


def _task_mounts(task: dict, local: dict[str, dict]) -> bool:
    ref = task.get("templateRef")
    if ref:
        wt = STEPS[ref["name"]]
        tmpl = next(t for t in wt["spec"]["templates"] if t["name"] == ref["template"])
        return _template_mounts(tmpl, {t["name"]: t for t in wt["spec"]["templates"]})
    return _template_mounts(local[task["template"]], local)


def _ancestors(tasks: dict[str, dict]) -> dict[str, set[str]]:
    direct = {
        n: set(re.findall(r"[A-Za-z0-9-]+(?=\.|\b)", t.get("depends") or "")) & set(tasks) for n, t in tasks.items()
    }
    out: dict[str, set[str]] = {}

    def walk(n: str) -> set[str]:
        if n not in out:
            out[n] = set()
            for d in direct[n]:
                out[n] |= {d} | walk(d)
        return out[n]

    for n in tasks:
        walk(n)
    return out


@pytest.mark.parametrize("path", all_experiment_paths(), ids=lambda p: p.stem)
def test_no_two_workdir_tasks_of_an_experiment_can_run_at_once(path):
    wt = experiment_template(make_plan(load_experiment(path)), SETTINGS).to_dict()
    local = {t["name"]: t for t in wt["spec"]["templates"]}
    for tmpl in wt["spec"]["templates"]:
        tasks = {t["name"]: t for t in (tmpl.get("dag") or {}).get("tasks") or []}
        anc = _ancestors(tasks)
        mounting = sorted(n for n, t in tasks.items() if _task_mounts(t, local))
        for i, a in enumerate(mounting):
            for b in mounting[i + 1 :]:
                assert a in anc[b] or b in anc[a], f"{path.stem}: {tmpl['name']}: {a} and {b} may run at once"
        if tmpl["name"] == "treatments":
            assert any(n.endswith("-sweep") for n in mounting)  # the check sees the sweep
