"""The UI launchers (workflows/launcher.py, infersweep/launcher/): the drop-downs are the catalog, a launch derives
everything else and refuses what follows from the recipe, a recipe from Git is taken at a full commit only,
and what a UI submit creates passes `templateReferencing: Strict`. The end-to-end run is
tests/local/test_launcher_local.py."""

from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml

from infersweep.cluster_settings import load_cluster_settings, parse_cluster_settings
from infersweep.commands.install import install_set
from infersweep.experiment.spec import all_experiment_paths
from infersweep.launcher.derive import SOURCE_ANNOTATION, Launcher, experiment_run, recipe_run
from infersweep.launcher.git_source import check_git_source
from infersweep.local.argo.resource import check_template
from infersweep.local.launcher_run import ui_submit
from infersweep.paths import params_dir
from infersweep.recipe import RecipeError, all_recipe_paths, load_recipe
from infersweep.step_declarations import LAUNCHER_STEP
from steps import launcher as step
from steps.runner import run
from tests.support.git_repo import git as _git
from workflows.launcher import EXPERIMENT_LAUNCHER, FROM_GIT, LAUNCHED_BY, LAUNCHER_SA, RECIPE_LAUNCHER, settings_text
from workflows.strict import violations

DEMO = "demo-prefix-rr"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


@pytest.fixture(scope="module")
def settings():
    return load_cluster_settings()


@pytest.fixture(scope="module")
def installed(settings):
    argo, kube = install_set(settings)
    return {d["metadata"]["name"]: d for d in argo if d["kind"] == "WorkflowTemplate"}, kube


def _param(wt: dict, name: str) -> dict:
    return next(p for p in wt["spec"]["arguments"]["parameters"] if p["name"] == name)


def _launch(settings, tmp_path, choice=DEMO, set_text="", git=None):
    return recipe_run(
        choice,
        Launcher(git or {}, settings, "bench", "infersweep-launch-x1y2z", tmp_path),
        set_text=set_text,
    )


# ------------------------------------------------------------------------------------ the drop-downs


def test_the_recipe_drop_down_is_the_catalog_plus_from_git(installed):
    wts, _ = installed
    names = sorted(load_recipe(p).name for p in all_recipe_paths())
    recipe = _param(wts[RECIPE_LAUNCHER], "recipe")
    assert recipe["enum"] == names + [FROM_GIT]
    assert recipe["value"] in names  # preselected, so a Submit without a choice is still a valid run
    experiment = _param(wts[EXPERIMENT_LAUNCHER], "experiment")
    assert experiment["enum"] == sorted(p.stem for p in all_experiment_paths()) + [FROM_GIT]
    # the form has only choices, never a derived parameter
    assert [p["name"] for p in wts[RECIPE_LAUNCHER]["spec"]["arguments"]["parameters"]] == [
        "recipe",
        "git-repo",
        "git-commit",
        "git-path",
        "set",
    ]


def test_a_new_recipe_file_is_in_the_next_install_drop_down(tmp_path, monkeypatch):
    """Staleness: the enum is read from the catalog at install, never kept by hand."""
    pdir = tmp_path / "params"
    shutil.copytree(params_dir(), pdir)
    src = pdir / "recipes" / "demo" / f"{DEMO}.yaml"
    (src.parent / "demo-prefix-rr-copy.yaml").write_text(
        src.read_text().replace(f"name: {DEMO}", "name: demo-prefix-rr-copy")
    )
    monkeypatch.setenv("INFERSWEEP_PARAMS", str(pdir))
    argo, _ = install_set(load_cluster_settings(pdir))
    wt = next(d for d in argo if d["metadata"]["name"] == RECIPE_LAUNCHER)
    assert "demo-prefix-rr-copy" in _param(wt, "recipe")["enum"]


# ------------------------------------------------------------------------------- what a launch derives


def test_a_launch_is_the_submit_document_and_passes_strict(settings, tmp_path):
    from workflows.render import render_recipe

    doc = _launch(settings, tmp_path).workflow
    assert violations(doc) == []
    assert set(doc["spec"]) == {"workflowTemplateRef", "arguments", "priority"}
    submitted = render_recipe(load_recipe(DEMO), settings, namespace="bench").workflow
    # `infersweep submit`'s Workflow, argument for argument (the context and DGD included)
    assert doc["spec"]["arguments"] == submitted["spec"]["arguments"]
    assert doc["metadata"]["labels"][LAUNCHED_BY] == "infersweep-launch-x1y2z"
    # and the launcher a UI submit creates is itself accepted under Strict
    assert violations(ui_submit(RECIPE_LAUNCHER, {"recipe": DEMO}, "bench", "l1")) == []


