"""Everything a recipe renders to, as plain dicts, validated before anyone uses them.

A bundle is the DGD, the Workflow that runs the recipe, and the WorkflowTemplates it references (the
step library and its engine x topology pipeline). `infersweep render` writes it; `run --local` executes
it; `submit` would send the Workflow to the Argo Server. All three use this one function.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from workflows import render_cache

if TYPE_CHECKING:  # the settings are loaded by the caller; their pydantic model need not be built here
    from infersweep.cluster_settings import ClusterSettings
from infersweep.recipe import ResolvedRecipe
from infersweep.recipe.release import for_dgd_api
from infersweep.schemas import reference_dir, validate_document

# workflows.pipeline and workflows.steps_library import hera.workflows (~1.2 s, most of a
# render's start-up): they are imported where a bundle is built, so a bundle from the render cache
# (workflows/render_cache.py) never loads Hera.


# libyaml's emitter when PyYAML has it: the same YAML (checked on every document of the catalog), ~10x
# faster than the pure-Python one, which was half the time of `render --all`.
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Strings as Hera writes them, whether or not Hera is imported in this process.

    Importing hera.workflows registers a str representer on PyYAML's SafeRepresenter for every dumper in the
    process (hera/_yaml.py str_presenter): a multi-line string as a `|` block, y/Y/n/N single-quoted (YAML 1.1
    reads them as booleans). A bundle from the render cache is written without importing Hera, so the same
    rule is this dumper's own (add_representer on a subclass leaves the global table alone): the bytes do not
    depend on what else was imported. tests/workflows/test_render_cache.py checks it against Hera's."""


def _str_presenter(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if data in ("y", "Y", "n", "N"):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_presenter)
_DUMPER = _Dumper


def _dump(doc: dict[str, Any]) -> str:
    try:
        text = json.dumps(doc)  # key order kept: it is the order of the YAML
    except TypeError:
        return yaml.dump(doc, Dumper=_DUMPER, sort_keys=False, width=120)
    return _dump_json(text)


@functools.lru_cache(maxsize=1024)
def _dump_json(text: str) -> str:
    # The step templates are the same for every recipe: `render --all` writes each recipe's copy from here.
    return yaml.dump(json.loads(text), Dumper=_DUMPER, sort_keys=False, width=120)


@functools.lru_cache(maxsize=1024)
def _validate_json(text: str, schemas: str) -> None:  # schemas: the reference dir, part of the key
    # Every recipe of an engine x topology renders the same step and pipeline templates: validating
    # each distinct document once (by content; failures are never cached) keeps the catalog fast.
    validate_document(json.loads(text))


# The settings seen so far by their JSON: the cache key of the library templates (equal settings share it).
_SETTINGS_BY_JSON: dict[str, ClusterSettings] = {}


def library_templates(settings: ClusterSettings, engine: str, mode: str) -> list[dict[str, Any]]:
    # A fresh copy each call (callers may change theirs); built with Hera once per settings x engine x mode.
    key = settings.model_dump_json()
    _SETTINGS_BY_JSON.setdefault(key, settings)
    return json.loads(_library_json(key, engine, mode))


@functools.lru_cache(maxsize=64)
def _library_json(settings_json: str, engine: str, mode: str) -> str:
    from workflows.pipeline import pipeline_template
    from workflows.steps_library import Images, step_workflow_templates

    settings = _SETTINGS_BY_JSON[settings_json]
    images = Images(steps=settings.images.steps, aiperf=settings.images.aiperf)
    wts = step_workflow_templates(images, settings=settings) + [pipeline_template(engine, mode, settings)]
    return json.dumps([wt.to_dict() for wt in wts])


