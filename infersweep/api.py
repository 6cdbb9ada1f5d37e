"""The Python API for Hera users: a recipe's (or an experiment's) Workflow as a Hera `Workflow`, ready for
Hera's own `.create()`.

Hera's CLI only writes YAML (`hera generate yaml`), so "submit from a laptop with Hera" means Hera's client:
configure `hera.shared.global_config` (host, token, namespace) first, as Hera's documentation does, then build
the Workflow and call `.create()`:

    from hera.shared import global_config
    from infersweep.api import recipe_workflow

    global_config.host = "https://argo.example.com:2746"
    global_config.token = "..."            # or a callable returning one: Hera calls it per request
    global_config.namespace = "infersweep"
    wf = recipe_workflow("nemotron-3-nano-fp8-vllm-agg-kv", set={"prometheus-url": "http://prom:9090"})
    wf.create()                             # POST /api/v1/workflows/infersweep through Hera's WorkflowsService
    print(wf.name)

The Workflow is the one `infersweep submit` creates: rendered and validated by workflows.render (the strict
Argo schemas), checked against the GPU pool, with the GPU guard's priority stamped, in `global_config.namespace`
(else params/cluster.yaml's). Hera builds its WorkflowsService from global_config when the Workflow is made
(hera/workflows/workflow.py Workflow.__post_init__: `WorkflowsService()`, whose host, token and namespace
default to global_config's: hera/workflows/service.py WorkflowsService.__init__), so set it before calling.
The templates must be installed (`infersweep install`); `check_installed=True` refuses, before building, when
the server's WorkflowTemplates are not the ones this checkout renders.
"""

from __future__ import annotations

import json
import warnings
from typing import Any

from infersweep.recipe import RecipeError

__all__ = ["recipe_workflow", "experiment_workflow", "workflow_document"]


def _namespace(namespace: str | None, settings) -> str:
    from hera.shared import global_config

    return namespace or global_config.namespace or settings.namespace


def _to_hera(doc: dict[str, Any]):
    """Hera's Workflow of `doc`, refusing a document Hera's model would not give back unchanged."""
    from hera.workflows import Workflow

    from infersweep.argo_server import _diff_paths

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        wf = Workflow.from_dict(doc)
        back = json.loads(json.dumps(wf.to_dict()))
    lost = _diff_paths(doc, back)
    if lost:
        raise RecipeError(
            f"Workflow {doc['metadata'].get('generateName') or doc['metadata'].get('name')}: Hera's "
            f"Workflow would drop or change {lost[:5]}; refusing to build it"
        )
    return wf


def _check_installed(expected: list[dict[str, Any]], namespace: str) -> None:
    from hera.shared import global_config

    from infersweep.argo_server import ArgoConfig, ArgoServer
    from infersweep.install_version import check_installed

    host = global_config.host.rstrip("/") + "/"
    token = global_config.token
    server = ArgoServer(ArgoConfig(host=host, token=token, namespace=namespace, verify_ssl=global_config.verify_ssl))
    check_installed(server, expected)


def workflow_document(
    recipe: str, *, set: dict[str, str] | None = None, namespace: str | None = None, dgd_api: str = "v1beta1"
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the Workflow `submit` would create, as a dict; the WorkflowTemplates it needs), validated."""
    from infersweep.cli_util import parse_sets
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.gpu_guard import check_fits_pool, submit_priority
    from workflows.render import render_recipe

    sets = parse_sets([f"{k}={v}" for k, v in (set or {}).items()])
    settings = load_cluster_settings()
    r = load_recipe(recipe, overrides=sets.recipe)
    check_fits_pool(r, settings)
    bundle = render_recipe(
        r, settings, dgd_api=dgd_api, namespace=_namespace(namespace, settings), overrides=sets.params
    )
    doc = {**bundle.workflow, "spec": {**bundle.workflow["spec"], "priority": submit_priority()}}
    return doc, bundle.templates


def recipe_workflow(
    recipe: str,
    *,
    set: dict[str, str] | None = None,
    namespace: str | None = None,
    dgd_api: str = "v1beta1",
    check_installed: bool = False,
):
    """The recipe's Workflow as a Hera `Workflow` (references its pipeline template, as `infersweep submit`'s).

    `recipe`: a catalog name or a recipe file; `set`: what `--set KEY=VALUE` takes (recipe fields and run
    parameters); `namespace`: default Hera's global_config.namespace, else params/cluster.yaml's."""
    doc, templates = workflow_document(recipe, set=set, namespace=namespace, dgd_api=dgd_api)
    if check_installed:
        _check_installed(templates, doc["metadata"]["namespace"])
    return _to_hera(doc)


def experiment_workflow(
    experiment: str, *, namespace: str | None = None, dgd_api: str = "v1beta1", check_installed: bool = False
):
    """The experiment's Workflow (every treatment, the comparison and the verdict) as a Hera `Workflow`."""
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from infersweep.schemas import validate_document
    from workflows.experiment import experiment_template
    from workflows.experiment import experiment_workflow as build
    from workflows.gpu_guard import check_fits_pool, submit_priority
    from workflows.install_set import step_templates

    settings = load_cluster_settings()
    plan = make_plan(load_experiment(experiment))
    for step in plan.steps:
        check_fits_pool(step.treatment.recipe, settings)
    ns = _namespace(namespace, settings)
    # The Workflow only references the experiment's installed WorkflowTemplate (templateReferencing Strict:
    # workflows/experiment.py); `dgd_api` is the one that template was rendered with, so the check compares it.
    doc = build(plan, settings, namespace=ns).to_dict()
    doc["spec"]["priority"] = submit_priority()
    validate_document(doc)
    if check_installed:
        _check_installed(
            step_templates(settings, []) + [experiment_template(plan, settings, dgd_api=dgd_api).to_dict()], ns
        )
    return _to_hera(doc)
