"""`infersweep preflight [--s3-endpoint URL] [--prometheus-url URL]`: the cluster checked before any GPU is held
(infersweep/preflight.py); exit 1 with one line per problem, 0 with a one-line summary."""

from __future__ import annotations

import argparse
import sys

from infersweep.recipe import RecipeError


def run(a: argparse.Namespace) -> int:
    from infersweep.argo_kube import KubeArgo, kubeconfig_path
    from infersweep.cluster_settings import load_cluster_settings
    from infersweep.preflight import Reach, preflight
    from workflows.install_set import install_set

    settings = load_cluster_settings()
    kube_file = a.kubeconfig or kubeconfig_path()
    if kube_file is None:
        raise RecipeError("preflight reads the cluster through a kubeconfig: set KUBECONFIG or create ~/.kube/config")
    kube = KubeArgo(kube_file, a.namespace or settings.namespace)
    skipped: list[str] = []
    problems = preflight(
        kube,
        settings,
        Reach(s3_endpoint_url=a.s3_endpoint, prometheus_url=a.prometheus_url),
        install=install_set(settings),
        recipes=a.recipe,
        skipped=skipped,
        all_recipes=a.all_recipes,
    )
    for line in skipped:  # what was not checked, and why: not a problem, but not a pass either
        print(f"preflight: {line}")
    for line in problems:
        print(f"preflight: {line}", file=sys.stderr)
    if problems:
        print(f"preflight: {len(problems)} problem(s); fix them before submitting (no GPU was held)", file=sys.stderr)
        return 1
    prom = (
        f"Prometheus answering and scraping {', '.join(settings.pod_monitors.names)}"
        if a.prometheus_url or settings.prometheus_url
        else "no Prometheus (prometheus_url empty: runs record no server metrics)"
    )
    print(
        f"preflight: ok: Secrets, install set at this checkout's version, S3 writable, {prom}, GPU pools "
        f"(namespace {kube.namespace})"
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check Secrets, installed templates, S3 and Prometheus before a run")
    p.add_argument("-n", "--namespace", help="namespace (default: params/cluster.yaml)")
    p.add_argument("--kubeconfig", help="kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
    p.add_argument(
        "--s3-endpoint",
        metavar="URL",
        help="reach S3 here instead of s3.endpoint "
        "(e.g. http://localhost:9000 after kubectl port-forward svc/minio 9000)",
    )
    p.add_argument(
        "--prometheus-url",
        metavar="URL",
        help="reach Prometheus here instead of prometheus_url "
        "(e.g. http://localhost:9090 after kubectl port-forward svc/prometheus-operated 9090)",
    )
    p.add_argument(
        "--recipe",
        action="append",
        metavar="RECIPE",
        help="check the GPU pool of this recipe (repeatable; default: every catalogue recipe whose GPU type this "
        "cluster has and that has no transport of its own; the others are listed as skipped)",
    )
    p.add_argument(
        "--all-recipes",
        action="store_true",
        help="check the GPU pool of every catalogue recipe, those with their own transport or a GPU type no node "
        "has included",
    )
    p.set_defaults(fn=run)
