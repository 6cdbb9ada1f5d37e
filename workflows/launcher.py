"""The launchers: WorkflowTemplates a user submits from the Argo UI with one choice (a catalog recipe or
experiment from a drop-down, or a file from Git at a pinned commit) and that start the run themselves.

    infersweep-launch              recipe (enum: the catalog + "from-git"), git-repo, git-commit, git-path, set
    infersweep-launch-experiment   experiment (enum: params/experiments + "from-git"), git-repo, git-commit, git-path

The Argo UI renders a parameter with `enum` as a drop-down (ui/src/shared/components/parameters-input.tsx
displaySelectFieldForEnumValues, argo-workflows v4.1.2) and any other as a free-text box.

Two steps, in the cluster, with the step image:
  1. `render`: the declared step `python -m steps.launcher` (infersweep/step_declarations.py LAUNCHER_STEP) loads the recipe (the catalog of the image, or the Git
     file), applies `set` through the recipe-level override rule (infersweep/recipe/overrides.py: the DGD, the
     points, gpu-count, the GPU-lock keys ... cannot be set), renders and validates it with the code of
     `infersweep render`/`validate`, and writes the run's Workflow (the one `infersweep submit` creates,
     with its own queue priority) as the output parameter `manifest`.
  2. `create-run`: a `resource` template creates that Workflow; its name is the output `run-name`.

Why a resource template that creates a Workflow referencing the pipeline template, and not a `templateRef`
to the pipeline's `pipeline` template with the derived parameters:
  * A templateRef brings one template, nothing of its WorkflowTemplate's spec (workflow/templateresolution/
    context.go GetTemplateFromRef returns `wftmpl.GetTemplateByName(tmplRef.Template)`): no workdir
    volumeClaimTemplate, no model-cache volume, no onExit (teardown would never run), no
    artifactRepositoryRef. And the pipeline reads `{{workflow.parameters.*}}` (the DGD, the points, and the
    gpu-span's semaphore keys `gpu-lock-N`, workflows/gpu_guard.py span_synchronization), which would be
    the launcher's: the GPU guard would take keys nobody derived.
  * The created Workflow is exactly the document `infersweep submit` sends: `workflowTemplateRef` plus
    arguments and `priority`, all fields merge.go allowedUserOverrideFields allows, so a controller in
    `templateReferencing: Strict` runs it (workflows/strict.py; tests/workflows/test_launcher.py). Its gpu-span takes
    the derived lock keys, and the UI's Retry and Resubmit on it work as on any submitted run
    (tests/workflows/test_ui_retry.py).
  * The launcher itself, submitted from the UI, is a Workflow with `workflowTemplateRef` and arguments only
    (workflow/common/convert.go NewWorkflowFromWorkflowTemplate), so it passes Strict too. Its pods run under
    their own ServiceAccount (`launcher_rbac`), which may create and get Workflows and nothing else; only the
    create-run pod holds its token: the render pod, which parses the Git content, holds none.

No `setOwnerReference`: the run must outlive the launcher's TTL (a controller owner reference would make the
garbage collector delete the run with the launcher, operator.go executeResource). The run carries the label
`infersweep.io/launched-by: <launcher>` instead.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml
from hera.workflows import DAG, Container, Parameter, Resource, Task, WorkflowTemplate
from hera.workflows import models as m

from infersweep.step_declarations import LAUNCHER_STEP
from workflows.cluster import MANAGED
from workflows.steps_library import PodAccount, _resources, container_security_context, pod_security_context

if TYPE_CHECKING:
    from infersweep.cluster_settings import ClusterSettings
    from infersweep.recipe import ResolvedRecipe

RECIPE_LAUNCHER = "infersweep-launch"
EXPERIMENT_LAUNCHER = "infersweep-launch-experiment"
LAUNCHER_SA = "infersweep-launcher"
FROM_GIT = "from-git"  # the enum entry that takes the file from git-repo/git-commit/git-path
GIT_PARAMS = ("git-repo", "git-commit", "git-path")
SCRATCH = "/scratch"
MANIFEST = f"{SCRATCH}/manifest.json"
GIT_CREDENTIALS = "/git-credentials"  # the Secret of the cluster setting git_credentials_secret, when set
LAUNCHED_BY = "infersweep.io/launched-by"


def _wf(name: str) -> str:
    return "{{workflow.parameters.%s}}" % name


def default_recipe(recipes: list[ResolvedRecipe]) -> str:
    """The drop-down's preselected entry: the recipe that holds the fewest GPUs (a Submit clicked without a
    choice then costs the least), ties by name."""
    return min(recipes, key=lambda r: (r.gpu_capacity, r.name)).name


def settings_text(settings: ClusterSettings) -> str:
    """The install's cluster settings as YAML, baked into the render step (not a parameter: a UI user cannot
    point the run at another bucket's credentials or pool), so the launcher renders against exactly the
    settings the installed pipeline templates were rendered with. YAML, not JSON: the lanes' integer keys
    survive (tests/workflows/test_launcher.py round-trips it)."""
    data = settings.model_dump(mode="python", by_alias=True)
    for optional in ("git_credentials_secret", "dynamo_release"):  # unset: the same text as before it existed
        if not data.get(optional):
            data.pop(optional, None)
    return yaml.safe_dump(data, sort_keys=True)


def _git_credentials(secret: str) -> tuple[list[m.Volume], list[m.VolumeMount], list[str]]:
    """The Secret of the cluster setting git_credentials_secret on the render pod, read-only, when it is set
    (infersweep/launcher/git_credentials.py says which keys and how git gets them).

    optional: true: a Secret not (yet) created is an empty folder and the fetch of a private repository
    fails with the step's one line naming the setting and the keys; without it the kubelet would not start
    the pod and the launcher would sit in ContainerCreating ("secret not found" events) until its deadline
    (core/v1 SecretVolumeSource.optional: "specify whether the Secret or its keys must be defined";
    kubelet pkg/volume/secret/secret.go SetUpAt mounts an empty payload for a missing optional Secret).
    defaultMode 0440: the kubelet gives the files group fsGroup (the pod's, workflows/steps_library.py
    pod_security_context) and ORs 0440 into the mode of a read-only volume anyway (pkg/volume/volume_linux.go
    SetVolumeOwnership); nobody else can read them. ssh gets its own 0600 copy of the key
    (git_credentials.private_key_copy)."""
    if not secret:
        return [], [], []
    return (
        [
            m.Volume(
                name="git-credentials",
                secret=m.SecretVolumeSource(secret_name=secret, optional=True, default_mode=0o440),
            )
        ],
        [m.VolumeMount(name="git-credentials", mount_path=GIT_CREDENTIALS, read_only=True)],
        [f"--git-credentials={GIT_CREDENTIALS}"],
    )


def _git_params() -> list[Parameter]:
    return [
        Parameter(
            name="git-repo",
            value="",
            description=f"with {FROM_GIT}: the repository URL (https://..., git@host:org/repo.git)",
        ),
        Parameter(
            name="git-commit",
            value="",
            description=f"with {FROM_GIT}: the full 40-hex commit id (a branch or tag is refused)",
        ),
        Parameter(
            name="git-path",
            value="",
            description=f"with {FROM_GIT}: the file inside the repository, e.g. params/recipes/demo/demo-prefix-rr.yaml",
        ),
    ]


def _launcher(
    name: str,
    kind: str,
    choice: Parameter,
    extra: list[Parameter],
    settings: ClusterSettings,
    run_params: dict[str, str] | None,
    dgd_api: str,
) -> WorkflowTemplate:
    steps = settings.steps
    r = steps.resources_of(LAUNCHER_STEP.name)
    deadline_s = int(steps.deadlines_s.get(LAUNCHER_STEP.name, LAUNCHER_STEP.deadline_s))
    # What the UI user typed goes as --flag=value: a value that starts with "-" stays a value to argparse.
    # tests/workflows/test_launcher.py parses these args with LAUNCHER_STEP's own parser.
    args = [
        "--kind",
        kind,
        f"--name={_wf(kind)}",
        *(f"--{p}={_wf(p)}" for p in GIT_PARAMS),
        "--namespace",
        "{{workflow.namespace}}",
        "--launcher",
        "{{workflow.name}}",
        "--settings",
        settings_text(settings),
        "--out",
        MANIFEST,
        "--scratch",
        SCRATCH,
        # The install's DGD apiVersion, baked in like the settings: a v1alpha1 cluster's launches render the
        # v1alpha1 release's DGD and images, never the v1beta1 default (`infersweep install --dgd-api`).
        f"--dgd-api={dgd_api}",
    ]
    if kind == "recipe":
        args.append(f"--set={_wf('set')}")
    if run_params:
        args.append(f"--run-params={json.dumps(dict(sorted(run_params.items())), separators=(',', ':'))}")
    cred_volumes, cred_mounts, cred_args = _git_credentials(settings.git_credentials_secret)
    args += cred_args
    with WorkflowTemplate(
        name=name,
        labels={**MANAGED, "infersweep.io/kind": "launcher"},
        annotations={
            "workflows.argoproj.io/description": f"Start a benchmark {kind} run: pick the {kind}, Submit. "
            "See docs/ui.md."
        },
        entrypoint="launch",
        arguments=[choice, *_git_params(), *extra],
        service_account_name=LAUNCHER_SA,
        security_context=pod_security_context(steps),
        volumes=[m.Volume(name="scratch", empty_dir=m.EmptyDirVolumeSource()), *cred_volumes],
        active_deadline_seconds=2 * deadline_s,
        pod_gc=m.PodGC(strategy="OnPodSuccess"),
        ttl_strategy=m.TTLStrategy(seconds_after_completion=7 * 24 * 3600),
        artifact_repository_ref=m.ArtifactRepositoryRef(
            config_map=settings.artifact_repository.configmap, key=settings.artifact_repository.key
        ),
        archive_logs=True,
    ) as wt:
        render = Container(
            name="render",
            image=settings.images.steps,
            command=["python", "-m", f"steps.{LAUNCHER_STEP.module}"],
            args=args,
            outputs=[Parameter(name="manifest", value_from=m.ValueFrom(path=MANIFEST))],
            volume_mounts=[m.VolumeMount(name="scratch", mount_path=SCRATCH), *cred_mounts],
            env=[m.EnvVar(name="PYTHONUNBUFFERED", value="1"), m.EnvVar(name="HOME", value=SCRATCH)],
            security_context=container_security_context(LAUNCHER_STEP.read_only_root),
            resources=_resources(r.cpu, r.memory),
            active_deadline_seconds=deadline_s,
            # as every step's (workflows/steps_library.py step_container): the logs outlive the pod
            archive_location=m.ArtifactLocation(archive_logs=True),
            # it parses untrusted Git content and calls no API: no token in its container; Argo's executor
            # reports `manifest` with the workflows' own account's token (steps_library.PodAccount)
            **PodAccount(None, settings.service_account).template_fields(),
        )
        create = Resource(
            name="create-run",
            action="create",
            manifest="{{inputs.parameters.manifest}}",
            inputs=[Parameter(name="manifest")],
            outputs=[Parameter(name="run-name", value_from=m.ValueFrom(json_path="{.metadata.name}"))],
        )
        with DAG(name="launch"):
            Task(name="render", template=render) >> Task(
                name="create-run",
                template=create,
                arguments={"manifest": "{{tasks.render.outputs.parameters.manifest}}"},
            )
    return wt


def recipe_launcher(
    settings: ClusterSettings,
    recipes: list[ResolvedRecipe],
    run_params: dict[str, str] | None = None,
    dgd_api: str = "v1beta1",
) -> WorkflowTemplate:
    """`run_params`: run settings (infersweep.recipe.overrides RUN_PARAMS) every launch applies before the
    user's `set`, fixed at install (local mode: the toy model's folder as model-source)."""
    names = sorted(r.name for r in recipes)
    choice = Parameter(
        name="recipe",
        enum=[*names, FROM_GIT],
        value=default_recipe(recipes),
        description=f"a catalog recipe, or {FROM_GIT} for the file git-path of git-repo at git-commit",
    )
    sets = Parameter(
        name="set",
        value="",
        description="optional changes, one KEY=VALUE a line, as `infersweep submit --set`: recipe "
        "fields (workload.concurrency=[1,8], router=kv) and run settings (s3-prefix=...); "
        "what follows from the recipe (dgd, points, gpu-count, gpu-lock-N, ...) is refused",
    )
    return _launcher(RECIPE_LAUNCHER, "recipe", choice, [sets], settings, run_params, dgd_api)


def experiment_launcher(
    settings: ClusterSettings, experiments: list[str], dgd_api: str = "v1beta1"
) -> WorkflowTemplate:
    names = sorted(experiments)
    choice = Parameter(
        name="experiment",
        enum=[*names, FROM_GIT],
        value=names[0],
        description=f"an experiment of params/experiments, or {FROM_GIT} for git-path at git-commit",
    )
    return _launcher(EXPERIMENT_LAUNCHER, "experiment", choice, [], settings, None, dgd_api)


def launcher_rbac(settings: ClusterSettings) -> list[dict[str, Any]]:
    """The launcher pods' ServiceAccount and Role: the render step calls no API; the create-run pod's
    `kubectl create -o json` and `kubectl get -o jsonpath` (workflow/executor/resource.go ExecResource,
    SaveResourceParameters) need create and get on Workflows; the executor reports outputs through
    WorkflowTaskResults."""
    ns = settings.namespace
    meta = {"name": LAUNCHER_SA, "namespace": ns, "labels": dict(MANAGED)}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [
                {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create", "get"]},
                {"apiGroups": ["argoproj.io"], "resources": ["workflowtaskresults"], "verbs": ["create", "patch"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": LAUNCHER_SA},
            "subjects": [{"kind": "ServiceAccount", "name": LAUNCHER_SA, "namespace": ns}],
        },
    ]


def launcher_templates(
    settings: ClusterSettings,
    recipes: list[ResolvedRecipe],
    experiments: list[str],
    run_params: dict[str, str] | None = None,
    dgd_api: str = "v1beta1",
) -> list[WorkflowTemplate]:
    """`dgd_api`: the install's `--dgd-api`, which every launch renders with."""
    return [
        recipe_launcher(settings, recipes, run_params, dgd_api),
        experiment_launcher(settings, experiments, dgd_api),
    ]
