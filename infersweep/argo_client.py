"""Which way the laptop commands reach Argo, chosen as the `argo` CLI chooses: the Argo Server when one is
configured (--argo-server, ARGO_SERVER, ~/.config/infersweep/config.yaml: infersweep/argo_server.py), else the
Kubernetes API through the kubeconfig (infersweep/argo_kube.py; argo-workflows pkg/apiclient/apiclient.go
NewClientFromOptsWithContext takes the kube client when ArgoServerOpts.URL is empty), else one line naming both.
"""

from __future__ import annotations

import os
from typing import Mapping

from infersweep.argo_kube import KubeArgo, kubeconfig_path
from infersweep.argo_server import ArgoConfigError, ArgoServer, load_config, token_from_args


def client_for(
    *,
    host: str | None,
    token: str | None,
    namespace: str | None,
    insecure_skip_verify: bool | None,
    default_namespace: str,
    env: Mapping[str, str] | None = None,
):
    """The Argo Server when one is configured (flag, ARGO_SERVER, the config file), else the kubeconfig, as `argo`
    chooses; one line naming both ways when neither is there."""
    env = os.environ if env is None else env
    try:
        return ArgoServer(
            load_config(
                host=host,
                token=token,
                namespace=namespace,
                insecure_skip_verify=insecure_skip_verify,
                env=env,
                default_namespace=default_namespace,
            )
        )
    except ArgoConfigError as e:
        if "no Argo Server" not in str(e):
            raise
    kube = kubeconfig_path(env)
    if kube is None:
        raise ArgoConfigError(
            "no Argo Server and no kubeconfig: pass --argo-server HOST:PORT with --token-file (or set ARGO_SERVER and "
            "ARGO_TOKEN, as for `argo`), or point KUBECONFIG at a kubeconfig for the cluster (~/.kube/config is "
            "used when it exists); see docs/cluster.md, step 6"
        )
    # The namespace as in Argo Server mode (flag, ARGO_NAMESPACE, params/cluster.yaml), not the kubeconfig
    # context's: the templates are installed in the settings' namespace, whichever way they were created.
    ns = namespace or env.get("ARGO_NAMESPACE") or default_namespace
    return KubeArgo(kube, ns)


def server_from_args(a):
    from infersweep.cluster_settings import load_cluster_settings

    return client_for(
        host=a.argo_server,
        token=token_from_args(a),
        namespace=a.namespace,
        insecure_skip_verify=a.insecure_skip_verify,
        default_namespace=load_cluster_settings().namespace,
    )