def test_two_launches_queue_in_order(settings, tmp_path):
    a, b = (_launch(settings, tmp_path).workflow["spec"]["priority"] for _ in range(2))
    assert b < a < 0  # distinct, first come first served (workflows/gpu_guard.py submit_priority)


@pytest.mark.parametrize(
    "line, says",
    [
        ("gpu-count=1", "gpu-count: cannot be set"),
        ("gpu-lock-1=h100-8gpu", "gpu-lock-1: cannot be set"),
        ("dgd=kind: X", "dgd: cannot be set"),
        ("points=[]", "points: cannot be set"),
        ("model-revision=main", "model-revision: cannot be set"),
    ],
)
def test_set_refuses_what_follows_from_the_recipe(settings, tmp_path, line, says):
    # even where the cluster settings let the UI name the key, a derived value stays derived
    wide = _ui_set(settings, line.split("=", 1)[0])
    with pytest.raises(RecipeError, match=re.escape(f"set: {says}")):
        _launch(wide, tmp_path, set_text=f"# a comment\n{line}\n")


def _ui_set(settings, *extra: str):
    trust = settings.trust.model_dump()
    return settings.changed(trust=trust | {"ui_set": trust["ui_set"] + list(extra)})


@pytest.mark.parametrize(
    "line",
    [
        "image=docker.io/attacker/evil:latest",
        "worker_env.LD_PRELOAD=/model-cache/evil.so",
        "engine_args=[--trust-remote-code]",
        "placement.tolerations=[{operator: Exists}]",
        "placement.node_selector={kubernetes.io/hostname: n1}",
        "transport.pod_annotations={container.apparmor.security.beta.kubernetes.io/main: unconfined}",
        "s3-bucket=attacker-bucket",
        "prometheus-url=http://169.254.169.254/latest/meta-data/iam#",
        "model-cache-pvc=other",
        "model-source=file:///model-cache/x",
    ],
)
def test_set_refuses_what_the_cluster_settings_do_not_give_the_ui(settings, tmp_path, line):
    """Issue 42 Medium 3: the reviewer's `set image=...` ran that image on GPU nodes with the HF token."""
    key = line.split("=", 1)[0]
    with pytest.raises(RecipeError, match=re.escape(f"set: {key}: not settable from the UI")):
        _launch(settings, tmp_path, set_text=f"{line}\n")


def test_set_changes_the_recipe_and_everything_follows(settings, tmp_path):
    launch = _launch(
        _ui_set(settings, "s3-prefix"), tmp_path, set_text="workload.concurrency=[4]\n\ns3-prefix=team-a\n"
    )
    params = {p["name"]: p["value"] for p in launch.workflow["spec"]["arguments"]["parameters"]}
    assert [(p["concurrency"], p["repetition"]) for p in json.loads(params["points"])] == [(4, 0), (4, 1), (4, 2)]
    assert params["s3-prefix"] == "team-a"
    assert (
        json.loads(params["context"])["recipe_hash"]
        != json.loads(
            {p["name"]: p["value"] for p in _launch(settings, tmp_path).workflow["spec"]["arguments"]["parameters"]}[
                "context"
            ]
        )["recipe_hash"]
    )


def test_the_step_refuses_with_one_line_and_creates_nothing(settings, tmp_path, capsys):
    out = tmp_path / "manifest.json"
    argv = [
        "--kind",
        "recipe",
        f"--name={DEMO}",
        "--set=gpu-count=16",
        "--namespace",
        "bench",
        "--launcher",
        "l1",
        "--settings",
        settings_text(settings),
        "--out",
        str(out),
        "--scratch",
        str(tmp_path),
    ]
    rc = run(lambda: step.main(argv), LAUNCHER_STEP)
    assert rc == 1 and not out.exists()
    err = capsys.readouterr().err.strip().splitlines()
    # the one runner's line (steps/runner.py): the step's name, then the refusal
    assert len(err) == 1 and err[0].startswith("launcher: set: gpu-count: not settable from the UI")


def test_the_installed_render_args_are_what_the_step_parses(installed, tmp_path):
    """The template's container args, with the UI's values filled in, run the step to a manifest."""
    wts, _ = installed
    wt = wts[RECIPE_LAUNCHER]
    render = next(t for t in wt["spec"]["templates"] if t["name"] == "render")
    values = {
        "workflow.parameters.recipe": DEMO,
        "workflow.parameters.set": "",
        "workflow.namespace": "bench",
        "workflow.name": "l1",
        **{f"workflow.parameters.git-{k}": "" for k in ("repo", "commit", "path")},
    }
    args = [re.sub(r"\{\{([^}]+)\}\}", lambda mt: values[mt.group(1)], a) for a in render["container"]["args"]]
    args = [a.replace("/scratch", str(tmp_path)) for a in args]
    assert step.main(args) == 0
    doc = json.loads((tmp_path / "manifest.json").read_text())
    assert doc["kind"] == "Workflow" and doc["metadata"]["namespace"] == "bench"


