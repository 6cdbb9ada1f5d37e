"""The whole catalog as module-level Hera objects, for Hera's own tooling:

    hera generate yaml workflows/all_templates.py --to DIR

writes DIR/all_templates.yaml: every WorkflowTemplate (the step library, the engine x topology pipelines and
the experiments', the set `infersweep install` creates) followed by the Workflow of each catalog recipe, the same documents
`infersweep render --all` writes (tests/workflows/test_all_templates.py compares them). For teams that keep rendered
YAML in Git and sync the WorkflowTemplates with Argo CD; the Workflows use generateName, so they are
created (`argo submit` / `kubectl create`), not synced.

`hera generate yaml` collects every module attribute that is a hera `Workflow` (WorkflowTemplate is one), in
definition order, so each object is bound to its own module-level name below. Every object is validated
against the strict schemas here, as `infersweep render` validates what it writes.
"""

from __future__ import annotations

from hera.workflows import Workflow, WorkflowTemplate

from infersweep.cluster_settings import ClusterSettings, load_cluster_settings
from infersweep.experiment.plan import make_plan
from infersweep.experiment.spec import all_experiment_paths, load_experiment
from infersweep.install_version import stamp
from infersweep.paths import params_dir
from infersweep.recipe import all_recipe_paths, load_recipe
from infersweep.schemas import validate_document
from workflows.cron import reaper_workflow_template
from workflows.experiment import experiment_template
from workflows.launcher import launcher_templates
from workflows.pipeline import pipeline_template, recipe_run, recipe_workflow
from workflows.steps_library import Images, step_workflow_templates

TOPOLOGIES = ("agg", "disagg")


def engines() -> list[str]:
    return sorted(p.stem for p in (params_dir() / "engines").glob("*.yaml"))


def catalog_objects(settings: ClusterSettings) -> dict[str, WorkflowTemplate | Workflow]:
    """identifier -> object: the WorkflowTemplates, then one Workflow per catalog recipe (sorted by name)."""
    images = Images(steps=settings.images.steps, aiperf=settings.images.aiperf)
    templates = step_workflow_templates(images, settings=settings)
    templates += [pipeline_template(e, t, settings) for e in engines() for t in TOPOLOGIES]
    templates.append(reaper_workflow_template(settings))  # what the reaper CronWorkflow runs
    catalog = sorted((load_recipe(p) for p in all_recipe_paths()), key=lambda r: r.name)
    templates += launcher_templates(settings, catalog, [p.stem for p in all_experiment_paths()])  # docs/ui.md
    # each experiment's template (its Workflow only references it: templateReferencing Strict)
    templates += [experiment_template(make_plan(load_experiment(p)), settings) for p in all_experiment_paths()]
    out: dict[str, WorkflowTemplate | Workflow] = {}
    for wt in templates:
        # the version labels `infersweep install` puts on them (infersweep/install_version.py), so a template
        # applied from this YAML passes submit's and preflight's version check like an installed one
        wt.labels = stamp(wt.to_dict())["metadata"]["labels"]
        out["template_" + wt.name.replace("-", "_")] = wt
    for r in catalog:
        args = recipe_run(r, settings).arguments
        out["workflow_" + r.name.replace("-", "_").replace(".", "_")] = recipe_workflow(
            r, args, settings.namespace, settings
        )
    for obj in out.values():
        validate_document(obj.to_dict())  # a document the cluster would refuse is never generated
    return out


OBJECTS = catalog_objects(load_cluster_settings())
globals().update(OBJECTS)
