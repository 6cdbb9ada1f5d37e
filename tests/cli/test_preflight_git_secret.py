"""`infersweep preflight` and the optional Secret of the launcher's recipes from Git (cluster setting
git_credentials_secret): checked only when the setting names one, and then it must hold one of its key pairs.
Against the Kubernetes API stand-in (tests/support/k8s_standin.py) through the real `kubernetes` client."""

from __future__ import annotations

import base64

import pytest

from infersweep.argo_kube import KubeArgo
from infersweep.cluster_settings import load_cluster_settings
from infersweep.preflight import check_secrets
from tests.support.k8s_standin import K8sStandin

NAME = "team-git"


@pytest.fixture
def kube(tmp_path):
    settings = load_cluster_settings()
    with K8sStandin() as api:
        kube = KubeArgo(str(api.kubeconfig(tmp_path)), settings.namespace)
        for name, data in (
            (settings.hf_token_secret, {"HF_TOKEN": "hf_test"}),
            (settings.s3.credentials_secret, {"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}),
        ):
            _put(api, settings.namespace, name, data)
        yield api, kube, settings


def _put(api, ns, name, data, type_="Opaque"):
    api.objects[("", "v1", ns, "secrets", name)] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": type_,
        "metadata": {"name": name},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()},
    }


def test_the_git_secret_is_checked_only_when_the_setting_names_one(kube):
    api, k, settings = kube
    assert check_secrets(k, settings)[0] == []
    with_git = settings.changed(git_credentials_secret=NAME)
    lines = check_secrets(k, with_git)[0]
    assert lines == [
        f"Secret infersweep/{NAME} (git_credentials_secret, recipes from Git): missing; create it: kubectl -n "
        f"infersweep create secret generic {NAME} --type=kubernetes.io/basic-auth --from-literal=username=... "
        "--from-literal=password=<token> (ssh: docs/ui.md)"
    ]
    _put(api, settings.namespace, NAME, {"username": "ci-bot"}, "kubernetes.io/basic-auth")
    (line,) = check_secrets(k, with_git)[0]
    assert "needs keys username and password, or ssh-privatekey and known_hosts; has username" in line
    _put(api, settings.namespace, NAME, {"ssh-privatekey": "k", "known_hosts": "h"}, "kubernetes.io/ssh-auth")
    assert check_secrets(k, with_git)[0] == []