def test_the_baked_settings_are_the_installs(settings):
    assert parse_cluster_settings(yaml.safe_load(settings_text(settings))) == settings


def test_an_experiment_launch_derives_its_workflow(settings, tmp_path):
    launch = experiment_run("gpu-kv-vs-rr", Launcher({}, settings, "bench", "l2", tmp_path))
    doc = launch.workflow
    assert doc["metadata"]["labels"][LAUNCHED_BY] == "l2" and doc["spec"]["priority"] < 0
    assert doc["metadata"]["labels"]["infersweep.io/experiment"] == "gpu-kv-vs-rr"


# ------------------------------------------------------------------------------------- from Git


@pytest.mark.parametrize("commit", ["main", "v1.0", "0123456", COMMIT[:-1], COMMIT[:-1] + "g", ""])
def test_a_git_recipe_needs_a_full_commit_id(commit):
    with pytest.raises(RecipeError, match="git-commit .*40 hex"):
        check_git_source("https://github.com/org/repo.git", commit, "recipes/a.yaml")


@pytest.mark.parametrize(
    "repo, path, says",
    [
        ("ext::sh -c evil", "a.yaml", "git-repo"),
        ("", "a.yaml", "git-repo: empty"),
        ("https://github.com/org/repo.git", "../a.yaml", "git-path"),
        ("https://github.com/org/repo.git", "/etc/a.yaml", "git-path"),
        ("https://github.com/org/repo.git", "recipe.json", "git-path"),
    ],
)
def test_a_git_source_is_checked_before_any_fetch(repo, path, says):
    with pytest.raises(RecipeError, match=re.escape(says)):
        check_git_source(repo, COMMIT, path)
    assert check_git_source(" https://github.com/org/repo.git ", COMMIT.upper(), "r/a.yml").commit == COMMIT


def test_git_parameters_without_from_git_are_refused(settings, tmp_path):
    with pytest.raises(RecipeError, match=f"git-repo: set, but recipe is '{DEMO}'; choose recipe={FROM_GIT}"):
        _launch(settings, tmp_path, git={"git-repo": "https://github.com/org/repo.git"})


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git client")
def test_a_recipe_from_git_at_a_commit_renders_that_commit(settings, tmp_path):
    repo = tmp_path / "repo"
    (repo / "recipes").mkdir(parents=True)
    text = (next(p for p in all_recipe_paths() if p.stem == DEMO)).read_text()
    (repo / "recipes" / "mine.yaml").write_text(text.replace(f"name: {DEMO}", "name: my-demo"))
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "recipes" / "mine.yaml").write_text(text.replace(f"name: {DEMO}", "name: my-demo").replace("[4, 8]", "[2]"))
    _git(repo, "commit", "-qam", "two")
    git = {"git-repo": f"file://{repo}", "git-commit": first, "git-path": "recipes/mine.yaml"}
    doc = _launch(settings, tmp_path / "s1", choice=FROM_GIT, git=git).workflow
    params = {p["name"]: p["value"] for p in doc["spec"]["arguments"]["parameters"]}
    # the pinned commit's file, not the branch's newer one
    assert params["recipe"] == "my-demo" and [
        p["concurrency"] for p in json.loads(params["points"]) if p["repetition"] == 0
    ] == [4, 8]
    assert doc["metadata"]["annotations"][SOURCE_ANNOTATION] == f"file://{repo}@{first}:recipes/mine.yaml"
    with pytest.raises(RecipeError, match="git-commit .*not in"):
        _launch(settings, tmp_path / "s2", choice=FROM_GIT, git={**git, "git-commit": "f" * 40})
    with pytest.raises(RecipeError, match="git-path recipes/other.yaml: no such file"):
        _launch(settings, tmp_path / "s3", choice=FROM_GIT, git={**git, "git-path": "recipes/other.yaml"})


# ------------------------------------------------------------------------------ cluster objects


def test_the_launcher_runs_under_its_own_least_privilege_account(installed):
    wts, kube = installed
    assert wts[RECIPE_LAUNCHER]["spec"]["serviceAccountName"] == LAUNCHER_SA
    role = next(d for d in kube if d["kind"] == "Role" and d["metadata"]["name"] == LAUNCHER_SA)
    assert role["rules"][0] == {"apiGroups": ["argoproj.io"], "resources": ["workflows"], "verbs": ["create", "get"]}
    assert any(d["kind"] == "RoleBinding" and d["metadata"]["name"] == LAUNCHER_SA for d in kube)
    create = next(t for t in wts[RECIPE_LAUNCHER]["spec"]["templates"] if t["name"] == "create-run")
    # no owner reference: the run outlives the launcher's TTL
    assert create["resource"]["action"] == "create" and not create["resource"].get("setOwnerReference")


