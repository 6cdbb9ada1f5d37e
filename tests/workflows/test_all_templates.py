"""`hera generate yaml workflows/all_templates.py --to DIR` (Hera's own CLI, run for real) writes exactly the
documents infersweep writes: each WorkflowTemplate as `infersweep install` creates it and as `infersweep render
--all` writes it under <recipe>/templates/, and each recipe's Workflow as render writes <recipe>/workflow.yaml."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infersweep.cli import main
from infersweep.cluster_settings import load_cluster_settings
from infersweep.commands.install import install_set
from infersweep.install_version import stamp
from infersweep.recipe import all_recipe_paths
from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # real servers or subprocesses, seconds each: outside the inner loop

HERA = Path(sys.executable).with_name("hera")


def test_hera_generate_yaml_writes_what_infersweep_renders(tmp_path):
    env = os.environ | {"PYTHONPATH": str(REPO)}
    res = subprocess.run(
        [str(HERA), "generate", "yaml", "workflows/all_templates.py", "--to", str(tmp_path / "gen")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    generated = [d for d in yaml.safe_load_all((tmp_path / "gen" / "all_templates.yaml").read_text()) if d]
    templates = {d["metadata"]["name"]: d for d in generated if d["kind"] == "WorkflowTemplate"}
    workflows = [d for d in generated if d["kind"] == "Workflow"]

    # The templates: the set `infersweep install` creates, equal document by document.
    installed = {
        d["metadata"]["name"]: d for d in install_set(load_cluster_settings())[0] if d["kind"] == "WorkflowTemplate"
    }
    assert templates == installed

    # Every recipe's rendered templates and Workflow, as `infersweep render --all` writes them.
    assert main(["render", "--all", "--out", str(tmp_path / "rendered")]) == 0
    recipes = sorted((tmp_path / "rendered").iterdir())
    assert len(recipes) == len(all_recipe_paths()) == len(workflows)
    rendered_workflows = []
    for folder in recipes:
        for f in (folder / "templates").glob("*.yaml"):
            # a render's copy carries no version labels (install stamps them: infersweep/install_version.py)
            assert stamp(yaml.safe_load(f.read_text())) == templates[f.stem], f"{folder.name}: {f.name} differs"
        rendered_workflows.append(yaml.safe_load((folder / "workflow.yaml").read_text()))
    key = lambda wf: wf["metadata"]["labels"]["infersweep.io/recipe"]  # noqa: E731
    assert sorted(workflows, key=key) == sorted(rendered_workflows, key=key)
