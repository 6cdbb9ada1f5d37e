"""ensure-pvc waits for the model-cache PVC to be Bound and says clearly why when it will not bind.

Against tests/support/k8s_standin.py through the real `kubernetes` client: a created PVC that binds passes; one
whose provisioner fails (a `ProvisioningFailed` event, what the external-provisioner records) fails at
once naming the PVC and the provisioner's message; one that stays Pending with no event fails at the
bound timeout; a storage class that binds on first use (`WaitForFirstConsumer` event) passes, since
the model-cache pod is that consumer.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow  # real servers or subprocesses, seconds each: outside the inner loop


def _event(name: str, reason: str, message: str) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{name}.{reason}", "namespace": "bench"},
        "involvedObject": {"kind": "PersistentVolumeClaim", "name": name, "namespace": "bench"},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "lastTimestamp": "2026-11-30T12:00:00Z",
    }


def _ensure(env: dict, name: str, timeout_s: str = "4") -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "steps.ensure_pvc",
            "--name",
            name,
            "--namespace",
            "bench",
            "--size",
            "10Gi",
            "--bound-timeout-s",
            timeout_s,
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pvc_bound_pending_and_provisioning_failed(tmp_path):
    from tests.support.k8s_standin import K8sStandin

    with K8sStandin() as api:
        env = dict(os.environ, KUBECONFIG=str(api.kubeconfig(tmp_path)), PYTHONPATH=str(REPO))
        env.pop("KUBERNETES_SERVICE_HOST", None)
        p = _ensure(env, "cache-ok")
        assert p.returncode == 0 and "created, Bound" in p.stdout, p.stderr

        api.pvc_phase_on_create = None  # stays Pending
        api.objects[("", "v1", "bench", "events", "e1")] = _event(
            "cache-bad", "ProvisioningFailed", 'storageclass.storage.k8s.io "fast-rwx" not found'
        )
        p = _ensure(env, "cache-bad", timeout_s="60")
        assert p.returncode == 1
        assert "PVC bench/cache-bad cannot be provisioned" in p.stderr and "fast-rwx" in p.stderr

        api.objects[("", "v1", "bench", "events", "e1")] = _event(
            "cache-wffc", "WaitForFirstConsumer", "waiting for first consumer to be created before binding"
        )
        p = _ensure(env, "cache-wffc")
        assert p.returncode == 0 and "first consumer" in p.stdout, p.stderr

        api.objects.pop(("", "v1", "bench", "events", "e1"))
        p = _ensure(env, "cache-stuck", timeout_s="3")
        assert p.returncode == 1 and "still Pending after 3 s" in p.stderr and "storage class" in p.stderr
