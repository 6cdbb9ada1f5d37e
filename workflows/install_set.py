"""The install set: every object a cluster needs before the first submit, built by a list of builders.

`infersweep install` (through the Argo Server), `infersweep install --out DIR` (GitOps: one file per object
and a kustomization.yaml), `submit` and `preflight` (which compare the cluster with it) all take the set from
here, so they cannot disagree. Argo objects (WorkflowTemplates, CronWorkflows) are stamped with the version
labels of infersweep/install_version.py; the rest (RBAC, ConfigMaps) is what `kubectl apply` creates, since the
Argo Server creates Argo objects only.

Adding a template to the install (e.g. a UI launcher): append a builder to ARGO_BUILDERS (or KUBE_BUILDERS);
a builder takes (settings, catalog, dgd_api) and returns plain documents (`dgd_api`: the DGD apiVersion
the cluster's operator serves, which the nightly runs deploy and the reaper lists). Nothing else needs to change: install, the
GitOps files, preflight's "templates installed" check and submit's version check all follow the list.
"""

from __future__ import annotations

from typing import Any, Callable

from infersweep.cluster_settings import ClusterSettings
from infersweep.install_version import stamp
from infersweep.paths import params_dir
from infersweep.recipe import ResolvedRecipe, all_recipe_paths, load_recipe
from infersweep.schemas import validate_document

TOPOLOGIES = ("agg", "disagg")
Builder = Callable[[ClusterSettings, list[ResolvedRecipe], str], list[dict[str, Any]]]


def engines() -> list[str]:
    return sorted(p.stem for p in (params_dir() / "engines").glob("*.yaml"))


def step_templates(
    settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1"
) -> list[dict[str, Any]]:
    from workflows.steps_library import Images, step_workflow_templates

    images = Images(steps=settings.images.steps, aiperf=settings.images.aiperf)
    return [wt.to_dict() for wt in step_workflow_templates(images, settings=settings)]


def pipeline_templates(
    settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1"
) -> list[dict[str, Any]]:
    from workflows.pipeline import pipeline_template

    return [pipeline_template(e, t, settings).to_dict() for e in engines() for t in TOPOLOGIES]


