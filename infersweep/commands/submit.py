"""`infersweep submit RECIPE [--set k=v ...] [--watch]`: a Workflow that references the recipe's pipeline
template (so the UI can resubmit and retry it), created through the Argo Server; prints the UI link."""

from __future__ import annotations

import argparse

from infersweep.argo_client import server_from_args
from infersweep.argo_server import add_server_flags
from infersweep.cli_util import add_dgd_api_arg, add_no_cache_arg, add_set_arg, parse_sets
from infersweep.commands.watch import watch  # noqa: F401 (re-exported: `submit --watch` prints through it)
from infersweep.install_version import check_installed


def run(a: argparse.Namespace) -> int:
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.recipe import load_recipe
    from workflows.gpu_guard import check_fits_pool, submit_priority
    from workflows.render import render_recipe

    sets = parse_sets(a.set)
    settings = load_cluster_settings()
    r = load_recipe(a.recipe, overrides=sets.recipe)
    server = server_from_args(a)
    # Everything that can be refused is refused here, before the first request.
    check_fits_pool(r, settings)
    # The install's apiVersion, read from its templates (the reaper's --api-version): a v1alpha1 cluster's runs
    # get the v1alpha1 release's DGD and images without repeating --dgd-api, and a contradicting one is refused.
    from infersweep.install_version import MANAGED_SELECTOR
    from workflows.install_set import installed_dgd_api, submit_dgd_api

    dgd_api = submit_dgd_api(a.dgd_api, installed_dgd_api(server.list_templates(MANAGED_SELECTOR)))
    bundle = render_recipe(
        r, settings, dgd_api=dgd_api, namespace=server.cfg.namespace, overrides=sets.params, cache=not a.no_cache
    )
    check_installed(server, bundle.templates)
    # A distinct priority per run: the GPU guard's queues then order runs one way on every lock (no deadlock
    # between runs created in the same second: workflows/gpu_guard.py, "the queue order").
    doc = {**bundle.workflow, "spec": {**bundle.workflow["spec"], "priority": submit_priority()}}
    wf = server.create_workflow(doc)
    name = wf["metadata"]["name"]
    print(
        f"submitted {server.cfg.namespace}/{name} ({r.name} on pipeline {bundle.workflow['spec']['workflowTemplateRef']['name']})"
    )
    print(server.ui_link(name))
    if not a.watch:
        return 0
    return 0 if watch(server, name, a.poll_s) == "Succeeded" else 1


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("submit", help="run a recipe on the cluster (through the Argo Server)")
    p.add_argument("recipe", help="recipe name or file")
    add_set_arg(p)
    add_dgd_api_arg(p, None, "DGD apiVersion (default: the install's, `infersweep install --dgd-api`)")
    p.add_argument("--watch", action="store_true", help="follow the run until it ends (exit 1 unless it succeeded)")
    p.add_argument("--poll-s", type=float, default=5.0, help=argparse.SUPPRESS)
    add_server_flags(p)
    add_no_cache_arg(p)
    p.set_defaults(fn=run)