@dataclass
class Bundle:
    dgd: dict[str, Any]
    workflow: dict[str, Any]
    templates: list[dict[str, Any]]
    # KEDA ScaledObjects of the DGD's autoscaled roles; the deploy step applies the same ones with the DGD.
    scaled_objects: list[dict[str, Any]] = field(default_factory=list)

    def documents(self) -> list[dict[str, Any]]:
        return [self.dgd, *self.scaled_objects, self.workflow, *self.templates]

    def write(self, out: Path) -> list[Path]:
        out.mkdir(parents=True, exist_ok=True)
        files = [out / "dgd.yaml", out / "workflow.yaml"]
        files[0].write_text(_dump(self.dgd))
        files[1].write_text(_dump(self.workflow))
        if self.scaled_objects:
            files.append(out / "scaledobjects.yaml")
            files[-1].write_text("---\n".join(_dump(so) for so in self.scaled_objects))
        tdir = out / "templates"
        tdir.mkdir(exist_ok=True)
        for t in self.templates:
            f = tdir / f"{t['metadata']['name']}.yaml"
            f.write_text(_dump(t))
            files.append(f)
        return files


def render_recipe(
    r: ResolvedRecipe,
    settings: ClusterSettings,
    *,
    dgd_api: str = "v1beta1",
    namespace: str | None = None,
    overrides: dict[str, str] | None = None,
    workflow_name: str | None = None,
    cache: bool = False,
) -> Bundle:
    """The recipe's bundle, every document validated. cache=True (the CLI's default, --no-cache turns it off)
    takes a bundle rendered before from exactly the same inputs (render_cache.bundle_key) and keeps a new one;
    it is never used unless asked for, so tests and the golden files always render."""
    # the release of the DGD's operator, before the context hashes its engine
    r = for_dgd_api(r, dgd_api, release=settings.dynamo_release)
    if not (cache and render_cache.enabled()):
        return _render(
            r, settings, dgd_api=dgd_api, namespace=namespace, overrides=overrides, workflow_name=workflow_name
        )
    key = render_cache.bundle_key(
        r, settings, dgd_api=dgd_api, namespace=namespace, overrides=overrides, workflow_name=workflow_name
    )
    docs = render_cache.load(key)
    if docs is not None:
        return Bundle(
            dgd=docs["dgd"],
            workflow=docs["workflow"],
            templates=docs["templates"],
            scaled_objects=docs["scaled_objects"],
        )
    bundle = _render(
        r, settings, dgd_api=dgd_api, namespace=namespace, overrides=overrides, workflow_name=workflow_name
    )
    render_cache.store(
        key,
        {
            "dgd": bundle.dgd,
            "workflow": bundle.workflow,
            "templates": bundle.templates,
            "scaled_objects": bundle.scaled_objects,
        },
    )  # only a bundle that passed validation
    return bundle


def _render(
    r: ResolvedRecipe,
    settings: ClusterSettings,
    *,
    dgd_api: str,
    namespace: str | None,
    overrides: dict[str, str] | None,
    workflow_name: str | None,
) -> Bundle:
    from infersweep.platform.keda import scaled_objects  # the deploy step's own builder
    from workflows.pipeline import recipe_run, recipe_workflow

    dgd, args = recipe_run(r, settings, dgd_api=dgd_api, overrides=overrides)
    wf = recipe_workflow(r, args, namespace or settings.namespace, settings).to_dict()
    if workflow_name:
        wf["metadata"].pop("generateName", None)
        wf["metadata"]["name"] = workflow_name
    bundle = Bundle(
        dgd=dgd,  # the dict the Workflow's `dgd` argument was serialised from: no YAML round trip
        workflow=wf,
        templates=library_templates(settings, r.recipe.engine, r.recipe.topology.mode),
    )
    bundle.scaled_objects = scaled_objects(bundle.dgd, namespace or settings.namespace)
    for doc in bundle.documents():
        # A document the cluster would refuse (or silently prune) never leaves here.
        try:
            text = json.dumps(doc, sort_keys=True)
        except TypeError:  # a value JSON cannot hold (a YAML date, say): validate it as it is
            validate_document(doc)
        else:
            _validate_json(text, str(reference_dir()))
    return bundle