def nightly(settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1") -> list[dict[str, Any]]:
    from workflows.cron import nightly_crons

    return nightly_crons(settings, load_recipe, dgd_api)


def reaper(settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1") -> list[dict[str, Any]]:
    from workflows.cron import reaper_cron, reaper_template

    return [reaper_template(settings, dgd_api), reaper_cron(settings)]


def experiment_templates(
    settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1"
) -> list[dict[str, Any]]:
    """The WorkflowTemplate of every experiment in params/experiments/: under templateReferencing Strict an
    experiment's Workflow only references its template (workflows/experiment.py), so the operator installs it."""
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import all_experiment_paths, load_experiment
    from workflows.experiment import experiment_template

    return [
        experiment_template(make_plan(load_experiment(p)), settings, dgd_api=dgd_api).to_dict()
        for p in all_experiment_paths()
    ]


def launchers(
    settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1"
) -> list[dict[str, Any]]:
    """The UI launchers (docs/ui.md): a recipe or experiment chosen from a drop-down, everything else derived."""
    from infersweep.experiment.spec import all_experiment_paths
    from workflows.launcher import launcher_templates

    experiments = [p.stem for p in all_experiment_paths()]
    return [wt.to_dict() for wt in launcher_templates(settings, catalog, experiments, dgd_api=dgd_api)]


def launcher_access(
    settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1"
) -> list[dict[str, Any]]:
    from workflows.launcher import launcher_rbac

    return launcher_rbac(settings)


def kubectl_objects(
    settings: ClusterSettings, catalog: list[ResolvedRecipe], dgd_api: str = "v1beta1"
) -> list[dict[str, Any]]:
    from workflows.cluster import kubectl_manifests

    return kubectl_manifests(settings, catalog)


# The hook: the install set is exactly what these build, in this order.
ARGO_BUILDERS: list[Builder] = [step_templates, pipeline_templates, nightly, reaper, experiment_templates, launchers]
KUBE_BUILDERS: list[Builder] = [kubectl_objects, launcher_access]


def install_set(
    settings: ClusterSettings, catalog: list[ResolvedRecipe] | None = None, dgd_api: str = "v1beta1"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Argo objects, stamped with their version labels; manifests for kubectl), each validated."""
    if catalog is None:
        catalog = [load_recipe(p) for p in all_recipe_paths()]
    argo = [stamp(doc) for build in ARGO_BUILDERS for doc in build(settings, catalog, dgd_api)]
    kube = [doc for build in KUBE_BUILDERS for doc in build(settings, catalog, dgd_api)]
    seen: set[tuple[str, str]] = set()
    for doc in argo + kube:
        validate_document(doc)
        key = (doc["kind"], doc["metadata"]["name"])
        if key in seen:  # two builders making one object: the second would silently replace the first
            raise ValueError(f"install set: {key[0]}/{key[1]} is built twice; rename one")
        seen.add(key)
    return argo, kube


def without_namespace(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object for a GitOps repository: no metadata.namespace (the kustomization's `namespace:`, `kubectl
    apply -n` or the Argo CD Application's destination sets it), and no namespace on a RoleBinding's subjects
    that named it. An empty subject namespace in a RoleBinding means the binding's own (kubernetes
    pkg/registry/rbac/validation/rule.go appliesToUser: saNamespace defaults to the binding's namespace), and
    kustomize's namespace transformer fills it in when an overlay sets one (tests/cli/test_install_gitops.py runs
    `kubectl kustomize` on it)."""
    out = {**doc, "metadata": {k: v for k, v in doc["metadata"].items() if k != "namespace"}}
    if doc.get("kind") == "RoleBinding":
        out["subjects"] = [
            {k: v for k, v in s.items() if not (k == "namespace" and v == namespace)} for s in doc.get("subjects") or []
        ]
    return out


def installed_dgd_api(installed: list[dict[str, Any]], template: str | None = None) -> str | None:
    """The DGD apiVersion the cluster's install was rendered for (`infersweep install --dgd-api`), read from
    the installed objects themselves: `template`'s literal `api-version` task arguments (an experiment's
    teardowns and deploys), else the reaper's `--api-version`. None when neither is installed.

    Why: a later `experiment submit` must render what the install renders. Its default (v1beta1) on a
    v1alpha1 install would replace the installed template with one that deploys v1beta1 DGDs and 1.6 images,
    which the cluster's operator does not serve."""
    from workflows.cron import REAPER_NAME

    by_name = {t["metadata"]["name"]: t for t in installed}

    def task_apis(doc: dict[str, Any]) -> set[str]:
        out = set()
        for t in doc.get("spec", {}).get("templates") or []:
            for task in (t.get("dag") or {}).get("tasks") or []:
                for p in (task.get("arguments") or {}).get("parameters") or []:
                    v = str(p.get("value", ""))
                    if p.get("name") == "api-version" and "{{" not in v:
                        out.add(v)
        return out

    if template and template in by_name:
        apis = task_apis(by_name[template])
        if len(apis) == 1:
            return apis.pop()
    reaper = by_name.get(REAPER_NAME)
    if reaper:
        for t in reaper["spec"].get("templates") or []:
            args = (t.get("container") or {}).get("args") or []
            if "--api-version" in args[:-1]:
                return args[args.index("--api-version") + 1]
    return None


def submit_dgd_api(given: str | None, installed: str | None) -> str:
    """The DGD apiVersion a submit renders: the install's unless --dgd-api says otherwise, and a --dgd-api that
    contradicts the install is refused (the run would deploy a DGD, and images, the install did not render for
    the cluster's operator)."""
    from infersweep.params_files import RecipeError

    if given and installed and given != installed:
        raise RecipeError(
            f"--dgd-api {given}: the cluster's templates were installed with --dgd-api {installed} (the apiVersion "
            f"its Dynamo operator is rendered for); submit without --dgd-api (or with --dgd-api {installed}), or "
            f"re-install with `infersweep install --dgd-api {given}` when the operator changed"
        )
    return given or installed or "v1beta1"
