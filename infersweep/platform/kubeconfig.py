"""Where the Kubernetes client finds its cluster, for the Kubernetes adapter and the reaper alike."""

from __future__ import annotations


def load_cluster_config() -> None:
    """The pod's ServiceAccount in a cluster, else the user's kubeconfig (a step run by hand)."""
    from kubernetes import config

    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
