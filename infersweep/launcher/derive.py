"""What a launch derives from the few things a UI user chose: the run's whole Workflow.

A recipe launch goes exactly the way of `infersweep submit` (infersweep/commands/submit.py): load the recipe
with the `set` recipe changes, check that its GPU pool can hold it, render and validate the bundle (the DGD,
the points, the GPU-lock keys, the context: workflows/pipeline.py recipe_run), and stamp a queue
priority (workflows/gpu_guard.py submit_priority). So every derived parameter follows from the recipe and
none can be given: `set` goes through the same rule as `--set` (infersweep/recipe/overrides.py classify).
An experiment launch goes the way of `infersweep experiment submit`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from infersweep.launcher.git_credentials import GitCredentials
from infersweep.launcher.git_source import GitSource, check_git_source, checkout
from infersweep.names import label_value
from infersweep.params_files import RecipeError

if TYPE_CHECKING:
    from infersweep.cluster_settings import ClusterSettings
    from infersweep.recipe.overrides import Sets

SOURCE_ANNOTATION = "infersweep.io/source"


@dataclass
class Launch:
    workflow: dict[str, Any]
    summary: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Launcher:
    """What every launch of one launcher shares: the Git choices, the cluster settings, its namespace and name,
    its scratch folder, the Git credentials it may use, and the DGD apiVersion of the install."""

    git: dict[str, str]
    settings: ClusterSettings
    namespace: str
    name: str
    scratch: Path
    credentials: GitCredentials | None = None
    dgd_api: str = "v1beta1"


def check_ui_set(keys: list[str], allowed: list[str]) -> None:
    """RecipeError naming each `set` key outside the cluster settings' trust.ui_set (a listed path covers its
    sub-fields). Why: the launcher's account runs what the UI user asks for on GPU nodes with the cluster's
    credentials; the image, env, placement, annotations, bucket, PVC and Prometheus are the namespace
    admins' choice, never a UI user's (docs/security.md)."""
    bad = [k for k in keys if not any(k == a or k.startswith(a + ".") for a in allowed)]
    if bad:
        raise RecipeError(
            f"set: {', '.join(sorted(bad))}: not settable from the UI; the cluster settings allow "
            f"{', '.join(allowed) or 'nothing'} (params/cluster.yaml trust.ui_set; a namespace admin changes the "
            "recipe or the list)"
        )


def parse_set_text(text: str, run_params: dict[str, str] | None = None, allowed: list[str] | None = None) -> Sets:
    """The `set` parameter (the UI's text box: one KEY=VALUE a line; blank lines and `#` comments skipped)
    after the install's run parameters, each checked as a `--set` is (infersweep.cli_util.parse_sets).
    `allowed`: the keys the UI may set (trust.ui_set); the install's run parameters are not the user's."""
    from infersweep.cli_util import parse_sets

    lines = [f"{k}={v}" for k, v in (run_params or {}).items()]
    user = [s for s in (ln.strip() for ln in text.splitlines()) if s and not s.startswith("#")]
    if allowed is not None:
        check_ui_set([ln.split("=", 1)[0].strip() for ln in user], allowed)
    lines += user
    try:
        return parse_sets(lines)
    except RecipeError as e:
        raise RecipeError(f"set: {str(e).removeprefix('--set ')}") from None


def source(
    choice: str, what: str, git: dict[str, str], scratch: Path, credentials: GitCredentials | None = None
) -> tuple[Path | str, Path | None, GitSource | None]:
    """(file or catalog name, params folder to resolve it in or None for the image's, Git source or None)."""
    from workflows.launcher import FROM_GIT

    given = {k: v for k, v in git.items() if v.strip()}
    if choice != FROM_GIT:
        if given:
            raise RecipeError(
                f"{', '.join(sorted(given))}: set, but {what} is {choice!r}; choose {what}={FROM_GIT} "
                "to take the file from Git, or clear the git-* parameters"
            )
        return choice, None, None
    src = check_git_source(git.get("git-repo", ""), git.get("git-commit", ""), git.get("git-path", ""))
    clone = scratch / "git"
    f = checkout(src, clone, credentials, scratch / "git-auth")
    # A checkout of this project (or a fork) brings its own params/: the file's models, workloads and engine
    # facts are resolved there. A repository of recipes only is resolved against the image's catalog.
    pdir = clone / "params" if (clone / "params").is_dir() else None
    return f, pdir, src


def _stamp(doc: dict[str, Any], launcher: str, src: GitSource | None) -> dict[str, Any]:
    from workflows.gpu_guard import submit_priority
    from workflows.launcher import LAUNCHED_BY

    meta = doc["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), LAUNCHED_BY: label_value(launcher)}
    if src is not None:
        meta["annotations"] = {**(meta.get("annotations") or {}), SOURCE_ANNOTATION: src.describe()}
    # A distinct priority per run: the GPU guard's queues order runs one way on every lock (gpu_guard.py).
    doc["spec"] = {**doc["spec"], "priority": submit_priority()}
    return doc


# The create-run pod's spec is substituted once more with the *launcher's* globals, its inputs and pod.name,
# manifest included: workflow/controller/workflowpod.go createWorkflowPod puts the template into the
# ARGO_TEMPLATE env var, then substitutePodParams runs template.Replace over the whole pod (unresolved tags
# kept). A {{workflow.name}} in the run's document would come out as the launcher's name (an experiment's S3
# prefix, say). So such a run is named here and its own name and namespace written in; any other tag the
# launcher would fill in is refused.
_LAUNCHER_TAG = re.compile(r"\{\{\s*(workflow\.[^{}]*?|pod\.name|inputs\.parameters\.[^{}]*?)\s*\}\}")
_NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # k8s.io/apimachinery pkg/util/rand, as generateName uses


def resolve_launcher_tags(doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    import random

    text = json.dumps(doc)
    tags = {m.group(1) for m in _LAUNCHER_TAG.finditer(text)}
    # {{inputs.parameters.X}} of the run's own templates stay unresolved: the launcher's only input is
    # `manifest`, so only that one would be replaced.
    tags = {t for t in tags if not t.startswith("inputs.") or t == "inputs.parameters.manifest"}
    if not tags:
        return doc
    left = sorted(tags - {"workflow.name", "workflow.namespace"})
    if left:
        raise RecipeError(
            f"the run's Workflow uses {{{{{left[0]}}}}}, which the launcher's create-run step would "
            "fill in with its own value (workflowpod.go substitutePodParams); remove it from the "
            "recipe or set value"
        )
    meta = doc["metadata"]
    name = meta.get("name") or meta.pop("generateName") + "".join(random.choice(_NAME_CHARS) for _ in range(5))
    meta.pop("generateName", None)
    meta["name"] = name
    text = json.dumps(doc)
    text = re.sub(r"\{\{\s*workflow\.name\s*\}\}", name, text)
    text = re.sub(r"\{\{\s*workflow\.namespace\s*\}\}", namespace, text)
    return json.loads(text)


def recipe_run(choice: str, launcher: Launcher, *, set_text: str, run_params: dict[str, str] | None = None) -> Launch:
    from infersweep.recipe import load_recipe
    from workflows.gpu_guard import check_fits_pool, recipe_admission
    from workflows.render import render_recipe
    from workflows.strict import violations

    settings = launcher.settings
    sets = parse_set_text(set_text, run_params, allowed=list(settings.trust.ui_set))
    ref, pdir, src = source(choice, "recipe", launcher.git, launcher.scratch, launcher.credentials)
    r = load_recipe(ref, pdir, overrides=sets.recipe)
    check_fits_pool(r, settings)
    bundle = render_recipe(r, settings, dgd_api=launcher.dgd_api, namespace=launcher.namespace, overrides=sets.params)
    doc = resolve_launcher_tags(_stamp(bundle.workflow, launcher.name, src), launcher.namespace)
    bad = violations(doc)
    if bad:  # the run would be errored by a Strict controller: never create it
        raise RecipeError(f"recipe {r.name}: the run Workflow sets {bad}, refused under templateReferencing: Strict")
    params = {p["name"]: p["value"] for p in doc["spec"]["arguments"]["parameters"]}
    locks = [v for k, v in params.items() if k.startswith("gpu-lock-") and v]
    summary = [
        f"recipe      {r.name}" + (f" (from {src.describe()})" if src else " (catalog of the step image)"),
        f"pipeline    {doc['spec']['workflowTemplateRef']['name']}",
        f"gpus        {params['gpu-count']} x {r.recipe.gpu.type}",
        f"points      {params['points']}",
        f"dgd         {params['dgd-name']}-<run hash> ({params['dgd-api-version']})",
        f"priority    {doc['spec']['priority']}",
    ]
    if settings.guard.scheduler == "argo":
        summary.append(f"gpu guard   lane(s) {list(recipe_admission(r, settings).lane_keys)}; keys {locks}")
    if sets:
        from infersweep.recipe.overrides import describe

        summary.append(
            f"set         {describe(sets.recipe)}{'; ' if sets.recipe and sets.params else ''}"
            f"{', '.join(f'{k}={v}' for k, v in sets.params.items())}"
        )
    return Launch(doc, summary)


def check_installed_as_in_git(plan: Any, settings: ClusterSettings, src: GitSource, dgd_api: str = "v1beta1") -> None:
    """An experiment's run is a reference to its installed WorkflowTemplate (workflows/experiment.py
    experiment_workflow: Strict reference mode allows nothing else, merge.go), and the launcher may create
    Workflows only. So an experiment file from Git runs as that template: the install's rendering of the
    catalog experiment of the same name. Refuse it unless the Git file renders to that same template, else the
    run would silently measure the installed treatments instead of the file's (or fail: no such template)."""
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import all_experiment_paths, load_experiment
    from workflows.experiment import experiment_template, template_name

    name = plan.experiment.name
    # A catalog experiment's name is its file's (infersweep/experiment/spec.py load_experiment refuses others).
    installed = next((p for p in all_experiment_paths() if p.stem == name), None)
    fix = (
        "install it from that commit (a checkout at the commit: `infersweep install`), then choose it from the "
        "experiment drop-down"
    )
    if installed is None:
        raise RecipeError(
            f"experiment {name} ({src.describe()}): no WorkflowTemplate {template_name(name)} is installed from the "
            f"catalog, and this launcher creates Workflows only; {fix}"
        )
    if (
        experiment_template(plan, settings, dgd_api=dgd_api).to_dict()
        != experiment_template(make_plan(load_experiment(installed)), settings, dgd_api=dgd_api).to_dict()
    ):
        raise RecipeError(
            f"experiment {name} ({src.describe()}): differs from the installed {template_name(name)} (the catalog's "
            f"{installed.name}), which is what the run would execute; {fix}"
        )


def experiment_run(choice: str, launcher: Launcher) -> Launch:
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import load_experiment
    from infersweep.schemas import validate_document
    from workflows.experiment import experiment_workflow
    from workflows.gpu_guard import check_fits_pool

    settings, namespace = launcher.settings, launcher.namespace
    ref, pdir, src = source(choice, "experiment", launcher.git, launcher.scratch, launcher.credentials)
    plan = make_plan(load_experiment(ref, pdir))
    if src is not None:
        check_installed_as_in_git(plan, settings, src, launcher.dgd_api)
    for step in plan.steps:
        check_fits_pool(step.treatment.recipe, settings)
    doc = experiment_workflow(plan, settings, namespace=namespace).to_dict()
    validate_document(doc)
    doc = resolve_launcher_tags(_stamp(doc, launcher.name, src), namespace)
    return Launch(
        doc,
        [
            f"experiment  {plan.experiment.name}" + (f" (from {src.describe()})" if src else ""),
            *plan.text().splitlines(),
            f"priority    {doc['spec']['priority']}",
        ],
    )
