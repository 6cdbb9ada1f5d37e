"""Everything a recipe renders to, as plain dicts, validated before anyone uses them.

A bundle is the DGD, the Workflow that runs the recipe, and the WorkflowTemplates it references (the
step library and its engine x topology pipeline). `infersweep render` writes it; `run --local` executes
it; `submit` would send the Workflow to the Argo Server. All three use this one function.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from infersweep.recipe import ResolvedRecipe
from infersweep.schemas import validate_document
from workflows.pipeline import pipeline_template, recipe_arguments, recipe_workflow
from workflows.steps_library import Images, step_workflow_templates


def _dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, width=120)


def library_templates(platform: dict[str, Any], engine: str, mode: str) -> list[dict[str, Any]]:
    images = Images(steps=platform["images"]["steps"], aiperf=platform["images"]["aiperf"])
    wts = step_workflow_templates(images) + [pipeline_template(engine, mode, platform)]
    return [wt.to_dict() for wt in wts]


@dataclass
class Bundle:
    dgd: dict[str, Any]
    workflow: dict[str, Any]
    templates: list[dict[str, Any]]

    def documents(self) -> list[dict[str, Any]]:
        return [self.dgd, self.workflow, *self.templates]

    def write(self, out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        files = [out / "dgd.yaml", out / "workflow.yaml"]
        files[0].write_text(_dump(self.dgd))
        files[1].write_text(_dump(self.workflow))
        tdir = out / "templates"
        tdir.mkdir(exist_ok=True)
        for t in self.templates:
            f = tdir / f"{t['metadata']['name']}.yaml"
            f.write_text(_dump(t))
            files.append(f)
        return files


def render_recipe(r: ResolvedRecipe, platform: dict[str, Any], *, dgd_api: str = "v1beta1", namespace: str | None = None,
                  overrides: dict[str, str] | None = None, workflow_name: str | None = None) -> Bundle:
    args = recipe_arguments(r, platform, dgd_api=dgd_api, overrides=overrides)
    wf = recipe_workflow(r, args, namespace or platform["namespace"]).to_dict()
    if workflow_name:
        wf["metadata"].pop("generateName", None)
        wf["metadata"]["name"] = workflow_name
    bundle = Bundle(dgd=yaml.safe_load(args["dgd"]), workflow=wf,
                    templates=library_templates(platform, r.recipe.engine, r.recipe.topology.mode))
    for doc in bundle.documents():
        validate_document(doc)  # a document the cluster would refuse (or silently prune) never leaves here
    return bundle
