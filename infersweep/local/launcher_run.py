"""A launcher (workflows/launcher.py) submitted the way the Argo UI submits it, run on this machine: the
launcher Workflow first, then every Workflow its create-run step created, as a controller picks up a new
Workflow from its informer.

The UI's Submit on a WorkflowTemplate creates a Workflow that names the template and gives the form's
parameters, nothing else (workflow/common/convert.go NewWorkflowFromWorkflowTemplate; the Argo Server's
SubmitWorkflow with `--from workflowtemplate/NAME`): `ui_submit` builds exactly that. The templates are the
install set's (step library, every engine x topology pipeline, the launchers), the local services those of
`run --local` (a real S3 server, Prometheus when installed, the local DGD adapter with mocker workers).

What differs from a cluster, and is said before the run: the recipe launcher is installed with the run
settings of this machine (model-source = the toy model's folder, a short ready timeout, the local
Prometheus), as a cluster install bakes in its cluster settings. Nothing is scaled down: the created run
has the parameters the launcher derived, so give it a recipe this machine runs as written (the demos).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from infersweep.cluster_settings import load_cluster_settings
from infersweep.local.argo import LocalArgo, Node
from infersweep.local.argo.resource import LocalObjects
from infersweep.local.dynamo.toy_model import build_toy_model
from infersweep.local.executor import StepServices, execute
from infersweep.local.phases import cluster_configmaps, local_prometheus, local_services, step_pythons
from infersweep.local.standins.s3server import LocalS3


@dataclass
class LocalLaunch:
    launcher: LocalArgo
    root: Node
    run_dir: Path
    runs: list[tuple[dict[str, Any], LocalArgo, Node, Path]] = field(
        default_factory=list
    )  # created, executor, root, dir


def ui_submit(template: str, parameters: dict[str, str], namespace: str, name: str) -> dict[str, Any]:
    """The Workflow the Argo UI's Submit of `template` creates (convert.go NewWorkflowFromWorkflowTemplate:
    workflowTemplateRef and the form's parameters; the UI sends every parameter of the form, changed or not,
    and the server merges the template's defaults for the rest: operator.go setExecWorkflow)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Workflow",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"workflows.argoproj.io/workflow-template": template},
        },
        "spec": {
            "workflowTemplateRef": {"name": template},
            "arguments": {"parameters": [{"name": k, "value": v} for k, v in parameters.items()]},
        },
    }


def install_templates(settings, run_params: dict[str, str]) -> list[dict[str, Any]]:
    """The WorkflowTemplates of the install set this launch needs: the step library, every pipeline, the launchers."""
    from infersweep.experiment.spec import all_experiment_paths
    from infersweep.recipe import all_recipe_paths, load_recipe
    from workflows.all_templates import TOPOLOGIES, engines
    from workflows.launcher import launcher_templates
    from workflows.render import library_templates

    out: dict[str, dict[str, Any]] = {}
    for e in engines():
        for t in TOPOLOGIES:
            for doc in library_templates(settings, e, t):
                out[doc["metadata"]["name"]] = doc
    recipes = [load_recipe(p) for p in all_recipe_paths()]
    for wt in launcher_templates(settings, recipes, [p.stem for p in all_experiment_paths()], run_params):
        out[wt.name] = wt.to_dict()
    return list(out.values())


def launch_local(
    template: str,
    parameters: dict[str, str],
    *,
    out_root: Path,
    cache_root: Path,
    s3: LocalS3 | None = None,
    on_event: Callable[[str, Node], None] | None = None,
    say: Callable[[str], None] = print,
) -> LocalLaunch:
    """Submit `template` with `parameters` (only what a UI user types) and run the launcher and the runs it
    created, each to its end; the runs' folders are out_root/<run name>."""
    import uuid

    settings = load_cluster_settings()
    namespace = "local"
    cache_root, out_root = cache_root.resolve(), out_root.resolve()
    model_dir = cache_root / "toy-model"
    name = f"{template}-{uuid.uuid4().hex[:5]}"
    run_dir = out_root / name
    state_dir = run_dir / "state"
    prom = local_prometheus(state_dir)
    run_params = {
        "model-source": f"file://{model_dir}",
        "ready-timeout-s": "120",
        "prometheus-url": prom.url if prom else "",
    }
    say(
        f"local install: the recipe launcher applies {', '.join(f'{k}={v}' for k, v in run_params.items())} "
        "(this machine's run settings); nothing else of the recipe is changed"
    )
    templates = install_templates(settings, run_params)
    build_toy_model(model_dir)
    # as run --local: whatever the exit handlers did, no Dynamo process outlives the launch
    with local_services(settings, state_dir, s3=s3, prometheus=prom) as svc:
        services = StepServices(
            cache_root=cache_root,
            pythons=step_pythons(settings),
            env=svc.step_env(model_dir=model_dir, max_workers=2, gpu=None),
            s3_client=svc.s3.client(),
            configmaps=cluster_configmaps(settings, [], namespace),
            on_event=on_event,
            objects=LocalObjects(),
        )
        submitted = ui_submit(template, parameters, namespace, name)
        argo, root = execute(
            submitted, templates, services, run_id=name, run_dir=run_dir, status_file=run_dir / "status.json"
        )
        res = LocalLaunch(argo, root, run_dir)
        for doc in list(services.objects.objects):  # a controller runs each Workflow the launcher created
            run_name = doc["metadata"]["name"]
            say(f"{name} created Workflow {run_name}; running it")
            child_dir = out_root / run_name
            child, child_root = execute(
                doc, templates, services, run_id=run_name, run_dir=child_dir, status_file=child_dir / "status.json"
            )
            res.runs.append((doc, child, child_root, child_dir))
        return res