@pytest.mark.parametrize(
    "resource, says",
    [
        ({"action": "apply", "manifest": "x"}, "only create runs locally"),
        ({"action": "create", "manifest": "x", "successCondition": "status.phase == Succeeded"}, "successCondition"),
    ],
)
def test_the_local_executor_refuses_resource_templates_it_does_not_run(resource, says):
    from infersweep.local.argo.errors import WorkflowError

    with pytest.raises(WorkflowError, match=says):
        check_template({"name": "r", "resource": resource})


def test_resubmitting_the_launcher_renders_again_under_strict():
    """Resubmit copies the spec (util.go FormulateResubmitWorkflow): the launcher's is the template reference
    and the form's choice only, so a Resubmit is a fresh launch (re-rendered, a new queue priority)."""
    from infersweep.local.argo.retry import formulate_resubmit

    first = ui_submit(RECIPE_LAUNCHER, {"recipe": DEMO, "set": "workload.concurrency=[4]"}, "bench", "l1")
    again = formulate_resubmit(first)
    assert again["spec"] == first["spec"] and violations(again) == []


def test_an_experiment_run_is_a_reference_to_its_installed_template(settings, tmp_path):
    """The create-run pod is substituted with the launcher's globals (workflowpod.go substitutePodParams), so
    nothing of the launcher's may leak into the run: the experiment's Workflow only references its installed
    WorkflowTemplate (workflows/experiment.py), whose {{workflow.name}} (its S3 prefix) the controller resolves
    under the run's own name."""
    doc = experiment_run("gpu-kv-vs-rr", Launcher({}, settings, "bench", "l2", tmp_path)).workflow
    assert doc["spec"]["workflowTemplateRef"] == {"name": "infersweep-experiment-gpu-kv-vs-rr"}
    assert "{{workflow." not in json.dumps(doc) and violations(doc) == []


def test_a_launcher_tag_the_run_cannot_keep_is_refused():
    from infersweep.launcher.derive import resolve_launcher_tags

    doc = {
        "metadata": {"generateName": "x-"},
        "spec": {"arguments": {"parameters": [{"name": "a", "value": "{{workflow.uid}}"}]}},
    }
    with pytest.raises(RecipeError, match=r"\{\{workflow.uid\}\}"):
        resolve_launcher_tags(doc, "bench")
    kept = {
        "metadata": {"generateName": "x-"},
        "spec": {"t": "{{inputs.parameters.points}} {{tasks.a.outputs.parameters.b}}"},
    }
    assert resolve_launcher_tags(kept, "bench") == kept  # the run's own tags are left to the run


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git client")
def test_an_experiment_from_git_runs_only_as_the_installed_template(settings, tmp_path):
    """An experiment's run references its installed WorkflowTemplate and the launcher creates Workflows only:
    a Git file that renders otherwise would run the installed treatments (or no template at all), so it is
    refused with the fix; the same content as the catalog's runs."""
    text = (params_dir() / "experiments" / "nemotron-rr-vs-kv.yaml").read_text()
    repo = tmp_path / "repo"
    (repo / "experiments").mkdir(parents=True)
    files = {
        "same.yaml": text,
        "changed.yaml": text.replace("osl: 256", "osl: 128", 1),
        "new.yaml": text.replace("name: nemotron-rr-vs-kv", "name: my-rr-vs-kv", 1),
    }
    assert len(set(files.values())) == 3
    for name, body in files.items():
        (repo / "experiments" / name).write_text(body)
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "three")
    commit = _git(repo, "rev-parse", "HEAD")

    def launch(path: str):
        git = {"git-repo": f"file://{repo}", "git-commit": commit, "git-path": f"experiments/{path}"}
        return experiment_run(FROM_GIT, Launcher(git, settings, "bench", "l1", tmp_path / path))

    doc = launch("same.yaml").workflow
    assert doc["spec"]["workflowTemplateRef"]["name"] == "infersweep-experiment-nemotron-rr-vs-kv"
    with pytest.raises(
        RecipeError, match=r"differs from the installed infersweep-experiment-nemotron-rr-vs-kv .*install it"
    ):
        launch("changed.yaml")
    with pytest.raises(RecipeError, match=r"no WorkflowTemplate infersweep-experiment-my-rr-vs-kv is installed"):
        launch("new.yaml")
