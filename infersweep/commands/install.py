"""`infersweep install [--dry-run]`: every WorkflowTemplate and CronWorkflow, created or updated through
the Argo Server; the ConfigMaps and RBAC they need are printed for kubectl (the Argo Server creates Argo
objects only).

Idempotent: a second install updates each object in place (with the server's resourceVersion), never
duplicates it. `--dry-run` prints the whole set as one validated YAML stream and touches nothing.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infersweep.cluster_settings import ClusterSettings

import yaml

from infersweep.argo_server import add_server_flags, server_from_args
from infersweep.paths import params_dir
from infersweep.schemas import validate_document

TOPOLOGIES = ("agg", "disagg")


def engines() -> list[str]:
    return sorted(p.stem for p in (params_dir() / "engines").glob("*.yaml"))


def experiment_templates(settings: ClusterSettings) -> list[dict[str, Any]]:
    """The WorkflowTemplate of every experiment in params/experiments/: under templateReferencing Strict an
    experiment's Workflow only references its template (workflows/experiment.py), so the operator installs it."""
    from infersweep.experiment.plan import make_plan
    from infersweep.experiment.spec import all_experiment_paths, load_experiment
    from workflows.experiment import experiment_template

    return [experiment_template(make_plan(load_experiment(p)), settings).to_dict() for p in all_experiment_paths()]


def install_set(settings: ClusterSettings) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(Argo objects for the Argo Server, manifests for kubectl), each validated."""
    from infersweep.recipe import all_recipe_paths, load_recipe
    from workflows.cluster import kubectl_manifests
    from workflows.cron import nightly_crons, reaper_cron, reaper_template
    from workflows.pipeline import pipeline_template
    from workflows.steps_library import Images, step_workflow_templates

    images = Images(steps=settings.images.steps, aiperf=settings.images.aiperf)
    argo = [wt.to_dict() for wt in step_workflow_templates(images, settings=settings)]
    argo += [pipeline_template(e, t, settings).to_dict() for e in engines() for t in TOPOLOGIES]
    argo += nightly_crons(settings, load_recipe)
    argo += [reaper_template(settings), reaper_cron(settings)]
    argo += experiment_templates(settings)
    catalog = [load_recipe(p) for p in all_recipe_paths()]
    kube = kubectl_manifests(settings, catalog)
    for doc in argo + kube:
        validate_document(doc)
    return argo, kube


def _stream(docs: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(docs, sort_keys=False, width=120)


def run(a: argparse.Namespace) -> int:
    from infersweep.cluster_settings import load_cluster_settings

    argo, kube = install_set(load_cluster_settings())
    if a.dry_run:
        docs = {"argo": argo, "kubectl": kube, "all": argo + kube}[a.only]
        sys.stdout.write(_stream(docs))
        print(f"# {len(docs)} documents, all valid (Argo v4.1.2 + v3.7.18 schemas, Kubernetes checks)", file=sys.stderr)
        return 0
    server = server_from_args(a)  # bad settings fail here, before any request
    ns = server.cfg.namespace
    for doc in argo:
        verb, rv = server.apply(doc)
        print(f"{verb:8} {doc['kind']}/{doc['metadata']['name']} (resourceVersion {rv})")
    kinds = ", ".join(f"{d['kind']}/{d['metadata']['name']}" for d in kube)
    print(f"\nThe Argo Server does not create these; apply them once with kubectl (namespace {ns}):\n  {kinds}\n"
          f"  infersweep install --dry-run --only kubectl | kubectl apply -n {ns} -f -")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("install", help="create or update every WorkflowTemplate and CronWorkflow (Argo Server)")
    p.add_argument("--dry-run", action="store_true", help="print the YAML set (validated) and touch nothing")
    p.add_argument("--only", choices=["all", "argo", "kubectl"], default="all", help="with --dry-run: which documents")
    add_server_flags(p)
    p.set_defaults(fn=run)
